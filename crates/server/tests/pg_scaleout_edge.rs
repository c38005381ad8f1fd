//! The whole documented deployment (docs/scale-out.md), run: stock clients
//! → two `streamgauge proxy` edge proxies (journals, resumable sessions
//! upstream) → HAProxy (TCP mode) → two collection servers → one
//! PostgreSQL. One server is stopped while the clients are still
//! streaming; its sessions resume through HAProxy on the other from the
//! offset stored with their rows, so every row is stored exactly once.

mod common;
#[path = "pg_scaleout/util.rs"]
mod util;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use pgtemp::{shared, unique_domain};
use proxy::{Proxy, ProxyConfig};
use util::{haproxy, join, one_to, seqs, server, Client, Haproxy};

/// Rows per client.
const ROWS: u64 = 6_000;

/// Clients (half on each edge proxy).
const CLIENTS: usize = 8;

/// Each client sends its rows in this many pieces, one every [`PACE`]:
/// about five seconds of streaming, longer than a stopping server keeps
/// reading its connections (2 s at most), so the stop cuts the sessions it
/// serves in the middle.
const PIECES: usize = 50;
const PACE: Duration = Duration::from_millis(100);

/// An edge proxy on loopback forwarding to `upstream`, journaling in `dir`.
async fn edge(dir: &std::path::Path, upstream: SocketAddr) -> (Proxy, SocketAddr) {
    let mut c = ProxyConfig::new(dir, upstream.to_string());
    c.listen = vec!["127.0.0.1:0".parse().unwrap()];
    c.control = None;
    c.backoff = (Duration::from_millis(50), Duration::from_millis(500));
    let p = Proxy::start(c).await.unwrap();
    let addr = p.local_addrs()[0];
    (p, addr)
}

/// A stock client streaming its rows in [`PIECES`] paced pieces, then
/// closing; the proxy has journaled them when it closes in turn.
fn paced_send(c: &Client) {
    let bytes = c.bytes();
    let body = bytes
        .windows(2)
        .position(|w| w == b"\n\n")
        .expect("header end")
        + 2;
    let mut s = TcpStream::connect(c.addr).unwrap();
    s.write_all(&bytes[..body]).unwrap();
    let rows = &bytes[body..];
    let lines: Vec<usize> = rows
        .iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .map(|(i, _)| i + 1)
        .collect();
    let per = lines.len().div_ceil(PIECES);
    let mut from = 0;
    for end in lines.iter().skip(per - 1).step_by(per).chain(lines.last()) {
        if *end > from {
            s.write_all(&rows[from..*end]).unwrap();
            from = *end;
            std::thread::sleep(PACE);
        }
    }
    s.shutdown(std::net::Shutdown::Write).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let _ = s.read_to_end(&mut Vec::new());
}

/// Rows stored in `table` so far (0 before its database or it exists).
/// Blocking.
fn stored(domain: &str, table: &str) -> usize {
    let Ok(mut c) = shared().try_client(domain) else {
        return 0;
    };
    c.query_one(&format!("SELECT count(*) FROM \"{table}\""), &[])
        .map_or(0, |r| r.get::<_, i64>(0) as usize)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edge_proxies_haproxy_two_servers_one_stopped_every_row_once() {
    let Some(bin) = haproxy() else { return };
    let started = Instant::now();
    let port = shared().port;
    let (a, addr_a, _da) = server(port).await;
    let (b, addr_b, _db) = server(port).await;
    let lb = Haproxy::start(&bin, &[addr_a, addr_b]);
    let journals = tempfile::tempdir().unwrap();
    let (p1, edge1) = edge(&journals.path().join("e1"), lb.proc.addr).await;
    let (p2, edge2) = edge(&journals.path().join("e2"), lb.proc.addr).await;
    let domain = unique_domain("edge");

    let clients = util::alternating([edge1, edge2], &domain, "c", "edge_m", CLIENTS, ROWS);
    let go = Arc::new(Barrier::new(CLIENTS));
    let senders: Vec<_> = clients
        .into_iter()
        .map(|c| {
            let go = Arc::clone(&go);
            std::thread::spawn(move || {
                go.wait();
                paced_send(&c);
            })
        })
        .collect();

    // Once rows are arriving, server b stops (committing what it
    // accepted); its sessions come back through HAProxy to a.
    let total = CLIENTS * ROWS as usize;
    let d = domain.clone();
    tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(20);
        while stored(&d, "edge_m") == 0 {
            assert!(Instant::now() < deadline, "no row stored");
            std::thread::sleep(Duration::from_millis(20));
        }
    })
    .await
    .unwrap();
    b.shutdown().await;
    let d = domain.clone();
    let after_stop = tokio::task::spawn_blocking(move || stored(&d, "edge_m"))
        .await
        .unwrap();
    assert!(
        after_stop < total,
        "server b was gone while rows were still coming ({after_stop} of {total} stored)"
    );

    join(senders).await;
    let d = domain.clone();
    let got = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            let got = seqs(port, &d, "edge_m");
            let complete = got.len() == CLIENTS && got.values().all(|s| s.len() >= ROWS as usize);
            if complete || Instant::now() > deadline {
                return got;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    })
    .await
    .unwrap();
    p1.shutdown().await;
    p2.shutdown().await;
    drop(lb);
    a.shutdown().await;

    let want: BTreeMap<String, Vec<i64>> = (0..CLIENTS)
        .map(|i| (format!("c{i}"), one_to(ROWS)))
        .collect();
    assert_eq!(got, want, "every row exactly once, in order per sender");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
}
