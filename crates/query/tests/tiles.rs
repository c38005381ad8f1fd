//! Downsampling from tiles gives the same rows as the exact M4 query
//! (`tiles=false`) for random data, ranges, senders, fields and point
//! counts, on SQLite and PostgreSQL; rows committed after the tiles were
//! built show up in the next answer.

mod common;

use common::*;
use omsp::{Schema, Value};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use store::{Row, Sink, TableId};

/// Rows per sender of the random stream.
const ROWS: i64 = 6000;

/// A small deterministic generator (splitmix64): the data is the same on
/// every run, the queries are proptest's.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Rows `from..to` (per sender) of `m_rand`: server time roughly
/// increasing with jitter (rows arrive out of order), client time with a
/// per-sender offset and noise; values with ties, NaNs and uint64 above
/// 2^63.
fn rand_rows(db: &mut impl Sink, t: TableId, senders: &[i64], from: i64, to: i64, seed: u64) {
    let mut m = Mix(seed);
    for i in from..to {
        for &s in senders {
            let base = i as f64 * 0.01;
            let v = match m.next() % 10 {
                0 => f64::NAN,
                1 => 7.0, // ties
                _ => (m.unit() - 0.5) * 100.0,
            };
            let u = if m.next().is_multiple_of(3) {
                u64::MAX - m.next() % 5
            } else {
                m.next() % 1000
            };
            db.insert(&Row {
                table: t,
                sender: s,
                seq: i,
                ts_client: base + s as f64 * 0.37 + m.unit() * 0.05,
                ts_server: base + m.unit() * 0.02,
                values: vec![
                    Value::Double(v),
                    Value::Int64((m.next() % 50) as i64 - 25),
                    Value::UInt64(u),
                    Value::UInt32((m.next() % 5000) as u32),
                ],
            })
            .unwrap();
        }
    }
    db.commit().unwrap();
}

fn fill_rand(db: &mut impl Sink) -> (TableId, Vec<i64>) {
    db.ensure_start_time(START).unwrap();
    let senders = vec![
        db.sender_id("node-a").unwrap(),
        db.sender_id("node-b").unwrap(),
        db.sender_id("node-c").unwrap(),
    ];
    let t = db
        .register_schema(&Schema::parse("1 m_rand v:double n:int64 u:uint64 w:uint32").unwrap())
        .unwrap();
    rand_rows(db, t, &senders, 1, ROWS, 42);
    (t, senders)
}

/// A random `points` query.
fn query() -> impl Strategy<Value = String> {
    let bound = prop_oneof![Just(None), (0.0f64..62.0).prop_map(Some)];
    (
        4u32..400,
        bound.clone(),
        bound,
        prop_oneof![Just("server"), Just("client")],
        prop_oneof![Just(""), Just("&sender=node-b"), Just("&sender=1,node-c")],
        prop_oneof![Just("v"), Just("n,u,w"), Just("oml_ts_client,v,u")],
    )
        .prop_map(|(p, a, b, time, sender, fields)| {
            let (a, b) = match (a, b) {
                (Some(a), Some(b)) if a > b => (Some(b), Some(a)),
                x => x,
            };
            let mut q = format!("points={p}&time={time}{sender}&fields=oml_sender_id,{fields}");
            if let Some(a) = a {
                q += &format!("&from={a}");
            }
            if let Some(b) = b {
                q += &format!("&to={b}");
            }
            q
        })
}

/// Tiled and exact answers of random queries are the same bytes.
fn same_as_exact(srv: &Server, domain: &str, cases: u32) {
    let mut runner = TestRunner::new(Config {
        cases,
        ..Config::default()
    });
    runner
        .run(&query(), |q| {
            let path = format!("/api/v1/domains/{domain}/streams/m_rand/rows?{q}");
            let tiled = srv.get(&path);
            let exact = srv.get(&format!("{path}&tiles=false"));
            prop_assert_eq!(tiled.0, 200, "{}", String::from_utf8_lossy(&tiled.1));
            prop_assert_eq!(
                String::from_utf8_lossy(&tiled.1),
                String::from_utf8_lossy(&exact.1),
                "{}",
                q
            );
            Ok(())
        })
        .unwrap();
}

/// The answers came from tiles: each field's set holds every row.
fn tiles_were_used(state: &query::QueryState, rows: u64) {
    let stats = state.tiles.as_ref().unwrap().stats();
    assert!(stats.len() >= 4, "{stats:?}");
    assert!(stats.iter().all(|s| s.3 == rows), "{stats:?}");
}

/// The spike appended after the tiles exist is in the next answer.
fn later_rows_show_up(srv: &Server, domain: &str, append: impl FnOnce()) {
    let path = format!(
        "/api/v1/domains/{domain}/streams/m_rand/rows?points=100&fields=oml_sender_id,v&sender=node-a"
    );
    let (s, before) = srv.json(&path);
    assert_eq!(s, 200, "{before}");
    append();
    let (_, after) = srv.json(&path);
    let (_, exact) = srv.json(&format!("{path}&tiles=false"));
    assert_eq!(after, exact);
    let has = |v: &serde_json::Value| v["rows"].as_array().unwrap().iter().any(|r| r[1] == 1e6);
    assert!(!has(&before) && has(&after), "{after}");
}

fn spike(db: &mut impl Sink, t: TableId, sender: i64) {
    for i in ROWS..ROWS + 300 {
        db.insert(&Row {
            table: t,
            sender,
            seq: i,
            ts_client: i as f64 * 0.01,
            ts_server: i as f64 * 0.01,
            values: vec![
                Value::Double(if i == ROWS + 150 { 1e6 } else { 0.5 }),
                Value::Int64(0),
                Value::UInt64(1),
                Value::UInt32(1),
            ],
        })
        .unwrap();
    }
    db.commit().unwrap();
}

#[test]
fn sqlite_tiles_answer_like_the_exact_query() {
    let dir = tempfile::tempdir().unwrap();
    let mut db =
        store::SqliteStore::open(dir.path(), "tiles", store::SqliteOptions::default()).unwrap();
    let (t, senders) = fill_rand(&mut db);
    let state = sqlite_state(dir.path());
    let srv = Server::start(state.clone());
    same_as_exact(&srv, "tiles", 60);
    tiles_were_used(&state, (ROWS - 1) as u64 * 3);
    later_rows_show_up(&srv, "tiles", || spike(&mut db, t, senders[0]));
    same_as_exact(&srv, "tiles", 10);
}

#[test]
fn postgresql_tiles_answer_like_the_exact_query() {
    let domain = pgtemp::unique_domain("qtiles");
    let (mut db, t, senders) = pgtemp::blocking({
        let d = domain.clone();
        move || {
            let mut db = store::PgStore::open(&pg_options(), &d).unwrap();
            let (t, s) = fill_rand(&mut db);
            (db, t, s)
        }
    });
    let state = pg_state();
    let srv = Server::start(state.clone());
    same_as_exact(&srv, &domain, 40);
    tiles_were_used(&state, (ROWS - 1) as u64 * 3);
    later_rows_show_up(&srv, &domain, || {
        pgtemp::blocking(move || {
            spike(&mut db, t, senders[0]);
            db
        });
    });
    same_as_exact(&srv, &domain, 10);
}

#[test]
fn commits_fold_new_rows_into_the_tiles_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let mut db =
        store::SqliteStore::open(dir.path(), "bg", store::SqliteOptions::default()).unwrap();
    let (t, senders) = fill_rand(&mut db);
    let feed = std::sync::Arc::new(Feed(tokio::sync::watch::channel(0).0));
    let state = sqlite_state(dir.path()).with_feed(feed.clone());
    let srv = Server::start(state.clone());
    // Two fields: one read folds new rows into both sets.
    let (s, _) = srv.get("/api/v1/domains/bg/streams/m_rand/rows?points=100&fields=v,n");
    assert_eq!(s, 200);
    let rows = |st: &query::QueryState| state_rows(st);
    assert_eq!(rows(&state), (ROWS - 1) as u64 * 3);
    spike(&mut db, t, senders[0]);
    feed.0.send_modify(|n| *n += 1);
    let t0 = std::time::Instant::now();
    while rows(&state) < (ROWS - 1) as u64 * 3 + 300 {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(20),
            "the tiles never caught up without a request"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Rows folded into every tile set of `state` (the fewest of any set).
fn state_rows(state: &query::QueryState) -> u64 {
    let stats = state.tiles.as_ref().unwrap().stats();
    assert_eq!(stats.len(), 2, "a set per field");
    stats.iter().map(|s| s.3).min().unwrap()
}
