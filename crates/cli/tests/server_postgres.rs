//! `streamgauge server -b postgresql` with the `--pg-*` flags, against a
//! PostgreSQL cluster the test starts on loopback.

use pgtemp as pg_cluster;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pg_cluster::{shared, unique_domain};

fn capture(domain: &str) -> Vec<u8> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("spec/vectors/0001-ref-alltypes.txt"))
        .or_else(|_| std::fs::read_to_string(root.join("../shared/vectors/ref-alltypes.txt")))
        .expect("reference capture");
    text.replacen("domain: vecdomain\n", &format!("domain: {domain}\n"), 1)
        .into_bytes()
}

fn server(user: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_streamgauge"));
    cmd.args([
        "server",
        "-b",
        "postgresql",
        "--listen",
        "0",
        "--bind",
        "127.0.0.1",
    ])
    .args(["-t", "0", "--pg-host", "127.0.0.1", "--pg-user", user])
    .args(["--pg-port", &shared().port.to_string()])
    .args(["--pg-connect", "connect_timeout=5"]);
    cmd
}

#[cfg(unix)]
#[test]
fn stores_into_postgresql_and_commits_on_sigterm() {
    let domain = unique_domain("cli");
    let mut child = server("oml").stderr(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("server exited early").unwrap();
        if line.contains("listening") {
            let at = line.find("addr=").unwrap() + 5;
            break line[at..].split_whitespace().next().unwrap().to_owned();
        }
    };
    let log = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());
    let mut client = TcpStream::connect(&addr).unwrap();
    client.write_all(&capture(&domain)).unwrap();
    std::thread::sleep(Duration::from_millis(300));
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
    let uri = format!("postgresql://oml@127.0.0.1:{}/{domain}", shared().port);
    assert!(log.iter().any(|l| l.contains(&uri)), "{}", log.join("\n"));

    let mut db = shared().client(&domain);
    let mut count = |t: &str| -> i64 {
        db.query_one(&format!("SELECT count(*) FROM {t}"), &[])
            .unwrap()
            .get(0)
    };
    assert_eq!(count("vec_scalars"), 3);
    assert_eq!(count("vec_vbool"), 2);
    assert_eq!(count("_experiment_metadata"), 12);
    drop(client);
}

#[test]
fn a_role_without_createdb_is_refused_with_a_clear_message() {
    let out = server("nocreate").output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("role \"nocreate\" may not create databases"),
        "{err}"
    );
}
