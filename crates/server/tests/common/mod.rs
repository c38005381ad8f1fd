//! Test helpers: a server on loopback, clients, reference vectors, and a
//! dump of SQLite tables in the format of the `*.rows.json` vectors.

#![allow(dead_code)]

pub use pgtemp as pg_cluster;
pub mod postgres;
pub mod reference;
pub mod resume;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::types::ValueRef;
use serde_json::{json, Map, Value as Json};
use server::{Server, ServerConfig};

/// A server on 127.0.0.1 with an ephemeral port and a fresh data directory.
pub struct TestServer {
    pub server: Server,
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
}

pub async fn start() -> TestServer {
    start_with(|_| {}).await
}

pub async fn start_with(tune: impl FnOnce(&mut ServerConfig)) -> TestServer {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .try_init();
    let dir = tempfile::tempdir().unwrap();
    let mut config = ServerConfig::new(dir.path());
    config.listen = vec!["127.0.0.1:0".parse().unwrap()];
    tune(&mut config);
    let server = Server::start(config).await.unwrap();
    let addr = server.local_addrs()[0];
    TestServer { server, addr, dir }
}

/// Sends `bytes`, half-closes, and waits until the server closes too (it
/// has then handed every row to the database writer).
pub fn replay(addr: SocketAddr, bytes: &[u8]) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(bytes).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut sink = Vec::new();
    let _ = s.read_to_end(&mut sink);
}

/// Async wrapper around [`replay`] (the test runtime must keep serving).
pub async fn replay_async(addr: SocketAddr, bytes: Vec<u8>) {
    tokio::task::spawn_blocking(move || replay(addr, &bytes))
        .await
        .unwrap();
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A reference vector: `spec/vectors/<numbered>` if present, else the
/// shared capture folder beside the repository.
pub fn vector(numbered: &str, shared: &str) -> Vec<u8> {
    let candidates = [
        root().join("spec/vectors").join(numbered),
        root().join("../shared/vectors").join(shared),
    ];
    for c in &candidates {
        if let Ok(b) = std::fs::read(c) {
            return b;
        }
    }
    panic!("vector {numbered} not found in {candidates:?}");
}

pub fn vector_json(numbered: &str, shared: &str) -> Json {
    serde_json::from_slice(&vector(numbered, shared)).unwrap()
}

pub fn open_db(dir: &Path, domain: &str) -> rusqlite::Connection {
    rusqlite::Connection::open_with_flags(
        dir.join(format!("{domain}.sq3")),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE,
    )
    .unwrap()
}

/// Every table of a database as `{table: {columns, column_types, rows}}`,
/// without `oml_ts_server` (as in the reference dumps) and without
/// `_streamgauge_clock` (the server's clock estimates, which the reference
/// does not keep and which differ from run to run); blobs as
/// `{"blob_hex": ...}`.
pub fn dump(conn: &rusqlite::Connection) -> Map<String, Json> {
    let tables: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' \
             AND name <> '_streamgauge_clock' ORDER BY rowid",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut out = Map::new();
    for t in tables {
        let info: Vec<(String, String)> = conn
            .prepare(&format!("PRAGMA table_info(\"{t}\")"))
            .unwrap()
            .query_map([], |r| Ok((r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let keep: Vec<usize> = (0..info.len())
            .filter(|&i| info[i].0 != "oml_ts_server")
            .collect();
        let cols: Vec<String> = keep.iter().map(|&i| format!("\"{}\"", info[i].0)).collect();
        let order = if info[0].0 == "oml_tuple_id" {
            "oml_tuple_id"
        } else {
            "rowid"
        };
        let sql = format!("SELECT {} FROM \"{t}\" ORDER BY {order}", cols.join(","));
        let mut stmt = conn.prepare(&sql).unwrap();
        let rows: Vec<Json> = stmt
            .query_map([], |r| {
                Ok(Json::Array(
                    (0..keep.len())
                        .map(|i| cell(r.get_ref(i).unwrap()))
                        .collect(),
                ))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        out.insert(
            t,
            json!({
                "columns": keep.iter().map(|&i| info[i].0.clone()).collect::<Vec<_>>(),
                "column_types": keep.iter().map(|&i| info[i].1.clone()).collect::<Vec<_>>(),
                "rows": rows,
            }),
        );
    }
    out
}

fn cell(v: ValueRef<'_>) -> Json {
    match v {
        ValueRef::Null => Json::Null,
        ValueRef::Integer(i) => json!(i),
        ValueRef::Real(f) => json!(f),
        ValueRef::Text(t) => json!(String::from_utf8_lossy(t)),
        ValueRef::Blob(b) => {
            let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
            json!({ "blob_hex": hex })
        }
    }
}

/// Polls `count_sql` until it returns `want` or `within` has passed.
pub fn wait_count(dir: &Path, domain: &str, count_sql: &str, want: i64, within: Duration) -> i64 {
    let deadline = Instant::now() + within;
    loop {
        let got = std::panic::catch_unwind(|| {
            open_db(dir, domain)
                .query_row(count_sql, [], |r| r.get::<_, i64>(0))
                .unwrap_or(-1)
        })
        .unwrap_or(-1);
        if got == want || Instant::now() >= deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A text-mode header for `domain` with the given schema lines.
pub fn text_header(domain: &str, sender: &str, start: i64, schemas: &[&str]) -> String {
    let mut h = format!(
        "protocol: 5\ndomain: {domain}\nstart-time: {start}\nsender-id: {sender}\napp-name: t\n"
    );
    for s in schemas {
        h.push_str(&format!("schema: {s}\n"));
    }
    h.push_str("content: text\n\n");
    h
}

/// A text client of `domain` sending `n` rows of `app_m` (x = i, s = "v{i}").
pub fn good_client(domain: &str, n: i64) -> Vec<u8> {
    let mut s = text_header(domain, "good", 1000, &["1 app_m x:int64 s:string"]);
    for i in 0..n {
        s.push_str(&format!("{}.5\t1\t{i}\t{i}\tv{i}\n", i / 100));
    }
    s.into_bytes()
}

/// Every row of [`good_client`] stored once, in order.
pub fn assert_good_stored(dir: &Path, domain: &str, n: i64) {
    let rows: Vec<(i64, String)> = open_db(dir, domain)
        .prepare("SELECT x, s FROM app_m ORDER BY oml_seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let want: Vec<(i64, String)> = (0..n).map(|i| (i, format!("v{i}"))).collect();
    assert_eq!(rows, want);
}

/// Nice values of this process's threads named `sg-http` (field 19 of
/// /proc/self/task/<tid>/stat, after the parenthesised name).
pub fn http_thread_nices() -> Vec<i64> {
    http_thread_fields(19)
}

/// Field `n` (1-based, as in proc(5)) of every `sg-http` thread's stat.
pub fn http_thread_fields(n: usize) -> Vec<i64> {
    thread_fields("sg-http", n)
}

/// Field `n` (1-based, as in proc(5)) of every thread of this process
/// whose name starts with `prefix`.
pub fn thread_fields(prefix: &str, n: usize) -> Vec<i64> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(comm) = std::fs::read_to_string(task.path().join("comm")) else {
            continue;
        };
        if !comm.starts_with(prefix) {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap();
        let after_name = &stat[stat.rfind(')').unwrap() + 2..];
        // Fields from 3 (state) on.
        let field = after_name.split(' ').nth(n - 3).unwrap();
        out.push(field.parse().unwrap());
    }
    out
}

/// Deterministic pseudo-random bytes (xorshift64*), so a failure replays.
pub fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        out.extend_from_slice(&seed.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// A request makes the runtime start its workers (and answers).
pub async fn request(http: std::net::SocketAddr) {
    let body = tokio::task::spawn_blocking(move || {
        httpkit::client::Client::new(&http.to_string(), "server HTTP", "")
            .get("/api/v1/domains")
            .unwrap()
    })
    .await
    .unwrap();
    assert!(body.trim_start().starts_with('['), "{body}");
}
