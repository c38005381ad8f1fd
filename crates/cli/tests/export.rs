//! `streamgauge export` on what the real server stored from the reference
//! liboml2 capture (every scalar type, uint64 above 2^63-1, strings with
//! tabs, newlines and backslashes, blobs): CSV and JSON values exact,
//! Parquet typed and readable by pyarrow, and the same export from
//! SQLite and from PostgreSQL.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::oml4py::start_server;
use pgtemp::{shared, unique_domain};

fn capture(domain: &str) -> Vec<u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join("spec/vectors/0001-ref-alltypes.txt"))
        .unwrap()
        .replacen("domain: vecdomain\n", &format!("domain: {domain}\n"), 1)
        .into_bytes()
}

fn send(port: &str, domain: &str) {
    let mut s = TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    s.write_all(&capture(domain)).unwrap();
}

fn export(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .arg("export")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Retries `export` until the table has `rows` rows.
fn export_rows(args: &[&str], rows: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (ok, out, err) = export(args);
        if ok && without_server_time(&out).len() == rows + 1 {
            return out;
        }
        assert!(Instant::now() < deadline, "export {args:?}: {err}\n{out}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The CSV without the oml_ts_server column (server time differs by run).
fn without_server_time(csv: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut rdr = csv.lines().peekable();
    while let Some(l) = rdr.next() {
        // A quoted field with a newline continues on the next line.
        let mut row = l.to_owned();
        while row.matches('"').count() % 2 == 1 {
            row.push('\n');
            row.push_str(rdr.next().unwrap());
        }
        let mut fields: Vec<&str> = row.splitn(6, ',').collect();
        fields.remove(4);
        lines.push(fields.join(","));
    }
    lines
}

#[test]
fn sqlite_exports_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, port) = start_server(dir.path(), &[]);
    send(&port, "vecdomain");
    let db = dir.path().join("vecdomain.sq3");
    let db = db.to_str().unwrap();
    let csv = export_rows(&[db, "-t", "vec_scalars"], 3);
    let rows = without_server_time(&csv);
    assert_eq!(
        rows,
        [
            "oml_tuple_id,oml_sender_id,oml_seq,oml_ts_client,i32,u32,i64,u64,dbl,str,blb,gid,bol",
            "1,1,1,2026-11-22T01:29:07.862158Z,-1,1,-9223372036854775808,18446744073709551615,3.141593,hello,AAEC/w==,81985529216486895,true",
            "2,1,2,2026-11-22T01:29:07.862162Z,2147483647,4294967295,1234567890123,0,-0.5,\"tab\there back\\slash nl\nend\",T01M,1,false",
            "3,1,3,2026-11-22T01:29:07.862191Z,-2147483648,0,9223372036854775807,42,0,,T01M,0,true",
        ]
    );
    // JSON lines: numbers stay numbers, uint64 exact.
    let (ok, jsonl, err) = export(&[db, "-t", "vec_scalars", "-f", "jsonl", "--raw-timestamps"]);
    assert!(ok, "{err}");
    let first: serde_json::Value = serde_json::from_str(jsonl.lines().next().unwrap()).unwrap();
    assert_eq!(first["u64"], serde_json::json!(18446744073709551615u64));
    assert!(first["oml_ts_client"].is_f64());
    // Everything into a directory, Parquet, read back by pyarrow.
    let out = dir.path().join("out");
    let (ok, _, err) = export(&[db, "--all", "-f", "parquet", "-o", out.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.join("vec_vdouble.parquet").is_file());
    let py = Command::new(common::oml4py::python())
        .arg("-c")
        .arg(
            "import sys, pyarrow.parquet as pq\n\
             t = pq.read_table(sys.argv[1]).to_pydict()\n\
             print(t['u64'], t['i64'], t['str'][1], t['bol'], str(t['oml_ts_client'][0]))",
        )
        .arg(out.join("vec_scalars.parquet"))
        .output()
        .unwrap();
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    assert_eq!(
        String::from_utf8(py.stdout).unwrap().trim(),
        "[18446744073709551615, 0, 42] [-9223372036854775808, 1234567890123, 9223372036854775807] \
         tab\there back\\slash nl\nend [True, False, True] 2026-11-22 01:29:07.862158+00:00"
    );
}

#[test]
fn errors_name_what_exists() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, port) = start_server(dir.path(), &[]);
    send(&port, "vecdomain");
    let db = dir.path().join("vecdomain.sq3");
    let db = db.to_str().unwrap();
    export_rows(&[db, "-t", "vec_scalars"], 3);
    let (ok, _, err) = export(&[db, "-t", "nope"]);
    assert!(!ok);
    assert!(
        err.contains("no stream table \"nope\"") && err.contains("vec_scalars"),
        "{err}"
    );
    let (ok, _, err) = export(&["/nonexistent.sq3", "-t", "x"]);
    assert!(!ok && err.contains("no such database file"), "{err}");
    let (ok, _, err) = export(&[db, "-t", "vec_scalars", "-f", "parquet"]);
    assert!(!ok && err.contains("standard output"), "{err}");
    let (ok, _, err) = export(&[db, "--all"]);
    assert!(!ok && err.contains("-o DIRECTORY"), "{err}");
}

#[test]
fn postgresql_exports_match_sqlite() {
    let cluster = shared();
    let domain = unique_domain("exp");
    let dir = tempfile::tempdir().unwrap();
    let port = cluster.port.to_string();
    let (_pg_server, pg_listen) = start_server(
        dir.path(),
        &[
            "-b",
            "postgresql",
            "--pg-host",
            "127.0.0.1",
            "--pg-user",
            "oml",
            "--pg-port",
            &port,
        ],
    );
    send(&pg_listen, &domain);
    let (_server, listen) = start_server(dir.path(), &[]);
    send(&listen, &domain);
    let sq3 = dir.path().join(format!("{domain}.sq3"));
    let conn = format!("host=127.0.0.1 port={port} user=oml dbname={domain}");
    // Both have committed the capture once its largest table is complete.
    export_rows(&[sq3.to_str().unwrap(), "-t", "vec_scalars"], 3);
    export_rows(&[&conn, "-t", "vec_scalars"], 3);
    for table in ["vec_scalars", "vec_vdouble", "vec_vuint64", "vec_vbool"] {
        let (ok, lite, err) = export(&[sq3.to_str().unwrap(), "-t", table]);
        assert!(ok, "{err}");
        let (ok, pg, err) = export(&[&conn, "-t", table]);
        assert!(ok, "{err}");
        assert!(without_server_time(&lite).len() > 1, "{table}: {lite}");
        assert_eq!(
            without_server_time(&pg),
            without_server_time(&lite),
            "{table}"
        );
    }
}
