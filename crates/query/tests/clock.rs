//! `clock=corrected`: client timestamps minus the server's estimate of
//! each sender's clock offset (`_streamgauge_clock`), in rows, time
//! ranges, downsampling, exports and tails, on SQLite and PostgreSQL.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::time::Duration;

use common::*;
use serde_json::Value;

/// node-a's clock runs 2.5 s ahead of the server's; node-b has no estimate.
const CLOCK: &str =
    "INSERT INTO _streamgauge_clock (sender_id, sender, clock_offset, offset_samples) \
                     VALUES (1, 'node-a', 2.5, 64)";

fn rows(v: &Value) -> &Vec<Value> {
    v["rows"].as_array().unwrap()
}

/// The first row event of a tail from the start.
fn first_tail_row(srv: &Server, path: &str) -> Value {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(20)))
        .build()
        .into();
    let resp = agent.get(format!("{}{path}", srv.base)).call().unwrap();
    let reader: Box<dyn Read + Send> = Box::new(resp.into_body().into_reader());
    let mut r = BufReader::new(reader);
    let mut line = String::new();
    loop {
        line.clear();
        assert!(r.read_line(&mut line).unwrap() > 0, "tail ended");
        if let Some(d) = line.trim_end().strip_prefix("data:") {
            return serde_json::from_str(d.trim()).unwrap();
        }
    }
}

fn check(srv: &Server, domain: &str) {
    let base = format!("/api/v1/domains/{domain}/streams/m_wave/rows");
    let q = "fields=oml_sender_id,oml_ts_client,v&limit=4";
    let (_, raw) = srv.json(&format!("{base}?{q}"));
    let (s, cor) = srv.json(&format!("{base}?{q}&clock=corrected"));
    assert_eq!(s, 200, "{cor}");
    for (r, c) in rows(&raw).iter().zip(rows(&cor)) {
        let off = if r[0] == 1 { 2.5 } else { 0.0 };
        let want = r[1].as_f64().unwrap() - off;
        assert!((c[1].as_f64().unwrap() - want).abs() < 1e-9, "{r} {c}");
        assert_eq!(r[2], c[2]);
    }
    // Ranges and buckets on client time use the corrected time: node-a's
    // rows at raw 3.0 ..= 3.5 are at corrected 0.5 ..= 1.0.
    let (_, v) = srv.json(&format!(
        "{base}?fields=oml_seq&sender=node-a&time=client&from=0.495&to=1.005&clock=corrected"
    ));
    let seqs: Vec<i64> = rows(&v).iter().map(|r| r[0].as_i64().unwrap()).collect();
    assert_eq!(seqs, (300..=350).collect::<Vec<_>>());
    let (s, v) = srv.json(&format!(
        "{base}?points=40&fields=oml_sender_id,oml_ts_client,v&time=client&clock=corrected&sender=node-a&from=0&to=5"
    ));
    assert_eq!(s, 200, "{v}");
    assert!(rows(&v).iter().all(|r| {
        let t = r[1].as_f64().unwrap();
        (0.0..=5.0).contains(&t)
    }));
    // Exports carry the corrected time too.
    let (_, csv) = srv.get(&format!(
        "{base}?format=csv&timestamps=raw&fields=oml_ts_client&sender=node-a&limit=1&clock=corrected"
    ));
    let csv = String::from_utf8(csv).unwrap();
    let t: f64 = csv.lines().nth(1).unwrap().parse().unwrap();
    assert!((t - (0.01 - 2.5)).abs() < 1e-9, "{csv}");
    // And tails.
    let ev = first_tail_row(
        srv,
        &format!("/api/v1/domains/{domain}/streams/m_wave/tail?after=0&fields=oml_sender_id,oml_ts_client&clock=corrected"),
    );
    assert_eq!(ev["oml_sender_id"], 1);
    assert!(
        (ev["oml_ts_client"].as_f64().unwrap() - (0.01 - 2.5)).abs() < 1e-9,
        "{ev}"
    );
    let (s, v) = srv.json(&format!("{base}?clock=skewed"));
    assert_eq!(s, 400);
    assert_eq!(v["error"]["details"]["parameter"], "clock");
}

#[test]
fn corrected_client_time_on_sqlite_and_postgresql() {
    let domain = pgtemp::unique_domain("qclock");
    let (dir, db) = sqlite(&domain);
    drop(db);
    let lite = Server::start(sqlite_state(dir.path()));
    // Without the clock table (an older server's database) nothing changes.
    let p = format!("/api/v1/domains/{domain}/streams/m_wave/rows?limit=3");
    assert_eq!(lite.get(&p), lite.get(&format!("{p}&clock=corrected")));
    let c = rusqlite::Connection::open(dir.path().join(format!("{domain}.sq3"))).unwrap();
    c.execute_batch(store::clock::CREATE_CLOCK).unwrap();
    c.execute_batch(CLOCK).unwrap();
    check(&lite, &domain);
    let pg = pgtemp::blocking({
        let d = domain.clone();
        move || {
            let db = postgres(&d);
            let mut c = pgtemp::shared().client(&d);
            c.batch_execute(store::clock::CREATE_CLOCK).unwrap();
            c.batch_execute(CLOCK).unwrap();
            db
        }
    });
    let post = Server::start(pg_state());
    check(&post, &domain);
    let q = format!("/api/v1/domains/{domain}/streams/m_wave/rows?clock=corrected&time=client&from=-2&to=3&limit=100000");
    assert_eq!(lite.json(&q), post.json(&q), "both back ends agree");
    drop(pg);
}
