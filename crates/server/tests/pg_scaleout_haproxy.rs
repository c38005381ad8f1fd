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
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use pgtemp::{shared, unique_domain};
use server::metrics::CloseReason;
use util::{at_once, join, one_to, seqs, server, Client, Listening};

const ROWS: u64 = 5_000;

/// The haproxy binary; `None` is a recorded skip (a failure under CI).
fn haproxy() -> Option<PathBuf> {
    let found = ["/usr/sbin/haproxy", "/usr/bin/haproxy"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    if found.is_none() {
        testkit::skip(
            "haproxy is not installed (Debian package haproxy; scripts/setup.sh installs it)",
        );
    }
    found
}

/// HAProxy in the foreground with the documented TCP-mode frontend,
/// round-robin over `backends` (the documented `balance source` would send
/// every loopback client to one server), stopped when dropped.
struct Haproxy {
    /// The process and its frontend address.
    proc: Listening,
    /// Holds the configuration file.
    _dir: tempfile::TempDir,
}

impl Haproxy {
    fn start(bin: &PathBuf, backends: &[SocketAddr]) -> Haproxy {
        let dir = tempfile::tempdir().unwrap();
        let port = util::free_port();
        let mut cfg = format!(
            "global\n    maxconn 1000\n\
             defaults\n    mode tcp\n    timeout connect 5s\n    timeout client 1h\n    timeout server 1h\n\
             frontend omsp\n    bind 127.0.0.1:{port}\n    default_backend collectors\n\
             backend collectors\n    balance roundrobin\n"
        );
        for (i, b) in backends.iter().enumerate() {
            cfg.push_str(&format!("    server c{i} {b}\n"));
        }
        let path = dir.path().join("haproxy.cfg");
        std::fs::write(&path, cfg).unwrap();
        let mut cmd = Command::new(bin);
        cmd.arg("-db").arg("-f").arg(&path);
        let proc = Listening::spawn(cmd, port);
        Haproxy { proc, _dir: dir }
    }
}

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
