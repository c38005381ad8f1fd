//! PostgreSQL stopped and restarted under two collection servers while
//! stock-like clients stream: `pg_ctl stop -m fast` (sessions
//! ended by the server) and `-m immediate` (a crash, recovered at start).
//! The servers hold their clients (TCP backpressure), reconnect and redo
//! the interrupted transaction: every row is stored exactly once.

mod common;
#[path = "pg_scaleout/util.rs"]
mod util;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use pgtemp::{unique_domain, Cluster};
use util::{join, one_to, seqs, server};

const ROWS: u64 = 40_000;

/// Total rows of `app_m` in `domain`, or -1 while PostgreSQL is away.
fn try_count(port: u16, domain: &str) -> i64 {
    postgres::Config::new()
        .host("127.0.0.1")
        .port(port)
        .user("oml")
        .dbname(domain)
        .connect(postgres::NoTls)
        .and_then(|mut c| c.query_one("SELECT count(*) FROM app_m", &[]))
        .map(|r| r.get(0))
        .unwrap_or(-1)
}

/// Waits until `app_m` holds at least `n` rows.
fn wait_rows(port: u16, domain: &str, n: i64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while try_count(port, domain) < n {
        assert!(Instant::now() < deadline, "never reached {n} rows");
        std::thread::sleep(Duration::from_millis(50));
    }
}

async fn outage(mode: &'static str) {
    let cluster = std::sync::Arc::new(Cluster::start().unwrap_or_else(|e| panic!("{e}")));
    cluster.watch_process(std::process::id()).unwrap();
    let port = cluster.port;
    let (a, addr_a, _da) = server(port).await;
    let (b, addr_b, _db) = server(port).await;
    let domain = unique_domain(&format!("outage_{mode}"));
    let clients = util::alternating([addr_a, addr_b], &domain, "s", "app_m", 4, ROWS);
    let threads = util::at_once(clients);
    let (c, d) = (std::sync::Arc::clone(&cluster), domain.clone());
    tokio::task::spawn_blocking(move || {
        // Twice: in the middle of the stream, PostgreSQL goes away for 3 s.
        for at in [ROWS as i64, 2 * ROWS as i64] {
            wait_rows(port, &d, at);
            c.stop(mode).unwrap_or_else(|e| panic!("{e}"));
            std::thread::sleep(Duration::from_secs(3));
            c.restart().unwrap_or_else(|e| panic!("{e}"));
        }
    })
    .await
    .unwrap();
    join(threads).await;
    a.shutdown().await;
    b.shutdown().await;

    let got = seqs(port, &domain, "app_m");
    let want: BTreeMap<String, Vec<i64>> =
        (0..4).map(|i| (format!("s{i}"), one_to(ROWS))).collect();
    assert_eq!(got.len(), 4, "senders: {:?}", got.keys());
    for (name, s) in &got {
        assert_eq!(s.len(), ROWS as usize, "{name}: rows stored");
        assert_eq!(s, &want[name], "{name}: each seq once, in order");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_shutdown_and_restart_loses_nothing() {
    outage("fast").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_and_restart_loses_nothing() {
    outage("immediate").await;
}
