//! The real `streamgauge server` binary: ephemeral port, a client that
//! stays connected, SIGTERM — and every row it sent is in the database.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn capture() -> Vec<u8> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read(root.join("spec/vectors/0001-ref-alltypes.txt"))
        .or_else(|_| std::fs::read(root.join("../shared/vectors/ref-alltypes.txt")))
        .expect("reference capture")
}

#[cfg(unix)]
#[test]
fn sigterm_commits_rows_of_connected_clients() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .args([
            "server",
            "--listen",
            "0",
            "--bind",
            "127.0.0.1",
            "-t",
            "0",
            "-D",
        ])
        .arg(dir.path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("server exited early").unwrap();
        if line.contains("listening") {
            let at = line.find("addr=").unwrap() + 5;
            break line[at..].split_whitespace().next().unwrap().to_owned();
        }
    };
    // Keep draining the log so the server never blocks on a full pipe.
    let log = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());

    let mut client = TcpStream::connect(&addr).unwrap();
    client.write_all(&capture()).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let exit = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "server did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    let log = log.join().unwrap();
    assert!(exit.success(), "{exit:?}\n{}", log.join("\n"));
    assert!(log.iter().any(|l| l.contains("server stopped")));

    // What the server stores is its user's alone, whatever the umask.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir.path().join("vecdomain.sq3"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "the database is owner-only: {mode:o}");

    let db = rusqlite::Connection::open(dir.path().join("vecdomain.sq3")).unwrap();
    let count = |t: &str| -> i64 {
        db.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(count("vec_scalars"), 3);
    assert_eq!(count("vec_vbool"), 2);
    assert_eq!(count("_experiment_metadata"), 12);
    drop(client);
}
