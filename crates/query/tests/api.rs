//! The query API over HTTP on loopback, against real SQLite files and a
//! real PostgreSQL cluster written by the `store` crate.

mod common;

use common::*;
use serde_json::{json, Value};

fn rows(v: &Value) -> &Vec<Value> {
    v["rows"].as_array().unwrap()
}

#[test]
fn discovery_lists_what_exists() {
    let (dir, _db) = sqlite("lab1");
    let srv = Server::start(sqlite_state(dir.path()));
    let (s, v) = srv.json("/api/v1/domains");
    assert_eq!(s, 200);
    assert_eq!(v, json!([{"name": "lab1", "streams": 2}]));
    let (s, v) = srv.json("/api/v1/domains/lab1");
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["start_time"], START);
    assert_eq!(v["streams"], json!(["m_all", "m_wave"]));
    assert_eq!(v["senders"][1], json!({"id": 2, "name": "node-b"}));
    let (s, v) = srv.json("/api/v1/domains/lab1/streams/m_all");
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["rows"], ALL_ROWS);
    assert_eq!(v["fields"][8], json!({"name": "u64", "type": "uint64"}));
    assert_eq!(v["server_time"], json!([0.1, 5.0]));
    let (s, v) = srv.json("/api/v1/domains/lab1/streams");
    assert_eq!(s, 200);
    assert_eq!(v.as_array().unwrap().len(), 2);
    let (s, v) = srv.json("/api/v1/openapi.json");
    assert_eq!(s, 200);
    assert!(
        v["paths"]["/api/v1/domains/{domain}/streams/{stream}/rows"].is_object(),
        "{v}"
    );
}

#[test]
fn errors_name_the_parameter_and_list_what_exists() {
    let (dir, _db) = sqlite("lab1");
    let srv = Server::start(sqlite_state(dir.path()));
    let (s, v) = srv.json("/api/v1/domains/nope");
    assert_eq!(s, 404);
    assert_eq!(v["error"]["code"], "unknown_domain");
    assert_eq!(v["error"]["details"]["domains"], json!(["lab1"]));
    let (s, v) = srv.json("/api/v1/domains/lab1/streams/nope/rows");
    assert_eq!(s, 404);
    assert_eq!(v["error"]["details"]["streams"], json!(["m_all", "m_wave"]));
    let (s, v) = srv.json("/api/v1/domains/lab1/streams/m_all/rows?fields=i32,zz");
    assert_eq!(s, 404);
    assert_eq!(v["error"]["details"]["parameter"], "fields");
    assert!(v["error"]["details"]["fields"]
        .as_array()
        .unwrap()
        .contains(&json!("u64")));
    for (q, param) in [
        ("from=yesterday", "from"),
        ("to=2026-13-01", "to"),
        ("where=i32~3", "where"),
        ("where=i32=abc", "where"),
        ("limit=0", "limit"),
        ("format=xml", "format"),
        ("points=2&fields=dbl", "points"),
        ("after=x", "after"),
    ] {
        let (s, v) = srv.json(&format!("/api/v1/domains/lab1/streams/m_all/rows?{q}"));
        assert_eq!(s, 400, "{q}: {v}");
        assert_eq!(v["error"]["code"], "bad_parameter", "{q}");
        assert_eq!(v["error"]["details"]["parameter"], param, "{q}");
    }
    let (s, v) = srv.json("/api/v1/domains/lab1/streams/m_all/rows?points=100&fields=str");
    assert_eq!(s, 400, "{v}");
}

#[test]
fn values_are_exact_and_postgresql_answers_like_sqlite() {
    let domain = pgtemp::unique_domain("qexact");
    let (dir, _db) = sqlite(&domain);
    let pg = pgtemp::blocking({
        let d = domain.clone();
        move || postgres(&d)
    });
    let lite = Server::start(sqlite_state(dir.path()));
    let post = Server::start(pg_state());
    for q in [
        "",
        "?int64=string",
        "?fields=u64,i64,dbl&where=u64>9223372036854775807",
        "?where=i32>=10,bol=true&sender=node-b&limit=5",
        "?from=1&to=2.5&time=client",
        "?from=2026-11-22T01:29:37Z&to=2026-11-22T01:29:38Z",
        "?where=str=\"a,\\\"b\\\"\"",
        "?format=jsonl&where=i32>1",
        "?format=csv&fields=oml_tuple_id,u64,blb,dbl&where=i32>=0",
        "?fields=oml_ts_client,m4&where=gid=81985529216486895",
    ] {
        let path = format!("/api/v1/domains/{domain}/streams/m_all/rows{q}");
        let (a, b) = (lite.get(&path), post.get(&path));
        assert_eq!(a.0, b.0, "{q}");
        if a.0 == 200 {
            assert_eq!(
                String::from_utf8_lossy(&a.1),
                String::from_utf8_lossy(&b.1),
                "{q}"
            );
        }
    }
    let (s, v) = lite.json(&format!(
        "/api/v1/domains/{domain}/streams/m_all/rows?limit=2"
    ));
    assert_eq!(s, 200, "{v}");
    let r = rows(&v);
    // oml_tuple_id, sender, seq, ts_client, ts_server, i32 u32 i64 u64 dbl str blb gid bol vd
    assert_eq!(r[0][8], json!(u64::MAX));
    assert_eq!(r[0][7], json!(i64::MIN));
    assert_eq!(r[0][9], Value::Null, "NaN is null");
    assert_eq!(r[1][9], Value::Null, "infinity is null");
    assert_eq!(r[0][10], "a,\"b\"\nc");
    assert_eq!(r[0][11], "AAEC/w==");
    assert_eq!(r[1][8], json!(1u64 << 63));
    assert_eq!(r[0][14], "[ 1.5, -2.25 ]");
    assert_eq!(v["next"], "2");
    let (_, v) = lite.json(&format!(
        "/api/v1/domains/{domain}/streams/m_all/rows?limit=2&int64=string"
    ));
    assert_eq!(rows(&v)[1][7], "9007199254740993");
    assert_eq!(rows(&v)[0][8], "18446744073709551615");
    drop(pg);
}

#[test]
fn pages_follow_the_cursor_without_gaps() {
    let (dir, _db) = sqlite("lab1");
    let srv = Server::start(sqlite_state(dir.path()));
    let mut seen = Vec::new();
    let mut after = String::new();
    loop {
        let (s, v) = srv.json(&format!(
            "/api/v1/domains/lab1/streams/m_all/rows?fields=oml_tuple_id,i32&where=i32>2&limit=7{after}"
        ));
        assert_eq!(s, 200, "{v}");
        seen.extend(rows(&v).iter().map(|r| r[0].as_i64().unwrap()));
        match v["next"].as_str() {
            Some(n) => after = format!("&after={n}"),
            None => break,
        }
    }
    // Row 2 holds i32::MAX.
    assert_eq!(seen, (2..=ALL_ROWS).collect::<Vec<_>>());
}

#[test]
fn every_format_carries_the_same_rows() {
    use arrow_array::cast::AsArray;
    use arrow_array::types::UInt64Type;

    let (dir, _db) = sqlite("lab1");
    let srv = Server::start(sqlite_state(dir.path()));
    let base = "/api/v1/domains/lab1/streams/m_all/rows";
    // CSV and JSON lines are byte for byte what `streamgauge export` writes.
    for (format, json) in [("csv", false), ("jsonl", true)] {
        let (s, body) = srv.get(&format!("{base}?format={format}"));
        assert_eq!(s, 200);
        let mut src =
            query::export::Source::open(dir.path().join("lab1.sq3").to_str().unwrap()).unwrap();
        let schema = src
            .streams()
            .unwrap()
            .into_iter()
            .find(|s| s.name == "m_all")
            .unwrap();
        let cols = query::export::columns(&schema);
        let times = query::export::Timestamps::new(Some(START));
        let mut w = query::export::TextWriter::new(Vec::new(), &cols, times, json).unwrap();
        src.rows(&schema, |c| w.row(c)).unwrap();
        assert_eq!(
            String::from_utf8(body).unwrap(),
            String::from_utf8(w.finish().unwrap()).unwrap()
        );
    }
    // Arrow IPC, read back.
    let (s, body) = srv.get(&format!("{base}?format=arrow"));
    assert_eq!(s, 200);
    let reader =
        arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(body), None).unwrap();
    let batches: Vec<_> = reader.map(|b| b.unwrap()).collect();
    assert_eq!(
        batches.iter().map(|b| b.num_rows()).sum::<usize>(),
        ALL_ROWS as usize
    );
    let u64s = batches[0]
        .column_by_name("u64")
        .unwrap()
        .as_primitive::<UInt64Type>();
    assert_eq!(
        (u64s.value(0), u64s.value(1), u64s.value(2)),
        (u64::MAX, 1 << 63, 3)
    );
    // Parquet, read back.
    let (s, body) = srv.get(&format!("{base}?format=parquet&where=i32<3"));
    assert_eq!(s, 200);
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let r = SerializedFileReader::new(bytes::Bytes::from(body)).unwrap();
    assert_eq!(r.metadata().file_metadata().num_rows(), 1);
    let text = r
        .get_row_iter(None)
        .unwrap()
        .map(|row| row.unwrap().to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(text.contains("u64: 18446744073709551615"), "{text}");
}

#[test]
fn downsampling_keeps_extremes_within_the_point_budget() {
    let domain = pgtemp::unique_domain("qm4");
    let (dir, _db) = sqlite(&domain);
    let pg = pgtemp::blocking({
        let d = domain.clone();
        move || postgres(&d)
    });
    let lite = Server::start(sqlite_state(dir.path()));
    let post = Server::start(pg_state());
    let path = format!("/api/v1/domains/{domain}/streams/m_wave/rows?points=200&fields=oml_sender_id,oml_ts_server,v");
    let (s, v) = lite.json(&path);
    assert_eq!(s, 200, "{v}");
    let (_, p) = post.json(&path);
    assert_eq!(v, p, "PostgreSQL computes the same points");
    for sender in [1, 2] {
        let pts: Vec<f64> = rows(&v)
            .iter()
            .filter(|r| r[0] == sender)
            .map(|r| r[2].as_f64().unwrap())
            .collect();
        assert!(pts.len() <= 200 && pts.len() > 100, "{} points", pts.len());
        let all: Vec<f64> = (1..=WAVE_ROWS).map(|i| wave(sender, i)).collect();
        let max = all.iter().cloned().fold(f64::MIN, f64::max);
        let min = all.iter().cloned().fold(f64::MAX, f64::min);
        // (serde_json's default float parsing may be one ulp off.)
        let has = |x: f64| pts.iter().any(|p| (p - x).abs() < 1e-12);
        assert!(has(max) && has(min), "sender {sender}: {min} {max} {pts:?}");
        // Times ascend within a sender.
    }
    let (s, v) = lite.json(&format!("/api/v1/domains/{domain}/streams/m_wave/rows?points=40&fields=v&from=10&to=20&sender=node-a"));
    assert_eq!(s, 200);
    assert!(rows(&v).len() <= 40);
    drop(pg);
}

#[test]
fn a_query_over_budget_is_cancelled_with_503() {
    let domain = pgtemp::unique_domain("qslow");
    let (dir, db) = sqlite(&domain);
    drop(db);
    // A large table, made in SQL.
    let c = rusqlite::Connection::open(dir.path().join(format!("{domain}.sq3"))).unwrap();
    c.execute_batch(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000) \
         INSERT INTO m_wave (oml_sender_id, oml_seq, oml_ts_client, oml_ts_server, v, n) \
         SELECT 1, i, i * 0.001, i * 0.001, (i * 7919) % 1000, i FROM n",
    )
    .unwrap();
    let mut state = sqlite_state(dir.path());
    state.budget = Some(std::time::Duration::from_millis(1));
    let srv = Server::start(state);
    let (s, v) = srv.json(&format!(
        "/api/v1/domains/{domain}/streams/m_wave/rows?points=1000&fields=v"
    ));
    assert_eq!(s, 503, "{v}");
    assert_eq!(v["error"]["code"], "query_timeout");
    let pg = pgtemp::blocking({
        let d = domain.clone();
        move || {
            let db = postgres(&d);
            let mut c = pgtemp::shared().client(&d);
            c.batch_execute(
                "INSERT INTO m_wave (oml_sender_id, oml_seq, oml_ts_client, oml_ts_server, v, n) \
                 SELECT 1, i, i * 0.001, i * 0.001, (i::int8 * 7919) % 1000, i FROM generate_series(1, 300000) i",
            )
            .unwrap();
            db
        }
    });
    let mut state = pg_state();
    state.budget = Some(std::time::Duration::from_millis(1));
    let srv = Server::start(state);
    let (s, v) = srv.json(&format!(
        "/api/v1/domains/{domain}/streams/m_wave/rows?points=1000&fields=v"
    ));
    assert_eq!(s, 503, "{v}");
    assert_eq!(v["error"]["code"], "query_timeout");
    drop(pg);
}

#[test]
fn tokens_limit_what_a_caller_reads() {
    struct Tokens;
    impl httpkit::Authenticator for Tokens {
        fn grants(&self, token: &str) -> Option<httpkit::Grants> {
            (token == "t-lab").then(|| httpkit::Grants {
                read: vec![httpkit::DomainPattern::new("lab*")],
                control: false,
            })
        }
    }
    let (dir, _a) = sqlite("lab1");
    let _b = another_domain(dir.path(), "other");
    let config = httpkit::HttpConfig {
        access: httpkit::Access {
            authenticator: Some(std::sync::Arc::new(Tokens)),
            public: false,
        },
        ..httpkit::HttpConfig::default()
    };
    let srv = Server::start_with(sqlite_state(dir.path()), config);
    let auth = [("Authorization", "Bearer t-lab")];
    let (s, body) = srv.get_with("/api/v1/domains", &auth);
    assert_eq!(s, 200);
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v, json!([{"name": "lab1", "streams": 2}]));
    for path in [
        "/api/v1/domains/other",
        "/api/v1/domains/other/streams/m_all/rows",
        "/api/v1/domains/other/streams/m_all/tail",
    ] {
        let (s, _) = srv.get_with(path, &auth);
        assert_eq!(s, 403, "{path}");
    }
    let (s, _) = srv.get("/api/v1/domains");
    assert_eq!(s, 401);
}

/// A second domain in `dir`.
fn another_domain(dir: &std::path::Path, domain: &str) -> store::SqliteStore {
    let mut db = store::SqliteStore::open(dir, domain, store::SqliteOptions::default()).unwrap();
    fill(&mut db);
    db
}

/// Hostile parameters get 200, 400 or 404, never a database error, and
/// never touch the data (proptest over the HTTP API; the SQL builder's own
/// property test is in `request::predicate`).
#[test]
fn hostile_parameters_are_refused_or_bound() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    let (dir, db) = sqlite("lab1");
    drop(db);
    let srv = Server::start(sqlite_state(dir.path()));
    let strategy = (
        prop_oneof![
            Just("str".to_owned()),
            Just("i32".to_owned()),
            "[a-z_\";' ]{1,12}"
        ],
        prop_oneof![Just("="), Just("<"), Just(">="), Just("!="), Just(" OR ")],
        prop_oneof![
            Just("1; DROP TABLE m_all".to_owned()),
            Just("' OR 1=1 --".to_owned()),
            ".{0,20}"
        ],
    );
    let mut runner = TestRunner::new(Config {
        cases: 48,
        ..Config::default()
    });
    runner
        .run(&strategy, |(field, op, value)| {
            let q = format!("{field}{op}{value}");
            let enc: String = q.bytes().map(|b| format!("%{b:02X}")).collect();
            for param in ["where", "fields", "sender", "from", "after"] {
                let (s, body) = srv.get(&format!(
                    "/api/v1/domains/lab1/streams/m_all/rows?{param}={enc}&limit=1"
                ));
                prop_assert!(
                    [200, 400, 404].contains(&s),
                    "{param}={q}: {s} {}",
                    String::from_utf8_lossy(&body)
                );
            }
            let (s, v) = srv.json("/api/v1/domains/lab1/streams/m_all");
            prop_assert_eq!(s, 200);
            prop_assert_eq!(&v["rows"], &json!(ALL_ROWS));
            Ok(())
        })
        .unwrap();
}

/// A filtered export larger than one PostgreSQL fetch (it is read through
/// a portal, a batch at a time) gives every row, in order, as SQLite does.
#[test]
fn large_filtered_exports_cross_fetch_batches() {
    const N: i64 = 40_000;
    let domain = pgtemp::unique_domain("qfetch");
    let put = |db: &mut dyn store::Sink| {
        db.ensure_start_time(START).unwrap();
        db.sender_id("node-a").unwrap();
        let schema = omsp::Schema::parse("1 big n:int64 x:double").unwrap();
        let table = db.register_schema(&schema).unwrap();
        for i in 1..=N {
            db.insert(&store::Row {
                table,
                sender: 1,
                seq: i,
                ts_client: i as f64 * 0.001,
                ts_server: i as f64 * 0.001,
                values: vec![omsp::Value::Int64(i), omsp::Value::Double(i as f64 / 7.0)],
            })
            .unwrap();
        }
        db.commit().unwrap();
    };
    let dir = tempfile::tempdir().unwrap();
    let mut lite = store::SqliteStore::open(dir.path(), &domain, Default::default()).unwrap();
    put(&mut lite);
    let _pg = pgtemp::blocking({
        let d = domain.clone();
        move || {
            let mut pg = store::PgStore::open(&pg_options(), &d).unwrap();
            put(&mut pg);
            pg
        }
    });
    let lite_srv = Server::start(sqlite_state(dir.path()));
    let pg_srv = Server::start(pg_state());
    let path =
        format!("/api/v1/domains/{domain}/streams/big/rows?format=csv&where=n>=2&fields=n,x");
    let (a, b) = (lite_srv.get(&path), pg_srv.get(&path));
    assert_eq!((a.0, b.0), (200, 200));
    let text = String::from_utf8(b.1).unwrap();
    assert_eq!(text.lines().count() as i64, N, "a header and rows 2..=N");
    assert_eq!(String::from_utf8(a.1).unwrap(), text);
}
