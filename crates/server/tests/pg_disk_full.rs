//! PostgreSQL out of disk space under a resumable sender: the domain's
//! database lives in a tablespace on a small tmpfs, which is filled up
//! while rows arrive and freed again. The commit's COPY fails with
//! SQLSTATE 53100 (`could not extend file`); the writer keeps its
//! transaction, acknowledgements stop, and once there is room the same
//! connection gets its acks: every row stored exactly once. Needs root
//! (tmpfs mounts).

mod common;
#[path = "disk_full/harness.rs"]
mod harness;

use std::time::{Duration, Instant};

use harness::{count_lines, tuples, wait_for, Connection, SmallTablespace};
use server::Backend;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_tablespace_holds_acks_until_space_returns() {
    if !testkit::have_root("mounts a tmpfs") {
        return;
    }
    let began = Instant::now();
    harness::log();
    const D: &str = "pgfull";
    // The server finds the database and uses it: its tables, and the
    // rows, go to the small tablespace (the WAL does not).
    let small = SmallTablespace::create("20m", D);
    let opts = small.opts.clone();
    let t = common::start_with(move |c| c.backend = Backend::Postgres(opts)).await;
    let addr = t.addr;
    let small = tokio::task::spawn_blocking(move || {
        const N: i64 = 20_000;
        let all = tuples(0, N);
        let end = all.len() as u64;
        let first = tuples(0, 500).len();
        // One connection throughout: the tables exist before the disk
        // fills, so what fails is the commit's COPY.
        let mut c = Connection::open(addr, D, "p1", 0).expect("resume line");
        c.send_part(all[..first].to_vec());
        c.wait_acked(first as u64);
        let filler = small.fs.fill();
        c.send(all[first..].to_vec());
        let failed = ["PostgreSQL cannot store data now", D];
        wait_for("the storage failure", || count_lines(&failed) > 0);
        let acked = c.acked();
        assert!(acked < end, "acked {acked} of {end} with the disk full");

        std::fs::remove_file(filler).unwrap();
        c.wait_acked(end);
        let back = ["PostgreSQL stores data again", D];
        wait_for("the end of the outage", || count_lines(&back) > 0);
        assert_eq!(count_lines(&failed), count_lines(&back));
        let seqs: Vec<i64> = small
            .cluster
            .client(D)
            .query("SELECT oml_seq FROM t_m ORDER BY oml_tuple_id", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(seqs, (0..N).collect::<Vec<_>>(), "each row once");
        small
    })
    .await
    .unwrap();
    t.server.shutdown().await;
    // The cluster goes first (SmallTablespace's drop order): the
    // tablespace's files are on the tmpfs.
    drop(small);
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "{:?}",
        began.elapsed()
    );
}
