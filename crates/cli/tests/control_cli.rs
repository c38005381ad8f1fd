//! `streamgauge control` against the real server: `status` lists a live
//! feedback-capable sender (a `streamgauge wrap run` client started with
//! `--oml-backchannel feedback`), `send` thins its stream, and what the
//! sender stored shows it; bad requests get clear errors.

mod common;

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::oml4py::start_server;

fn control(metrics: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .args(["control", "--metrics", metrics])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn count(db: &std::path::Path, sql: &str) -> i64 {
    rusqlite::Connection::open(db)
        .and_then(|c| c.query_row(sql, [], |r| r.get(0)))
        .unwrap_or(-1)
}

#[test]
fn status_and_send_steer_a_live_sender() {
    let dir = tempfile::tempdir().unwrap();
    let metrics = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let (_server, port) = start_server(dir.path(), &["--metrics", &metrics]);

    let (ok, out, err) = control(&metrics, &["status"]);
    assert!(ok, "{err}");
    assert!(out.trim_start().starts_with('{'), "{out}");

    // One line every 10 ms for 6 s: `{"i": N}`.
    let script =
        r#"i=0; while [ $i -lt 600 ]; do echo "{\"i\": $i}"; i=$((i+1)); sleep 0.01; done"#;
    let mut sender = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .args([
            "wrap", "run", "--schema", "i:int32", "--jsonl", "--app", "gen",
        ])
        .args([
            "--oml-collect",
            &format!("tcp://127.0.0.1:{port}"),
            "--oml-domain",
            "ctl",
            "--oml-id",
            "probe",
            "--oml-backchannel",
            "feedback",
            "--",
            "sh",
            "-c",
            script,
        ])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let db = dir.path().join("ctl.sq3");

    // The sender shows up once connected.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (ok, out, err) = control(&metrics, &["status"]);
        assert!(ok, "{err}");
        if out.contains("probe") {
            break;
        }
        assert!(Instant::now() < deadline, "sender never listed: {out}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (ok, out, err) = control(
        &metrics,
        &[
            "send",
            "ctl",
            "probe",
            "set-samples",
            "stream=gen_line",
            "samples=10",
        ],
    );
    assert!(ok, "{err}");
    assert!(
        out.contains("\"samples\":10") && out.contains("ids [1]"),
        "{out}"
    );

    // Errors: nobody by that name, a bad action, a malformed argument, no server.
    let (ok, _, err) = control(&metrics, &["send", "ctl", "nobody", "pause"]);
    assert!(!ok && err.contains("404"), "{err}");
    let (ok, _, err) = control(&metrics, &["send", "ctl", "probe", "explode"]);
    assert!(
        !ok && err.contains("400") && err.contains("explode"),
        "{err}"
    );
    let (ok, _, err) = control(&metrics, &["send", "ctl", "probe", "enable", "stream"]);
    assert!(!ok && err.contains("KEY=VALUE"), "{err}");
    let (ok, _, err) = control("127.0.0.1:1", &["status"]);
    assert!(!ok && err.contains("--metrics"), "{err}");

    assert!(sender.wait().unwrap().success());
    let answered = "SELECT count(*) FROM _experiment_metadata \
                    WHERE key = 'streamgauge_control' AND value = '1 ok'";
    let deadline = Instant::now() + Duration::from_secs(15);
    while count(&db, answered) != 1 {
        assert!(Instant::now() < deadline, "answer not stored");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Every line before the message, one in ten after: well under 600 rows.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = -1;
    loop {
        let n = count(&db, "SELECT count(*) FROM gen_line");
        if n == last {
            break;
        }
        last = n;
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(500));
    }
    eprintln!("{last} rows stored of 600 lines");
    assert!(last > 0 && last < 500, "{last} rows stored of 600 lines");
}
