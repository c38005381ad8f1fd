//! The real `streamgauge server` binary with the security flags: a bad
//! token file stops the start, config-file keys work, and SIGHUP re-reads
//! the token file.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn server() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_streamgauge"));
    c.args(["server", "--listen", "0", "--bind", "127.0.0.1", "-t", "0"]);
    c
}

/// A text session of 3 rows into `lab`, with `token` if given.
fn send(addr: &str, token: Option<&str>) {
    let mut s = String::from("protocol: 5\ndomain: lab\nstart-time: 1\nsender-id: s\n");
    s.push_str("app-name: t\nschema: 1 a_b x:int32\n");
    if let Some(t) = token {
        s.push_str(&format!("x-streamgauge-auth: {t}\n"));
    }
    s.push_str("content: text\n\n0.1\t1\t1\t1\n0.2\t1\t2\t2\n0.3\t1\t3\t3\n");
    let mut c = TcpStream::connect(addr).unwrap();
    let _ = c.write_all(s.as_bytes());
    let _ = c.shutdown(std::net::Shutdown::Write);
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = c.read_to_end(&mut Vec::new());
}

#[test]
fn malformed_token_file_stops_the_start_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    httpkit::secret::write_private(&tokens, "# ok\nlab one\nlab one two\n").unwrap();
    let out = server()
        .arg("-D")
        .arg(dir.path())
        .arg("--auth-file")
        .arg(&tokens)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("tokens:3: unknown scope \"two\" (want collect, read or control"),
        "{err}"
    );

    let out = server().args(["--tls-cert", "c.pem"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tls-key"));
}

#[cfg(unix)]
#[test]
fn sighup_rereads_the_token_file() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    httpkit::secret::write_private(&tokens, "lab one\n").unwrap();
    let conf = dir.path().join("server.conf");
    std::fs::write(
        &conf,
        format!("auth-file = {}\nauth-required = true\n", tokens.display()),
    )
    .unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let mut child = server()
        .arg("-D")
        .arg(&data)
        .arg("-c")
        .arg(&conf)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, log) = mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let wait_for = |what: &str| -> String {
        loop {
            let line = log
                .recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("no {what:?} in the log"));
            if line.contains(what) {
                return line;
            }
        }
    };
    let line = wait_for("listening");
    let at = line.find("addr=").unwrap() + 5;
    let addr = line[at..].split_whitespace().next().unwrap().to_owned();

    std::fs::write(&tokens, "lab two\n").unwrap();
    let kill = |sig: &str| {
        let pid = child.id().to_string();
        assert!(Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success());
    };
    kill("-HUP");
    wait_for("auth file re-read");
    send(&addr, Some("one"));
    wait_for("authentication failed");
    assert!(!data.join("lab.sq3").exists());
    send(&addr, Some("two"));
    kill("-TERM");
    wait_for("server stopped");
    assert!(child.wait().unwrap().success());
    let db = rusqlite::Connection::open(data.join("lab.sq3")).unwrap();
    let xs: Vec<i32> = db
        .prepare("SELECT x FROM a_b ORDER BY oml_seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(xs, [1, 2, 3]);
}
