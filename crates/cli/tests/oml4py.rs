//! A real third-party client: OML4Py 2.10.4 from PyPI (installed by
//! `scripts/setup.sh`) sends several measurement points and metadata to the
//! real `streamgauge server` binary; the SQLite tables must hold exactly
//! what the script injected, in the reference layout.
//!
//! If python3 or oml4py is missing, or the script fails, this test fails:
//! it is never skipped.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rusqlite::types::Value as Sql;

/// Tuples per measurement point.
const N: i64 = 200;

const SCRIPT: &str = r#"
import sys
from oml4py import OMLBase

N = int(sys.argv[2])
oml = OMLBase("pyapp", "pydomain", "pynode", "tcp:127.0.0.1:%s" % sys.argv[1])
oml.addmp("rtt", "seq:int32 rtt:double host:string")
oml.addmp("ctr", "packets:uint64 label:string")
oml.start()
oml.inject_metadata(None, "hostname", "node-1")
oml.inject_metadata("rtt", "unit", "ms", "rtt")
for i in range(N):
    oml.inject("rtt", [i - 100, i * 0.5 + 0.125, "h\t%d" % i])
for i in range(N):
    oml.inject("ctr", [2**64 - 1 - i, "c%d" % i])
oml.close()
"#;

/// The server, killed (and reaped) when the test ends, even on failure.
struct ServerProcess(Child);

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(dir: &Path) -> (ServerProcess, String) {
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
        .arg(dir)
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting streamgauge server");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let port = loop {
        let line = lines.next().expect("server exited early").unwrap();
        if line.contains("listening") {
            let at = line.find("addr=").unwrap() + 5;
            let addr = line[at..].split_whitespace().next().unwrap();
            break addr.rsplit(':').next().unwrap().to_owned();
        }
    };
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
    (ServerProcess(child), port)
}

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

fn wait_rows(db: &Path, sql: &str, want: i64) {
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut got = -1;
    while Instant::now() < deadline {
        got = rusqlite::Connection::open(db)
            .and_then(|c| c.query_row(sql, [], |r| r.get(0)))
            .unwrap_or(-1);
        if got == want {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{sql}: {got} rows, want {want}");
}

#[test]
fn oml4py_streams_are_stored_exactly() {
    let probe = Command::new(python())
        .args(["-c", "import oml4py; print(oml4py.__version__)"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}; run scripts/setup.sh", python()));
    assert!(
        probe.status.success(),
        "oml4py is not importable ({}); run scripts/setup.sh\n{}",
        python(),
        String::from_utf8_lossy(&probe.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&probe.stdout).trim(), "2.10.4");

    let dir = tempfile::tempdir().unwrap();
    let (_server, port) = start_server(dir.path());
    let script = dir.path().join("client.py");
    std::fs::write(&script, SCRIPT).unwrap();
    let out = Command::new(python())
        .arg(&script)
        .args([&port, &N.to_string()])
        .output()
        .expect("running the oml4py script");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "oml4py script failed:\n{stderr}");
    assert!(
        !stderr.contains("ERROR"),
        "oml4py reported errors:\n{stderr}"
    );
    assert!(
        out.stdout.is_empty(),
        "oml4py fell back to stdout (not connected?):\n{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let path = dir.path().join("pydomain.sq3");
    wait_rows(&path, "SELECT count(*) FROM pyapp_ctr", N);
    wait_rows(&path, "SELECT count(*) FROM pyapp_rtt", N);
    let db = rusqlite::Connection::open(&path).unwrap();

    let senders: Vec<(String, i64)> = db
        .prepare("SELECT name, id FROM _senders")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(senders, [("pynode".to_owned(), 1)]);

    let meta = |sql: &str| -> Vec<Vec<Sql>> {
        let mut stmt = db.prepare(sql).unwrap();
        let cols = stmt.column_count();
        stmt.query_map([], |r| (0..cols).map(|i| r.get::<_, Sql>(i)).collect())
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let text = |s: &str| Sql::Text(s.to_owned());
    // Bookkeeping: oml4py declares schema 0 itself, with index 0.
    let book = meta(
        "SELECT key, value FROM _experiment_metadata WHERE oml_sender_id IS NULL \
         AND key LIKE 'table%' ORDER BY key",
    );
    assert_eq!(
        book,
        [
            vec![
                text("table__experiment_metadata"),
                text("0 _experiment_metadata subject:string key:string value:string"),
            ],
            vec![
                text("table_pyapp_ctr"),
                text("2 pyapp_ctr packets:uint64 label:string")
            ],
            vec![
                text("table_pyapp_rtt"),
                text("1 pyapp_rtt seq:int32 rtt:double host:string"),
            ],
        ]
    );
    // Client metadata: subject "." for the experiment, ".<app>_<mp>.<field>"
    // for a field; oml4py numbers stream 0 per MP, so both have seq 0.
    let client_meta = meta(
        "SELECT oml_sender_id, oml_seq, subject, key, value FROM _experiment_metadata \
         WHERE oml_sender_id IS NOT NULL ORDER BY oml_tuple_id",
    );
    assert_eq!(
        client_meta,
        [
            vec![
                Sql::Integer(1),
                Sql::Integer(0),
                text("."),
                text("hostname"),
                text("node-1")
            ],
            vec![
                Sql::Integer(1),
                Sql::Integer(0),
                text(".pyapp_rtt.rtt"),
                text("unit"),
                text("ms"),
            ],
        ]
    );

    let rtt =
        meta("SELECT oml_sender_id, oml_seq, seq, rtt, host FROM pyapp_rtt ORDER BY oml_tuple_id");
    for (i, row) in rtt.iter().enumerate() {
        let i = i as i64;
        assert_eq!(
            row,
            &vec![
                Sql::Integer(1),
                Sql::Integer(i),
                Sql::Integer(i - 100),
                Sql::Real(i as f64 * 0.5 + 0.125),
                text(&format!("h\t{i}")),
            ],
            "pyapp_rtt row {i}"
        );
    }
    let ctr = meta("SELECT oml_seq, packets, label FROM pyapp_ctr ORDER BY oml_tuple_id");
    for (i, row) in ctr.iter().enumerate() {
        let want = u64::MAX - i as u64;
        // Above 2^63-1 uint64 is stored as its 8 big-endian bytes (docs/storage.md).
        assert_eq!(
            row,
            &vec![
                Sql::Integer(i as i64),
                Sql::Blob(want.to_be_bytes().to_vec()),
                text(&format!("c{i}")),
            ],
            "pyapp_ctr row {i}"
        );
    }
    let ts_ok: i64 = db
        .query_row(
            "SELECT count(*) FROM pyapp_rtt WHERE oml_ts_client >= 0 AND oml_ts_client < 60 \
             AND oml_ts_server >= 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(ts_ok, N);
}
