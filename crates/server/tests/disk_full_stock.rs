//! A full disk under a stock sender: the reference liboml2 (from
//! `testkit::oml_reference()`) streams into a server whose SQLite data
//! directory is a small tmpfs, filled up while the rows arrive and freed
//! again. A stock client has no acknowledgements: TCP accepting its bytes
//! is all it learns, and it may drop rows of its own when its buffer
//! fills while the server holds it. So the property is what the server
//! can promise (docs/storage.md, "Senders without acknowledgements"): no
//! row stored twice, every stored row intact, the rows it had stored
//! before the outage kept, the server running on, and every row it
//! received after the space returned stored. Needs root (tmpfs mounts)
//! and the reference suite.

mod common;
#[path = "disk_full/harness.rs"]
mod harness;

use std::path::Path;
use std::time::{Duration, Instant};

use harness::{assert_flood_rows, count, flood, wait_for, Flood, Tmpfs};

const D: &str = "fullstock";
const N: i64 = 20_000;

/// `(i, s)` of every stored row, in storage order.
fn rows(dir: &Path) -> Vec<(i64, String)> {
    if !dir.join(format!("{D}.sq3")).exists() {
        return Vec::new();
    }
    let db = common::open_db(dir, D);
    let Ok(mut st) = db.prepare("SELECT i, s FROM flood_flood ORDER BY oml_tuple_id") else {
        return Vec::new();
    };
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stock_sender_on_a_full_disk_gets_no_row_twice_and_no_row_damaged() {
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
    let fs = Tmpfs::mount("20m");
    let dir = fs.path().to_owned();
    let t = common::start_with(|c| c.data_dir = dir).await;
    let uri = format!("tcp:{}", t.addr);
    let fs = tokio::task::spawn_blocking(move || {
        let dir = fs.path().to_owned();
        let mut client = Flood::start(&exe, prefix, work.path(), N, &uri, D);
        // The database is open once rows arrive (liboml2 sends its first
        // 5 000 in chunks of its own choosing: not necessarily all by now).
        wait_for("the first rows", || !rows(&dir).is_empty());
        let before = rows(&dir);

        // About 4 MB more than the disk has room for.
        let filler = fs.fill();
        client.go();
        wait_for("the storage failure", || count(D, " ERROR ") > 0);

        std::fs::remove_file(filler).unwrap();
        wait_for("the stock client to finish", || client.finished());
        wait_for("the database to close", || count(D, "database closed") > 0);
        let stored = rows(&dir);
        assert_flood_rows(&before, &stored);
        assert!(count(D, "storage works again") > 0);
        eprintln!(
            "the stock client's rows stored: {} of {N} ({:.1} s)",
            stored.len(),
            began.elapsed().as_secs_f64()
        );
        fs
    })
    .await
    .unwrap();
    t.server.shutdown().await;
    drop(fs);
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "{:?}",
        began.elapsed()
    );
}
