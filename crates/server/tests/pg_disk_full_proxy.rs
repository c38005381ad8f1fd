//! PostgreSQL out of disk space behind our proxy: a stock
//! (non-resumable) sender hands its rows to the streamgauge proxy, which
//! journals them and forwards them as a resumable session to a server
//! whose PostgreSQL database lives in a tablespace on a small tmpfs,
//! filled up while the rows arrive and freed again. The server holds the
//! acknowledgements while the commit's COPY fails (SQLSTATE 53100), so
//! the proxy keeps the rest in its journal: every row the sender handed
//! to the proxy is stored exactly once after the space returns. Needs
//! root (tmpfs mounts) and PostgreSQL (`pgtemp`).

mod common;
#[path = "disk_full/harness.rs"]
mod harness;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use harness::{count_lines, proxy_to, tuples, wait_for, SmallTablespace};
use server::Backend;

const D: &str = "pgfullproxy";
const N: i64 = 20_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_handed_to_the_proxy_are_stored_once_after_the_tablespace_is_freed() {
    if !testkit::have_root("mounts a tmpfs") {
        return;
    }
    let began = Instant::now();
    harness::log();
    let small = SmallTablespace::create("20m", D);
    let opts = small.opts.clone();
    let t = common::start_with(move |c| c.backend = Backend::Postgres(opts)).await;
    let (p, _journal) = proxy_to(t.addr).await;
    let via = p.local_addrs()[0];
    let small = tokio::task::spawn_blocking(move || {
        let seqs = || {
            small.rows(D, "SELECT oml_seq FROM t_m ORDER BY oml_tuple_id", |r| {
                r.get::<_, i64>(0)
            })
        };
        let mut s = TcpStream::connect(via).unwrap();
        let head = common::text_header(D, "n1", 1_700_000_000, &[common::resume::SCHEMA]);
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(&tuples(0, 500)).unwrap();
        wait_for("the first rows", || seqs().len() == 500);

        // About 4 MB more than the tablespace has room for.
        let filler = small.fs.fill();
        s.write_all(&tuples(500, N)).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        // The proxy has journaled every row once it closes the connection.
        s.set_read_timeout(Some(harness::DEADLINE)).unwrap();
        let _ = s.read_to_end(&mut Vec::new());
        let failed = ["PostgreSQL cannot store data now", D];
        wait_for("the storage failure", || count_lines(&failed) > 0);
        let during = seqs().len();
        assert!(during < N as usize, "all {N} stored with the disk full");

        std::fs::remove_file(filler).unwrap();
        wait_for("every row", || seqs().len() >= N as usize);
        let back = ["PostgreSQL stores data again", D];
        wait_for("the end of the outage", || count_lines(&back) > 0);
        let stored = seqs();
        let mut seen = std::collections::HashSet::new();
        let twice = stored.iter().filter(|s| !seen.insert(**s)).count();
        eprintln!(
            "rows handed to the proxy: {N}, stored while full: {during}, stored: {}, \
             stored twice: {twice} ({:.1} s)",
            stored.len(),
            began.elapsed().as_secs_f64()
        );
        assert_eq!(stored, (0..N).collect::<Vec<_>>(), "each row once");
        small
    })
    .await
    .unwrap();
    p.shutdown().await;
    t.server.shutdown().await;
    drop(small);
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "{:?}",
        began.elapsed()
    );
}
