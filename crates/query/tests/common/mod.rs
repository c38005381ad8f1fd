//! Shared set-up: experiment databases written through the `store` crate
//! (SQLite and PostgreSQL, same rows), the router served on loopback, and
//! a small HTTP client.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use omsp::{Schema, Value};
use query::{router, Backend, CommitFeed, QueryState};
use store::{PgOptions, PgStore, Row, Sink, SqliteOptions, SqliteStore};
use tokio::sync::watch;

/// Experiment start (Unix seconds).
pub const START: i64 = 1_795_310_976;
/// Rows of `m_all`.
pub const ALL_ROWS: i64 = 50;
/// Rows per sender of `m_wave`.
pub const WAVE_ROWS: i64 = 3000;

/// Field values of row `i` (1-based) of `m_all`: the first three are the
/// extremes of every type.
pub fn all_values(i: i64) -> Vec<Value> {
    match i {
        1 => vec![
            Value::Int32(-1),
            Value::UInt32(u32::MAX),
            Value::Int64(i64::MIN),
            Value::UInt64(u64::MAX),
            Value::Double(f64::NAN),
            Value::String("a,\"b\"\nc".into()),
            Value::Blob(vec![0, 1, 2, 255]),
            Value::Guid(81_985_529_216_486_895),
            Value::Bool(true),
            Value::VecDouble(vec![1.5, -2.25]),
        ],
        2 => vec![
            Value::Int32(i32::MAX),
            Value::UInt32(0),
            Value::Int64(9_007_199_254_740_993),
            Value::UInt64(1 << 63),
            Value::Double(f64::INFINITY),
            Value::String(String::new()),
            Value::Blob(vec![]),
            Value::Guid(0),
            Value::Bool(false),
            Value::VecDouble(vec![]),
        ],
        _ => vec![
            Value::Int32(i as i32),
            Value::UInt32(i as u32 * 10),
            Value::Int64(-i),
            Value::UInt64(i as u64),
            Value::Double(i as f64 / 4.0),
            Value::String(format!("s{i}")),
            Value::Blob(vec![i as u8]),
            Value::Guid(i as u64),
            Value::Bool(i % 2 == 0),
            Value::VecDouble(vec![i as f64]),
        ],
    }
}

/// A wave sample: sender 1 a sine, sender 2 a sawtooth; one spike each.
pub fn wave(sender: i64, i: i64) -> f64 {
    if i == 1234 {
        return if sender == 1 { 100.0 } else { -100.0 };
    }
    match sender {
        1 => (i as f64 / 100.0).sin(),
        _ => (i % 300) as f64 / 300.0,
    }
}

/// Writes both streams into `db`.
pub fn fill(db: &mut impl Sink) {
    db.ensure_start_time(START).unwrap();
    let a = db.sender_id("node-a").unwrap();
    let b = db.sender_id("node-b").unwrap();
    let all = db
        .register_schema(
            &Schema::parse("1 m_all i32:int32 u32:uint32 i64:int64 u64:uint64 dbl:double str:string blb:blob gid:guid bol:bool vd:[double]")
                .unwrap(),
        )
        .unwrap();
    for i in 1..=ALL_ROWS {
        db.insert(&Row {
            table: all,
            sender: if i % 2 == 1 { a } else { b },
            seq: i,
            ts_client: i as f64 * 0.1 + 0.01,
            ts_server: i as f64 * 0.1,
            values: all_values(i),
        })
        .unwrap();
    }
    let w = db
        .register_schema(&Schema::parse("2 m_wave v:double n:int64").unwrap())
        .unwrap();
    for i in 1..=WAVE_ROWS {
        for s in [a, b] {
            db.insert(&Row {
                table: w,
                sender: s,
                seq: i,
                ts_client: i as f64 * 0.01,
                ts_server: i as f64 * 0.01 + 0.001 * s as f64,
                values: vec![Value::Double(wave(s, i)), Value::Int64(i)],
            })
            .unwrap();
        }
    }
    db.commit().unwrap();
}

/// A SQLite data directory holding `domain`.
pub fn sqlite(domain: &str) -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let mut db = SqliteStore::open(dir.path(), domain, SqliteOptions::default()).unwrap();
    fill(&mut db);
    (dir, db)
}

/// PostgreSQL options for the shared throwaway cluster.
pub fn pg_options() -> PgOptions {
    PgOptions {
        host: "127.0.0.1".into(),
        port: pgtemp::shared().port,
        user: "oml".into(),
        ..PgOptions::default()
    }
}

/// The same domain in PostgreSQL.
pub fn postgres(domain: &str) -> PgStore {
    let mut db = PgStore::open(&pg_options(), domain).unwrap();
    fill(&mut db);
    db
}

/// A commit feed the test bumps by hand.
pub struct Feed(pub watch::Sender<u64>);

impl CommitFeed for Feed {
    fn subscribe(&self, _domain: &str) -> watch::Receiver<u64> {
        self.0.subscribe()
    }
}

/// The router served on 127.0.0.1, behind httpkit's layers.
pub struct Server {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Keeps the server running.
    _rt: tokio::runtime::Runtime,
}

impl Server {
    /// Serves `state` with `config`'s layers.
    pub fn start_with(state: QueryState, config: httpkit::HttpConfig) -> Server {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let app = config.apply(router(state));
        rt.spawn(httpkit::serve(listener, app, std::future::pending()));
        Server { base, _rt: rt }
    }

    /// Serves `state` as `streamgauge server` would, loopback trusted.
    pub fn start(state: QueryState) -> Server {
        Server::start_with(state, httpkit::HttpConfig::default())
    }

    /// GET `path`: status and body.
    pub fn get(&self, path: &str) -> (u16, Vec<u8>) {
        self.get_with(path, &[])
    }

    /// GET with headers.
    pub fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> (u16, Vec<u8>) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .into();
        let path: String = path
            .chars()
            .map(|c| match c {
                '"' | '<' | '>' | ' ' | '\\' | '\n' | '{' | '}' | '|' | '^' | '`' => {
                    let mut b = [0; 4];
                    c.encode_utf8(&mut b)
                        .bytes()
                        .map(|x| format!("%{x:02X}"))
                        .collect()
                }
                c => c.to_string(),
            })
            .collect();
        let mut req = agent.get(format!("{}{path}", self.base));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let mut resp = req.call().unwrap();
        let status = resp.status().as_u16();
        let body = resp
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_vec()
            .unwrap();
        (status, body)
    }

    /// GET expecting JSON.
    pub fn json(&self, path: &str) -> (u16, serde_json::Value) {
        let (s, b) = self.get(path);
        let v = serde_json::from_slice(&b)
            .unwrap_or_else(|e| panic!("{path}: {e}: {}", String::from_utf8_lossy(&b)));
        (s, v)
    }
}

/// State over a SQLite data directory.
pub fn sqlite_state(dir: &Path) -> QueryState {
    QueryState::new(Backend::Sqlite {
        dir: dir.to_owned(),
    })
}

/// State over the shared PostgreSQL cluster.
pub fn pg_state() -> QueryState {
    QueryState::new(Backend::Postgres(pg_options()))
}

/// A feed and its sender.
pub fn feed() -> (Arc<Feed>, ()) {
    (Arc::new(Feed(watch::channel(0).0)), ())
}
