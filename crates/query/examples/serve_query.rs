//! Serves the query API over a SQLite data directory on loopback, for
//! clients' tests (the Python package's): `serve_query DIR [--demo]`.
//! With `--demo`, first writes domain `demo` with stream `demo_all`
//! (every scalar type, uint64 above 2^63-1) through the `store` crate.
//! Prints `listening http://127.0.0.1:PORT` and serves until killed;
//! each line on standard input appends one row to `demo_all` and bumps the
//! commit feed (so a tail sees it).

use std::io::BufRead;
use std::sync::Arc;

use omsp::{Schema, Value};
use query::{router, Backend, CommitFeed, QueryState};
use store::{Row, SqliteOptions, SqliteStore};
use tokio::sync::watch;

struct Feed(watch::Sender<u64>);

impl CommitFeed for Feed {
    fn subscribe(&self, _domain: &str) -> watch::Receiver<u64> {
        self.0.subscribe()
    }
}

fn row(table: store::TableId, i: i64) -> Row {
    let values = match i {
        1 => vec![
            Value::Int32(-1),
            Value::UInt64(u64::MAX),
            Value::Int64(i64::MIN),
            Value::Double(f64::NAN),
            Value::String("a,b".into()),
            Value::Blob(vec![0, 255]),
            Value::Bool(true),
        ],
        _ => vec![
            Value::Int32(i as i32),
            Value::UInt64(i as u64),
            Value::Int64(-i),
            Value::Double(i as f64 / 2.0),
            Value::String(format!("s{i}")),
            Value::Blob(vec![i as u8]),
            Value::Bool(i % 2 == 0),
        ],
    };
    Row {
        table,
        sender: 1,
        seq: i,
        ts_client: i as f64,
        ts_server: i as f64 + 0.5,
        values,
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().expect("usage: serve_query DIR [--demo]"));
    let demo = args.next().as_deref() == Some("--demo");
    let mut store = None;
    if demo {
        let mut db = SqliteStore::open(&dir, "demo", SqliteOptions::default()).expect("store");
        db.ensure_start_time(1_700_000_000).expect("start");
        db.sender_id("py").expect("sender");
        let t = db
            .register_schema(
                &Schema::parse("1 demo_all i32:int32 u64:uint64 i64:int64 dbl:double str:string blb:blob bol:bool")
                    .expect("schema"),
            )
            .expect("table");
        for i in 1..=10 {
            db.insert(&row(t, i)).expect("insert");
        }
        db.commit().expect("commit");
        store = Some((db, t));
    }
    let feed = Arc::new(Feed(watch::channel(0).0));
    let state = QueryState::new(Backend::Sqlite { dir }).with_feed(feed.clone());
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    println!("listening http://{}", listener.local_addr().expect("addr"));
    let app = httpkit::HttpConfig::default().apply(router(state));
    rt.spawn(httpkit::serve(listener, app, std::future::pending()));
    let mut next = 11;
    for line in std::io::stdin().lock().lines() {
        if line.is_err() {
            break;
        }
        if let Some((db, t)) = store.as_mut() {
            db.insert(&row(*t, next)).expect("insert");
            db.commit().expect("commit");
            next += 1;
            feed.0.send_modify(|n| *n += 1);
        }
    }
    // Standard input closed: keep serving until killed.
    rt.block_on(std::future::pending::<()>());
}
