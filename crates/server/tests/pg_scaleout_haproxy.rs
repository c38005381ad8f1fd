//! The documented deployment (docs/scale-out.md), run: HAProxy (Debian
//! `haproxy`, TCP mode) in front of two collection servers writing into one
//! PostgreSQL. Clients connect to HAProxy only; every row is stored once,
//! both servers take clients, and a server stopped in the middle of the run
//! leaves its later clients to the other.

mod common;
#[path = "pg_scaleout/util.rs"]
mod util;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use pgtemp::{shared, unique_domain};
use server::metrics::CloseReason;
use util::{at_once, haproxy, join, one_to, seqs, server, Client, Haproxy};

const ROWS: u64 = 5_000;

fn clients(addr: SocketAddr, domain: &str, prefix: &str, n: usize) -> Vec<Client> {
    (0..n)
        .map(|i| Client {
            addr,
            domain: domain.to_owned(),
            sender: format!("{prefix}{i}"),
            schema: "1 app_m x:int32 y:double".into(),
            rows: ROWS,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_behind_haproxy_store_every_row_once() {
    let Some(bin) = haproxy() else { return };
    let port = shared().port;
    let (a, addr_a, _da) = server(port).await;
    let (b, addr_b, _db) = server(port).await;
    let lb = Haproxy::start(&bin, &[addr_a, addr_b]);
    let domain = unique_domain("haproxy");

    join(at_once(clients(lb.proc.addr, &domain, "first", 8))).await;
    let served = |s: &server::Server| s.metrics().closed_count(CloseReason::Closed);
    assert_eq!(
        (served(&a), served(&b)),
        (4, 4),
        "round robin over both servers"
    );

    // Server b goes away; HAProxy (without health checks here) sends half
    // of the next clients to it and they fail to connect: liboml2 would
    // retry, so the test retries them the same way until all are stored.
    b.shutdown().await;
    let second = clients(lb.proc.addr, &domain, "second", 4);
    let d = domain.clone();
    tokio::task::spawn_blocking(move || {
        for c in second {
            let deadline = Instant::now() + Duration::from_secs(60);
            let name = c.sender.clone();
            'attempt: loop {
                assert!(Instant::now() < deadline, "{name} never stored");
                // A connection HAProxy cannot forward is closed or reset.
                let _ = util::try_send(c.addr, &c.bytes());
                // Handed over; committed within a second if a server took it.
                let settle = Instant::now() + Duration::from_secs(3);
                let mut n = 0;
                while Instant::now() < settle {
                    n = seqs(port, &d, "app_m").get(&name).map_or(0, Vec::len);
                    if n == ROWS as usize {
                        break 'attempt;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                assert_eq!(
                    n, 0,
                    "{name}: a connection HAProxy could not forward stores nothing"
                );
            }
        }
    })
    .await
    .unwrap();
    drop(lb);
    a.shutdown().await;

    let got = seqs(port, &domain, "app_m");
    let want: BTreeMap<String, Vec<i64>> = (0..8)
        .map(|i| format!("first{i}"))
        .chain((0..4).map(|i| format!("second{i}")))
        .map(|n| (n, one_to(ROWS)))
        .collect();
    assert_eq!(got, want);
}
