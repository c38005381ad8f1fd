//! `--user` / `--group`: the server binds as root, then runs as the named
//! user; the database files it creates belong to that user.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::os::unix::fs::MetadataExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn capture() -> Vec<u8> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read(root.join("spec/vectors/0001-ref-alltypes.txt")).expect("reference capture")
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
}

fn server(dir: &std::path::Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_streamgauge"));
    cmd.args([
        "server",
        "--listen",
        "0",
        "--bind",
        "127.0.0.1",
        "-t",
        "0",
        "-D",
    ])
    .arg(dir)
    .args(extra);
    cmd
}

#[test]
fn group_without_user_is_refused_before_starting() {
    let dir = tempfile::tempdir().unwrap();
    let out = server(dir.path(), &["--group", "nogroup"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--group needs --user"), "{err}");
}

#[test]
fn an_unknown_user_is_refused_before_starting() {
    let dir = tempfile::tempdir().unwrap();
    let out = server(dir.path(), &["--user", "no-such-user-here"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no such user"), "{err}");
}

#[test]
fn the_server_runs_and_writes_as_the_named_user() {
    let dir = tempfile::tempdir().unwrap();
    let nobody: u32 = 65534;
    if !is_root() {
        // Without root the switch must fail loudly, never half-work.
        let out = server(dir.path(), &["--user", "nobody"]).output().unwrap();
        assert!(!out.status.success());
        return;
    }
    // The temporary directory is root's and private: open it up for the
    // traversal, and give the data directory to nobody.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let refused = server(dir.path(), &["--user", "nobody"]).output().unwrap();
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("cannot create files in the data directory"),
        "{err}"
    );
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let status = Command::new("chown")
        .args(["nobody:nogroup"])
        .arg(&data)
        .status()
        .unwrap();
    assert!(status.success());
    let mut child = server(&data, &["--user", "nobody", "--group", "nogroup"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut addr = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if line.contains("listening") {
            let at = line.find("addr=").unwrap() + 5;
            addr = Some(line[at..].split_whitespace().next().unwrap().to_owned());
        }
        if line.contains("dropped privileges") {
            break;
        }
    }
    let addr = addr.expect("server did not start and drop privileges");
    let log = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());
    let uid = std::fs::read_to_string(format!("/proc/{}/status", child.id()))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .unwrap()
        .to_owned();
    assert_eq!(
        uid.split_whitespace().skip(1).collect::<Vec<_>>(),
        ["65534"; 4],
        "{uid}"
    );

    let mut client = TcpStream::connect(&addr).unwrap();
    client.write_all(&capture()).unwrap();
    drop(client);
    let db = data.join("vecdomain.sq3");
    let deadline = Instant::now() + Duration::from_secs(10);
    let rows = loop {
        // Read-only: a plain open would create the file, as root, first.
        let n: i64 =
            rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .and_then(|c| c.query_row("SELECT count(*) FROM vec_scalars", [], |r| r.get(0)))
                .unwrap_or(0);
        if n == 3 || Instant::now() > deadline {
            break n;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let exit = child.wait().unwrap();
    let log = log.join().unwrap();
    assert!(exit.success(), "{exit:?}\n{}", log.join("\n"));
    assert_eq!(rows, 3, "{}", log.join("\n"));
    assert_eq!(std::fs::metadata(&db).unwrap().uid(), nobody);
}
