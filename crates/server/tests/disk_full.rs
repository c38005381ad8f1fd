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

const FAILED: &str = "storage failed";
const BACK: &str = "storage works again";

/// A server whose data directory is a fresh 20 MB tmpfs.
async fn start(fs: &Tmpfs) -> common::TestServer {
    harness::log();
    let dir = fs.path().to_owned();
    common::start_with(|c| c.data_dir = dir).await
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
    if !testkit::have_root("mounts a tmpfs") {
        return;
    }
    let fs = Tmpfs::mount("20m");
    let t = start(&fs).await;
    let (addr, dir) = (t.addr, fs.path().to_owned());
    let fs = tokio::task::spawn_blocking(move || {
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
        assert_eq!(seqs(&dir, D), (0..N).collect::<Vec<_>>());
        assert_eq!(stored_offset(&dir, D, "s1"), end);
        fs
    })
    .await
    .unwrap();
    t.server.shutdown().await;
    drop(fs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_reconnecting_while_the_disk_is_full_resumes_exactly() {
    if !testkit::have_root("mounts a tmpfs") {
        return;
    }
    let fs = Tmpfs::mount("20m");
    let t = start(&fs).await;
    let (addr, dir) = (t.addr, fs.path().to_owned());
    let metrics = std::sync::Arc::clone(t.server.metrics());
    let fs = tokio::task::spawn_blocking(move || {
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
        assert_eq!(seqs(&dir, D), (0..N).collect::<Vec<_>>(), "each row once");
        assert_eq!(stored_offset(&dir, D, "s2"), end);
        fs
    })
    .await
    .unwrap();
    t.server.shutdown().await;
    drop(fs);
}

/// Linux refuses `mount -o remount,ro` while a file on it is open for
/// writing (EBUSY), so a file system cannot turn read-only under an open
/// database this way: it is remounted read-only once the server closed the
/// domain (its last client left), and the sender comes back meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_file_system_holds_the_sender_until_it_is_writable_again() {
    if !testkit::have_root("mounts a tmpfs") {
        return;
    }
    let fs = Tmpfs::mount("20m");
    let t = start(&fs).await;
    let (addr, dir) = (t.addr, fs.path().to_owned());
    let fs = tokio::task::spawn_blocking(move || {
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
        assert_eq!(seqs(&dir, D), (0..5_000).collect::<Vec<_>>());
        assert_eq!(stored_offset(&dir, D, "s3"), end);
        fs
    })
    .await
    .unwrap();
    t.server.shutdown().await;
    drop(fs);
}
