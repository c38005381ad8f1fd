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

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use harness::{count, wait_for, Tmpfs};

const D: &str = "fullstock";
const N: i64 = 20_000;

/// `tests/c/flood.c` built against the reference's headers and library.
fn flood(prefix: &Path, dir: &Path) -> PathBuf {
    let exe = dir.join("flood");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/flood.c");
    let out = Command::new("cc")
        .arg("-I")
        .arg(prefix.join("include"))
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(prefix.join("lib"))
        .args(["-loml2", "-locomm", "-lm"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cc {}: {}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// The stock client; killed if the test ends before it does.
struct Client(Child);

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

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
    let lib = prefix.join("lib");
    let fs = tokio::task::spawn_blocking(move || {
        let dir = fs.path().to_owned();
        // The stock programs misbehave under the test harness's
        // environment: a clean one, with the reference library.
        let child = Command::new(&exe)
            .arg(N.to_string())
            .args(["--oml-collect", &uri, "--oml-id", "s1", "--oml-domain", D])
            .args(["--oml-text", "--oml-bufsize", "1000000"])
            .current_dir(work.path())
            .env_clear()
            .env("LD_LIBRARY_PATH", &lib)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut client = Client(child);
        // The database is open once rows arrive (liboml2 sends its first
        // 5 000 in chunks of its own choosing: not necessarily all by now).
        wait_for("the first rows", || !rows(&dir).is_empty());
        let before = rows(&dir);

        // About 4 MB more than the disk has room for.
        let filler = fs.fill();
        let mut go = client.0.stdin.take().unwrap();
        go.write_all(b"go\n").unwrap();
        drop(go);
        wait_for("the storage failure", || count(D, " ERROR ") > 0);

        std::fs::remove_file(filler).unwrap();
        wait_for("the stock client to finish", || {
            client.0.try_wait().unwrap().is_some()
        });
        wait_for("the database to close", || count(D, "database closed") > 0);
        let stored = rows(&dir);
        assert_eq!(
            stored[..before.len()],
            before[..],
            "rows stored before the outage"
        );
        let mut seen = std::collections::HashSet::new();
        for (i, s) in &stored {
            assert!(seen.insert(*i), "row {i} stored twice");
            assert_eq!(*s, format!("{} {i}", "x".repeat(200)), "row {i} damaged");
        }
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
