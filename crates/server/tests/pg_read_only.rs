//! PostgreSQL that cannot store anything for a while under a resumable
//! sender: the server made read-only (`default_transaction_read_only`,
//! SQLSTATE 25006 — the same path as a full disk's 53100 or an I/O error's
//! 58030). The writer keeps its transaction, acknowledgements stop, and
//! once PostgreSQL takes writes again the same connection gets its acks:
//! every row stored exactly once, none dropped as "refused".

mod common;
#[path = "disk_full/harness.rs"]
mod harness;

use harness::{count_lines, tuples, wait_for, Connection};
use pgtemp::{unique_domain, Cluster};
use server::{Backend, PgOptions};

/// Sets `default_transaction_read_only` for the whole cluster (the
/// server's open connections take it at their next transaction).
fn read_only(cluster: &Cluster, on: bool) {
    let mut admin = postgres::Config::new()
        .host("127.0.0.1")
        .port(cluster.port)
        .user("postgres")
        .dbname("postgres")
        .options("-c default_transaction_read_only=off")
        .connect(postgres::NoTls)
        .unwrap();
    let value = if on { "on" } else { "off" };
    admin
        .batch_execute(&format!(
            "ALTER SYSTEM SET default_transaction_read_only = {value}"
        ))
        .unwrap();
    admin.batch_execute("SELECT pg_reload_conf()").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_postgresql_holds_acks_until_it_takes_writes_again() {
    let cluster = std::sync::Arc::new(Cluster::start().unwrap_or_else(|e| panic!("{e}")));
    cluster.watch_process(std::process::id()).unwrap();
    harness::log();
    let opts = PgOptions {
        host: "127.0.0.1".into(),
        port: cluster.port,
        user: "oml".into(),
        ..PgOptions::default()
    };
    let t = common::start_with(move |c| c.backend = Backend::Postgres(opts)).await;
    let addr = t.addr;
    let domain = unique_domain("readonly");
    let c2 = std::sync::Arc::clone(&cluster);
    tokio::task::spawn_blocking(move || {
        const N: i64 = 20_000;
        let all = tuples(0, N);
        let end = all.len() as u64;
        let first = tuples(0, 500).len();
        // One connection throughout: the database stays open, its tables
        // are known, so what fails is the commit's COPY.
        let mut c = Connection::open(addr, &domain, "p1", 0).expect("resume line");
        c.send_part(all[..first].to_vec());
        c.wait_acked(first as u64);
        read_only(&c2, true);
        c.send(all[first..].to_vec());
        let failed = ["PostgreSQL cannot store data now", &domain];
        wait_for("the storage failure", || count_lines(&failed) > 0);
        let acked = c.acked();
        assert!(acked < end, "acked {acked} of {end} while read-only");

        read_only(&c2, false);
        c.wait_acked(end);
        let back = ["PostgreSQL stores data again", &domain];
        wait_for("the end of the outage", || count_lines(&back) > 0);
        assert_eq!(count_lines(&failed), count_lines(&back));
        let mut db = c2.client(&domain);
        let seqs: Vec<i64> = db
            .query("SELECT oml_seq FROM t_m ORDER BY oml_tuple_id", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(seqs, (0..N).collect::<Vec<_>>(), "each row once");
    })
    .await
    .unwrap();
    t.server.shutdown().await;
}
