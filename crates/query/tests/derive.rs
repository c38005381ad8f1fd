//! `derive=rate` and `gaps=` over HTTP, on SQLite and PostgreSQL: counter
//! rates across restarts with two senders interleaved, page boundaries,
//! downsampled rates, gaps, and the refusals.

mod common;

use common::*;
use omsp::{Schema, Value};
use serde_json::{json, Value as J};
use store::{Row, Sink};

/// Rows of node-a: (server time, bytes). Restarts at 4 s (to 40, not 0)
/// and falls silent from 5 s to 20 s.
const A: [(f64, u64); 8] = [
    (1.0, 1000),
    (2.0, 1100),
    (3.0, 1300),
    (4.0, 40),
    (5.0, 140),
    (20.0, 1640),
    (21.0, 1740),
    (22.0, 1840),
];
/// Rows of node-b: restarts to 0 at 4.5 s.
const B: [(f64, u64); 8] = [
    (1.5, 0),
    (2.5, 10),
    (3.5, 30),
    (4.5, 0),
    (5.5, 5),
    (6.5, 15),
    (7.5, 25),
    (8.5, 35),
];

/// `m_ctr` (`bytes:uint64 pkts:int64 load:double name:string`), rows of
/// both senders in time order; `bytes` declared a counter in bytes.
fn fill_counters(db: &mut impl Sink) {
    db.ensure_start_time(START).unwrap();
    let a = db.sender_id("node-a").unwrap();
    let b = db.sender_id("node-b").unwrap();
    let meta = db.register_schema(&omsp::metadata::schema0()).unwrap();
    for (k, v) in [("unit", "B"), ("kind", "counter")] {
        db.insert(&Row {
            table: meta,
            sender: a,
            seq: 1,
            ts_client: 0.0,
            ts_server: 0.0,
            values: [".m_ctr.bytes", k, v]
                .map(|s| Value::String(s.into()))
                .to_vec(),
        })
        .unwrap();
    }
    let t = db
        .register_schema(
            &Schema::parse("1 m_ctr bytes:uint64 pkts:int64 load:double name:string").unwrap(),
        )
        .unwrap();
    let mut rows: Vec<(i64, f64, u64)> = A.iter().map(|&(t, v)| (a, t, v)).collect();
    rows.extend(B.iter().map(|&(t, v)| (b, t, v)));
    rows.sort_by(|x, y| x.1.total_cmp(&y.1));
    for (i, (s, ts, v)) in rows.into_iter().enumerate() {
        db.insert(&Row {
            table: t,
            sender: s,
            seq: i as i64,
            ts_client: ts,
            ts_server: ts,
            values: vec![
                Value::UInt64(v),
                Value::Int64(v as i64 / 10),
                Value::Double(ts * 2.0),
                Value::String("x".into()),
            ],
        })
        .unwrap();
    }
    db.commit().unwrap();
}

/// `m_beat` (`v:double`): node-a sends a row every second from 0 to 99 s
/// but none between 40 and 60 s nor between 70 and 74 s.
fn fill_beat(db: &mut impl Sink) {
    let a = db.sender_id("node-a").unwrap();
    let t = db
        .register_schema(&Schema::parse("2 m_beat v:double").unwrap())
        .unwrap();
    let times = (0..100).filter(|t| !(41..60).contains(t) && !(71..74).contains(t));
    for (i, ts) in times.enumerate() {
        let ts = f64::from(ts);
        db.insert(&Row {
            table: t,
            sender: a,
            seq: i as i64,
            ts_client: ts,
            ts_server: ts,
            values: vec![Value::Double((ts * 7.0) % 5.0)],
        })
        .unwrap();
    }
    db.commit().unwrap();
}

/// Gaps of downsampled rows: with `points=40` (10 buckets of 9.9 s) the
/// 20 s silence is found exactly, the 4 s one inside a bucket is not
/// (it is on a page); the tiles and the SQL give the same answer.
fn check_beat(srv: &Server, domain: &str) {
    let base = format!("/api/v1/domains/{domain}/streams/m_beat/rows?fields=oml_ts_server,v");
    let (s, page) = srv.json(&format!("{base}&gaps=3"));
    assert_eq!(s, 200, "{page}");
    assert_eq!(
        page["gaps"],
        json!([{"sender": 1, "from": 40.0, "to": 60.0}, {"sender": 1, "from": 70.0, "to": 74.0}])
    );
    let (s, tiles) = srv.json(&format!("{base}&gaps=3&points=40"));
    assert_eq!(s, 200, "{tiles}");
    assert_eq!(
        tiles["gaps"],
        json!([{"sender": 1, "from": 40.0, "to": 60.0}])
    );
    assert!(rows(&tiles).len() < rows(&page).len(), "{tiles}");
    let (_, sql) = srv.json(&format!("{base}&gaps=3&points=40&tiles=false"));
    assert_eq!(tiles, sql, "tiles=true and tiles=false agree");
    // Finer buckets (1.2 s) than the 4 s silence: found with points too.
    let (_, fine) = srv.json(&format!("{base}&gaps=3&points=320"));
    assert_eq!(fine["gaps"], page["gaps"]);
}

/// Expected (sender, time, bytes/s) in id order: null for each sender's first row.
fn expected() -> Vec<(i64, f64, Option<f64>)> {
    let mut out = Vec::new();
    for (s, rows) in [(1, &A), (2, &B)] {
        for (i, &(t, v)) in rows.iter().enumerate() {
            let rate = (i > 0).then(|| {
                let (tp, vp) = rows[i - 1];
                let inc = if v < vp { v } else { v - vp };
                inc as f64 / (t - tp)
            });
            out.push((s, t, rate));
        }
    }
    out.sort_by(|x, y| x.1.total_cmp(&y.1));
    out
}

fn rows(v: &J) -> &Vec<J> {
    v["rows"].as_array().unwrap()
}

fn check(srv: &Server, domain: &str) {
    let base = format!("/api/v1/domains/{domain}/streams/m_ctr");
    let (s, v) = srv.json(&base);
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        v["fields"][5],
        json!({"name": "bytes", "type": "uint64", "unit": "B", "kind": "counter"})
    );
    assert_eq!(v["fields"][6], json!({"name": "pkts", "type": "int64"}));

    // Rates across restarts (to 40 and to 0), two senders interleaved.
    let q = format!("{base}/rows?fields=oml_sender_id,oml_ts_server,bytes,pkts,load&derive=rate");
    let (s, all) = srv.json(&q);
    assert_eq!(s, 200, "{all}");
    assert_eq!(all["derive"], "rate");
    assert_eq!(
        all["fields"][2],
        json!({"name": "bytes", "type": "double", "unit": "B/s", "derive": "rate"})
    );
    assert_eq!(all["fields"][3]["unit"], "1/s");
    assert_eq!(
        all["fields"][0],
        json!({"name": "oml_sender_id", "type": "int64"})
    );
    let want = expected();
    assert_eq!(rows(&all).len(), want.len());
    for (r, (s, t, rate)) in rows(&all).iter().zip(&want) {
        assert_eq!(r[0], *s, "{r}");
        assert_eq!(r[1].as_f64(), Some(*t), "{r}");
        assert_eq!(r[2].as_f64(), *rate, "{r}");
        assert!(rate.is_none() || r[2].as_f64().unwrap() >= 0.0);
        // pkts = bytes / 10 (integer), load grows by 2 per second.
        if rate.is_some() {
            assert!((r[4].as_f64().unwrap() - 2.0).abs() < 1e-9, "{r}");
        } else {
            assert_eq!(r[3], J::Null);
        }
    }
    // Page boundaries do not break the series: the first row of a page
    // has its rate from the row before it.
    let mut paged = Vec::new();
    let mut after = String::new();
    loop {
        let (s, v) = srv.json(&format!("{q}&limit=5{after}"));
        assert_eq!(s, 200, "{v}");
        paged.extend(rows(&v).iter().cloned());
        match v["next"].as_str() {
            Some(n) => after = format!("&after={n}"),
            None => break,
        }
    }
    assert_eq!(&paged, rows(&all));
    // One sender; CSV carries the same rates.
    let (_, v) = srv.json(&format!(
        "{base}/rows?fields=bytes&derive=rate&sender=node-b"
    ));
    let b: Vec<J> = rows(&v).iter().map(|r| r[0].clone()).collect();
    assert_eq!(
        b,
        [
            J::Null,
            json!(10.0),
            json!(20.0),
            json!(0.0),
            json!(5.0),
            json!(10.0),
            json!(10.0),
            json!(10.0)
        ]
    );
    let (s, csv) = srv.get(&format!(
        "{base}/rows?fields=oml_sender_id,bytes&derive=rate&format=csv&sender=node-a"
    ));
    assert_eq!(s, 200);
    let csv = String::from_utf8(csv).unwrap();
    assert_eq!(
        csv.lines().take(5).collect::<Vec<_>>(),
        ["oml_sender_id,bytes", "1,", "1,100", "1,200", "1,40"]
    );

    // points: M4 over the rates. Two buckets (1–11.5 s, 11.5–22 s); in
    // each, per sender: first, last, minimum, maximum of the rate.
    let (s, v) = srv.json(&format!(
        "{base}/rows?fields=oml_sender_id,oml_ts_server,bytes&derive=rate&points=8&gaps=3"
    ));
    assert_eq!(s, 200, "{v}");
    let got: Vec<(i64, f64)> = rows(&v)
        .iter()
        .map(|r| (r[0].as_i64().unwrap(), r[1].as_f64().unwrap()))
        .collect();
    assert_eq!(
        got,
        [
            (1, 2.0),
            (1, 3.0),
            (1, 4.0),
            (1, 5.0),
            (1, 20.0),
            (1, 22.0),
            (2, 2.5),
            (2, 3.5),
            (2, 4.5),
            (2, 8.5)
        ]
    );
    assert_eq!(v["derive"], "rate");
    assert_eq!(v["gaps"], json!([{"sender": 1, "from": 5.0, "to": 20.0}]));
    // With a bucket per row, every row with a rate is kept.
    let (_, v) = srv.json(&format!(
        "{base}/rows?fields=oml_sender_id,bytes&derive=rate&points=400"
    ));
    assert_eq!(
        rows(&v).len(),
        want.iter().filter(|w| w.2.is_some()).count()
    );

    // Gaps without rates: on a page, on the tiles' downsampling and on the SQL's.
    for q in [
        "fields=bytes&gaps=3",
        "fields=bytes&gaps=true&points=8",
        "fields=bytes&gaps=true&points=8&tiles=false",
        "fields=bytes&gaps=2.5&from=2&to=21",
    ] {
        let (s, v) = srv.json(&format!("{base}/rows?{q}"));
        assert_eq!(s, 200, "{q}: {v}");
        assert_eq!(
            v["gaps"],
            json!([{"sender": 1, "from": 5.0, "to": 20.0}]),
            "{q}"
        );
    }
    let (_, v) = srv.json(&format!("{base}/rows?fields=bytes&gaps=20"));
    assert_eq!(v["gaps"], json!([]));
    let (_, v) = srv.json(&format!(
        "{base}/rows?fields=oml_ts_server&gaps=3&timestamps=iso&sender=node-a"
    ));
    assert_eq!(v["gaps"][0]["from"], "2026-11-22T01:29:41.000000Z");
    let (_, v) = srv.json(&format!("{base}/rows?fields=bytes"));
    assert!(v.get("gaps").is_none() && v.get("derive").is_none(), "{v}");

    // Refusals name the parameter (and the field).
    for (q, param, says) in [
        ("derive=foo", "derive", "rate"),
        ("derive=rate&fields=bytes,name", "derive", "\"name\""),
        ("derive=rate&fields=oml_seq", "derive", "numeric"),
        ("gaps=0.5", "gaps", "above 1"),
        ("gaps=1", "gaps", "above 1"),
        ("gaps=yes", "gaps", "above 1"),
        ("gaps=3&format=csv", "gaps", "format=json"),
    ] {
        let (s, v) = srv.json(&format!("{base}/rows?{q}"));
        assert_eq!(s, 400, "{q}: {v}");
        assert_eq!(v["error"]["code"], "bad_parameter", "{q}");
        assert_eq!(v["error"]["details"]["parameter"], param, "{q}");
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.contains(says), "{q}: {msg}");
    }
    // Without fields=, rates are given for the numeric fields only.
    let (s, v) = srv.json(&format!("{base}/rows?derive=rate&limit=1"));
    assert_eq!(s, 200, "{v}");
    let names: Vec<&str> = v["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names[5..], ["bytes", "pkts", "load"]);
    for q in ["derive=rate", "gaps=3"] {
        let (s, v) = srv.json(&format!("{base}/tail?{q}"));
        assert_eq!(s, 400, "{q}: {v}");
        assert!(v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not supported on tails"));
    }
}

#[test]
fn rates_and_gaps_on_sqlite_and_postgresql() {
    let domain = pgtemp::unique_domain("qrate");
    let dir = tempfile::tempdir().unwrap();
    let mut db =
        store::SqliteStore::open(dir.path(), &domain, store::SqliteOptions::default()).unwrap();
    fill_counters(&mut db);
    fill_beat(&mut db);
    let lite = Server::start(sqlite_state(dir.path()));
    check(&lite, &domain);
    check_beat(&lite, &domain);
    let pg = pgtemp::blocking({
        let d = domain.clone();
        move || {
            let mut db = store::PgStore::open(&pg_options(), &d).unwrap();
            fill_counters(&mut db);
            fill_beat(&mut db);
            db
        }
    });
    let post = Server::start(pg_state());
    check(&post, &domain);
    check_beat(&post, &domain);
    for q in [
        "fields=oml_sender_id,oml_ts_server,bytes,pkts,load&derive=rate&gaps=true",
        "derive=rate&points=8&time=client&gaps=2",
        "fields=bytes&points=8&time=client&gaps=2",
        "fields=bytes,load&derive=rate&format=jsonl&after=5",
    ] {
        let p = format!("/api/v1/domains/{domain}/streams/m_ctr/rows?{q}");
        assert_eq!(lite.get(&p), post.get(&p), "{q}: both back ends agree");
    }
    drop((db, pg));
}
