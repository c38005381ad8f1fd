//! Running the PyPI client OML4Py 2.10.4 against the real `streamgauge`
//! binary: the script, the server process, and the checks on what the
//! script must have produced, shared by the SQLite and PostgreSQL tests.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Tuples per measurement point.
pub const N: i64 = 200;

pub const SCRIPT: &str = r#"
import sys
from oml4py import OMLBase

N = int(sys.argv[2])
oml = OMLBase("pyapp", sys.argv[3], "pynode", "tcp:127.0.0.1:%s" % sys.argv[1])
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
pub struct ServerProcess(pub Child);

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn start_server(dir: &Path, extra: &[&str]) -> (ServerProcess, String) {
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
        .args(extra)
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

pub fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

pub fn wait_rows(db: &Path, sql: &str, want: i64) {
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

/// Checks that OML4Py 2.10.4 is importable, then runs [`SCRIPT`] against
/// the server at `127.0.0.1:port` into `domain`, writing the script into `dir`.
pub fn run_script(dir: &Path, port: &str, domain: &str) {
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
    let script = dir.join("client.py");
    std::fs::write(&script, SCRIPT).unwrap();
    let out = Command::new(python())
        .arg(&script)
        .args([port, &N.to_string(), domain])
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
}

/// The bookkeeping rows OML4Py's schemas must produce (key, value).
pub const BOOKKEEPING: [(&str, &str); 3] = [
    (
        "table__experiment_metadata",
        "0 _experiment_metadata subject:string key:string value:string",
    ),
    ("table_pyapp_ctr", "2 pyapp_ctr packets:uint64 label:string"),
    (
        "table_pyapp_rtt",
        "1 pyapp_rtt seq:int32 rtt:double host:string",
    ),
];
