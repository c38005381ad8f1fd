//! "Acknowledged means stored" when storage fails under a resumable sender
//! (spec §3.6): the SQLite data directory is a small tmpfs, filled up and
//! freed again, or remounted read-only and back. Every acknowledged row is
//! stored exactly once, acknowledgements stop while nothing can be stored
//! and move again once it can — on the same connection, without the sender
//! reconnecting — and a sender that reconnects meanwhile resumes exactly.
//! Needs root (tmpfs mounts).

mod common;
#[path = "disk_full/harness.rs"]
mod harness;

use harness::{count, seqs, stored_offset, tuples, wait_for, Connection, Tmpfs};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use server::metrics::Metrics;

const FAILED: &str = "storage failed";
const BACK: &str = "storage works again";

/// Runs `test` (off the runtime) against a server whose data directory
/// is a fresh 20 MB tmpfs, with the server's metrics; as root only.
async fn on_tmpfs(test: impl FnOnce(SocketAddr, &Tmpfs, &Metrics) + Send + 'static) {
    if !testkit::have_root("mounts a tmpfs") {
        return;
    }
    harness::log();
    let fs = Tmpfs::mount("20m");
    let dir = fs.path().to_owned();
    let t = common::start_with(|c| c.data_dir = dir).await;
    let (addr, metrics) = (t.addr, Arc::clone(t.server.metrics()));
    let fs = tokio::task::spawn_blocking(move || {
        test(addr, &fs, &metrics);
        fs
    })
    .await
    .unwrap();
    t.server.shutdown().await;
    drop(fs);
}

/// Session `session` of `domain` holds tuples `0..n`, each once, and its
/// stored offset is `end`.
fn assert_stored_once(dir: &Path, domain: &str, session: &str, n: i64, end: u64) {
    assert_eq!(
        seqs(dir, domain),
        (0..n).collect::<Vec<_>>(),
        "each row once"
    );
    assert_eq!(stored_offset(dir, domain, session), end);
}

/// Session `session` of `domain` stores tuples `0..n` and has them acknowledged.
fn prime(addr: SocketAddr, domain: &str, session: &str, n: i64) -> Vec<u8> {
    let mut c = Connection::open(addr, domain, session, 0).expect("resume line");
    assert_eq!(c.resume, 0);
    let first = tuples(0, n);
    c.send(first.clone());
    c.wait_acked(first.len() as u64);
    first
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_holds_acks_until_space_returns_without_a_reconnect() {
    on_tmpfs(|addr, fs, _| {
        let dir = fs.path().to_owned();
        const D: &str = "full1";
        const N: i64 = 20_000;
        let all = tuples(0, N);
        let end = all.len() as u64;
        let first = prime(addr, D, "s1", 500).len();
        // The database stays open while a client is connected (opening it
        // on a full disk fails, and the client is refused).
        let mut c = Connection::open(addr, D, "s1", first as u64).expect("resume line");
        assert_eq!(c.resume, first as u64);

        // About 4 MB more than the disk has room for.
        let filler = fs.fill();
        c.send(all[first..].to_vec());
        wait_for("the storage failure", || count(D, " ERROR ") > 0);
        // Nothing past what is stored was acknowledged, and not all of it.
        let acked = c.acked();
        assert!(acked < end, "acked {acked} of {end} with the disk full");
        assert!(stored_offset(&dir, D, "s1") >= acked);

        std::fs::remove_file(filler).unwrap();
        c.wait_acked(end);
        assert!(count(D, FAILED) > 0);
        wait_for("the end of the outage", || count(D, BACK) > 0);
        assert_eq!(count(D, FAILED), count(D, BACK), "one line each per outage");
        assert_stored_once(&dir, D, "s1", N, end);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_reconnecting_while_the_disk_is_full_resumes_exactly() {
    on_tmpfs(|addr, fs, metrics| {
        let dir = fs.path().to_owned();
        const D: &str = "full2";
        const N: i64 = 20_000;
        let all = tuples(0, N);
        let end = all.len() as u64;
        let first = prime(addr, D, "s2", 500);

        let mut c = Connection::open(addr, D, "s2", first.len() as u64).expect("resume line");
        let filler = fs.fill();
        c.send(all[first.len()..].to_vec());
        wait_for("the storage failure", || count(D, " ERROR ") > 0);
        let acked = c.acked();
        assert!(acked < end);
        // The path breaks; the sender reconnects while the disk is still
        // full, and keeps trying until the server answers.
        c.cut();
        let again = std::thread::spawn(move || Connection::open_retrying(addr, D, "s2", acked));
        // The old connection is still held (its rows wait for the writer).
        wait_for("the reconnection", || metrics.open() >= 2);
        std::fs::remove_file(filler).unwrap();
        let mut c = again.join().unwrap();
        let resume = c.resume as usize;
        assert!(resume as u64 >= acked, "resume {resume} below ack {acked}");
        assert_eq!(all[resume - 1], b'\n', "resume {resume} inside a tuple");
        c.send(all[resume..].to_vec());
        c.wait_acked(end);
        assert_stored_once(&dir, D, "s2", N, end);
    })
    .await;
}

/// Linux refuses `mount -o remount,ro` while a file on it is open for
/// writing (EBUSY), so a file system cannot turn read-only under an open
/// database this way: it is remounted read-only once the server closed the
/// domain (its last client left), and the sender comes back meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_file_system_holds_the_sender_until_it_is_writable_again() {
    on_tmpfs(|addr, fs, _| {
        let dir = fs.path().to_owned();
        const D: &str = "readonly";
        let all = tuples(0, 5_000);
        let end = all.len() as u64;
        let first = prime(addr, D, "s3", 500).len() as u64;
        wait_for("the database to close (remount allowed)", || {
            fs.remount("ro")
        });
        let again = std::thread::spawn(move || Connection::open_retrying(addr, D, "s3", first));
        wait_for("a refused attempt", || count(D, " ERROR ") > 0);
        assert!(!again.is_finished(), "answered on a read-only file system");
        assert!(fs.remount("rw"));
        let mut c = again.join().unwrap();
        assert_eq!(c.resume, first);
        c.send(all[first as usize..].to_vec());
        c.wait_acked(end);
        assert_stored_once(&dir, D, "s3", 5_000, end);
    })
    .await;
}

/// The store on its own: a transaction lost to a full disk leaves nothing
/// behind — no rows, no table, no sender, on disk or in the store's memory —
/// and the same work done again gets the same ids.
#[test]
fn a_lost_transaction_leaves_nothing_behind_and_redone_gets_the_same_ids() {
    use omsp::{Schema, Value};
    use store::{Row, SqliteOptions, SqliteStore, StoreError, TableId};
    if !testkit::have_root("mounts a tmpfs") {
        return;
    }
    let fs = Tmpfs::mount("20m");
    let mut db = SqliteStore::open(fs.path(), "st", SqliteOptions::default()).unwrap();
    db.ensure_start_time(1_700_000_000).unwrap();
    assert_eq!(db.sender_id("a").unwrap(), 1);
    db.register_schema(&Schema::parse("1 a x:string").unwrap())
        .unwrap();
    db.commit().unwrap();
    let pad = "y".repeat(500);
    let work = |db: &mut SqliteStore| -> Result<(i64, TableId), StoreError> {
        let sender = db.sender_id("b")?;
        let table = db.register_schema(&Schema::parse("2 b x:string").unwrap())?;
        let rows: Vec<Row> = (0..20_000)
            .map(|i| Row {
                table,
                sender,
                seq: i,
                ts_client: 0.0,
                ts_server: 0.0,
                values: vec![Value::String(format!("{pad} {i}"))],
            })
            .collect();
        for chunk in rows.chunks(1000) {
            db.insert_batch(chunk, &mut |_, e| panic!("row refused: {e}"))?;
        }
        db.commit()?;
        Ok((sender, table))
    };

    let filler = fs.fill();
    let err = work(&mut db).expect_err("10 MB on a full disk");
    assert!(err.is_unavailable(), "{err}");
    assert!(db.find_table("b").is_none(), "the lost table is forgotten");
    let reader = common::open_db(fs.path(), "st");
    let count = |sql: &str| reader.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
    assert_eq!(count("SELECT count(*) FROM _senders"), 1);
    assert_eq!(
        count("SELECT count(*) FROM sqlite_master WHERE name = 'b'"),
        0
    );

    std::fs::remove_file(filler).unwrap();
    let (sender, table) = work(&mut db).unwrap();
    assert_eq!((sender, Some(table)), (2, db.find_table("b")));
    assert_eq!(count("SELECT count(*) FROM b"), 20_000);
    assert_eq!(count("SELECT count(DISTINCT oml_seq) FROM b"), 20_000);
    db.close().unwrap();
}
