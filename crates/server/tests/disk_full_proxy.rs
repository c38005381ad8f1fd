//! A full disk behind our proxy: a stock (non-resumable) sender hands its
//! rows to the streamgauge proxy, which journals them on its own disk and
//! forwards them as a resumable session to a server whose SQLite data
//! directory is a small tmpfs, filled up while the rows arrive and freed
//! again. Every row the sender handed to the proxy is stored exactly
//! once: the server acknowledges only what it committed, so the proxy
//! keeps the rest in its journal and sends it again once the server can
//! store it. Needs root (tmpfs mounts).

mod common;
#[path = "disk_full/harness.rs"]
mod harness;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use harness::{count, seqs, tuples, wait_for, Tmpfs};
use proxy::{Proxy, ProxyConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_handed_to_the_proxy_are_stored_once_after_the_disk_is_freed() {
    if !testkit::have_root("mounts a tmpfs") {
        return;
    }
    let began = Instant::now();
    harness::log();
    let fs = Tmpfs::mount("20m");
    let dir = fs.path().to_owned();
    let t = common::start_with(|c| c.data_dir = dir).await;
    let journal = tempfile::tempdir().unwrap();
    let mut c = ProxyConfig::new(journal.path(), t.addr.to_string());
    c.listen = vec!["127.0.0.1:0".parse().unwrap()];
    c.control = None;
    c.backoff = (Duration::from_millis(50), Duration::from_millis(500));
    let p = Proxy::start(c).await.unwrap();
    let via = p.local_addrs()[0];

    let fs = tokio::task::spawn_blocking(move || {
        const D: &str = "fullproxy";
        const N: i64 = 20_000;
        let dir = fs.path().to_owned();
        let mut s = TcpStream::connect(via).unwrap();
        let head = common::text_header(D, "n1", 1_700_000_000, &[common::resume::SCHEMA]);
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(&tuples(0, 500)).unwrap();
        wait_for("the first rows", || {
            dir.join(format!("{D}.sq3")).exists() && seqs(&dir, D).len() == 500
        });

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
        wait_for("every row", || seqs(&dir, D).len() >= N as usize);
        assert_eq!(seqs(&dir, D), (0..N).collect::<Vec<_>>(), "each row once");
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
