//! A full disk behind our proxy: a stock (non-resumable) sender hands its
//! rows to the streamgauge proxy, which journals them on its own disk and
//! forwards them as a resumable session to a server whose SQLite data
//! directory is a small tmpfs, filled up while the rows arrive and freed
//! again. Every row the sender handed to the proxy is stored exactly
//! once: the server acknowledges only what it committed, so the proxy
//! keeps the rest in its journal and sends it again once the server can
//! store it. The same holds when the data directory turns read-only
//! and back. Needs root (tmpfs mounts).

mod common;
#[path = "disk_full/harness.rs"]
mod harness;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use harness::{count, proxy_to, seqs, tuples, wait_for, Tmpfs};

/// Rows of `t_m` stored in `domain` (0 before the table exists).
fn stored(dir: &std::path::Path, domain: &str) -> usize {
    if !dir.join(format!("{domain}.sq3")).exists() {
        return 0;
    }
    common::open_db(dir, domain)
        .query_row("SELECT count(*) FROM t_m", [], |r| r.get::<_, i64>(0))
        .map_or(0, |n| n as usize)
}

/// Runs `test` (off the runtime) with a proxy address in front of a
/// server whose data directory is a fresh 20 MB tmpfs; as root only.
async fn behind_proxy(test: impl FnOnce(SocketAddr, &Tmpfs) + Send + 'static) {
    if !testkit::have_root("mounts a tmpfs") {
        return;
    }
    let began = Instant::now();
    harness::log();
    let fs = Tmpfs::mount("20m");
    let dir = fs.path().to_owned();
    let t = common::start_with(|c| c.data_dir = dir).await;
    let (p, _journal) = proxy_to(t.addr).await;
    let via = p.local_addrs()[0];
    let fs = tokio::task::spawn_blocking(move || {
        test(via, &fs);
        fs
    })
    .await
    .unwrap();
    p.shutdown().await;
    t.server.shutdown().await;
    drop(fs);
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "{:?}",
        began.elapsed()
    );
}

/// A stock client of `domain` through the proxy: sends the header and
/// `rows`; with `close`, half-closes and waits until the proxy closes
/// too (it has journaled every row then).
fn stock(via: SocketAddr, domain: &str, rows: &[u8], close: bool) -> TcpStream {
    let mut s = TcpStream::connect(via).unwrap();
    let head = common::text_header(domain, "n1", 1_700_000_000, &[common::resume::SCHEMA]);
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(rows).unwrap();
    if close {
        s.shutdown(std::net::Shutdown::Write).unwrap();
        s.set_read_timeout(Some(harness::DEADLINE)).unwrap();
        let _ = s.read_to_end(&mut Vec::new());
    }
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_handed_to_the_proxy_are_stored_once_after_the_disk_is_freed() {
    behind_proxy(|via, fs| {
        const D: &str = "fullproxy";
        const N: i64 = 20_000;
        let dir = fs.path().to_owned();
        let mut s = stock(via, D, &tuples(0, 500), false);
        wait_for("the first rows", || stored(&dir, D) == 500);

        // About 4 MB more than the disk has room for.
        let filler = fs.fill();
        s.write_all(&tuples(500, N)).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        // The proxy has every row once it closes the client's connection.
        s.set_read_timeout(Some(harness::DEADLINE)).unwrap();
        let _ = s.read_to_end(&mut Vec::new());
        wait_for("the storage failure", || count(D, " ERROR ") > 0);
        assert!(
            seqs(&dir, D).len() < N as usize,
            "all stored on a full disk"
        );

        std::fs::remove_file(filler).unwrap();
        wait_for("every row", || stored(&dir, D) >= N as usize);
        assert_eq!(seqs(&dir, D), (0..N).collect::<Vec<_>>(), "each row once");
    })
    .await;
}

/// The data directory turns read-only between two clients (Linux refuses
/// the remount while the database is open for writing, see `disk_full.rs`):
/// the second client's rows wait in the proxy's journal while the server
/// cannot open the database, and are stored once it is writable again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_handed_to_the_proxy_are_stored_once_after_a_read_only_remount() {
    behind_proxy(|via, fs| {
        const D: &str = "roproxy";
        const N: i64 = 5_000;
        let dir = fs.path().to_owned();
        stock(via, D, &tuples(0, 500), true);
        wait_for("the first rows", || stored(&dir, D) == 500);
        wait_for("the database to close (remount allowed)", || {
            fs.remount("ro")
        });
        stock(via, D, &tuples(500, N), true);
        wait_for("a refused attempt", || count(D, " ERROR ") > 0);
        assert!(fs.remount("rw"));
        wait_for("every row", || stored(&dir, D) >= N as usize);
        assert_eq!(seqs(&dir, D), (0..N).collect::<Vec<_>>(), "each row once");
    })
    .await;
}
