//! PostgreSQL out of disk space under a stock sender: the reference
//! liboml2 (from `testkit::oml_reference()`) streams into a server whose
//! PostgreSQL database lives in a tablespace on a small tmpfs, filled up
//! while the rows arrive and freed again. A stock client has no
//! acknowledgements and may drop rows of its own while the server holds
//! it, so the property is what the server can promise (docs/storage.md,
//! "Senders without acknowledgements"), as in `disk_full_stock.rs`: no
//! row stored twice, every stored row intact, the rows stored before the
//! outage kept, and every row received stored once the space returned.
//! Needs root (tmpfs mounts), PostgreSQL (`pgtemp`) and the reference.

mod common;
#[path = "disk_full/harness.rs"]
mod harness;

use std::time::{Duration, Instant};

use harness::{assert_flood_rows, count, count_lines, flood, wait_for, Flood, SmallTablespace};
use server::Backend;

const D: &str = "pgfullstock";
const N: i64 = 20_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stock_sender_on_a_full_tablespace_gets_no_row_twice_and_no_row_damaged() {
    if !testkit::have_root("mounts a tmpfs") {
        return;
    }
    let Some(prefix) = testkit::oml_reference() else {
        return;
    };
    let began = Instant::now();
    harness::log();
    let work = tempfile::tempdir().unwrap();
    let exe = flood(prefix, work.path());
    let small = SmallTablespace::create("20m", D);
    let opts = small.opts.clone();
    let t = common::start_with(move |c| c.backend = Backend::Postgres(opts)).await;
    let uri = format!("tcp:{}", t.addr);
    let small = tokio::task::spawn_blocking(move || {
        let rows = || {
            small.rows(
                D,
                "SELECT i, s FROM flood_flood ORDER BY oml_tuple_id",
                |r| (i64::from(r.get::<_, i32>(0)), r.get::<_, String>(1)),
            )
        };
        let mut client = Flood::start(&exe, prefix, work.path(), N, &uri, D);
        // liboml2 sends its first 5 000 rows in chunks of its own
        // choosing: not necessarily all stored by now.
        wait_for("the first rows", || !rows().is_empty());
        let before = rows();

        // About 4 MB more than the tablespace has room for.
        let filler = small.fs.fill();
        client.go();
        let failed = ["PostgreSQL cannot store data now", D];
        wait_for("the storage failure", || count_lines(&failed) > 0);

        std::fs::remove_file(filler).unwrap();
        wait_for("the stock client to finish", || client.finished());
        wait_for("the database to close", || count(D, "database closed") > 0);
        let back = ["PostgreSQL stores data again", D];
        assert_eq!(count_lines(&failed), count_lines(&back));
        let stored = rows();
        assert_flood_rows(&before, &stored);
        eprintln!(
            "the stock client's rows stored: {} of {N}, none twice ({:.1} s)",
            stored.len(),
            began.elapsed().as_secs_f64()
        );
        small
    })
    .await
    .unwrap();
    t.server.shutdown().await;
    drop(small);
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "{:?}",
        began.elapsed()
    );
}
