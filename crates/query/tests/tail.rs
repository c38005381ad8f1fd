//! Live tails over HTTP: Server-Sent Events woken by the commit feed,
//! resumed with Last-Event-ID, and closed with `lagged` when a client is
//! too far behind.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use store::{Row, Sink};

/// One SSE event.
#[derive(Debug, Default, Clone)]
struct Event {
    event: String,
    id: String,
    data: String,
}

/// Opens `path` and reads events until `done` says so.
fn events(
    srv: &Server,
    path: &str,
    headers: &[(&str, &str)],
    mut done: impl FnMut(&[Event]) -> bool,
) -> (Vec<Event>, Box<dyn BufRead + Send>) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(20)))
        .build()
        .into();
    let mut req = agent.get(format!("{}{path}", srv.base));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.call().unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let reader: Box<dyn Read + Send> = Box::new(resp.into_body().into_reader());
    let mut r: Box<dyn BufRead + Send> = Box::new(BufReader::new(reader));
    let mut out = Vec::new();
    let mut cur = Event::default();
    let mut line = String::new();
    while !done(&out) {
        line.clear();
        if r.read_line(&mut line).unwrap() == 0 {
            break;
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            if !cur.event.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        } else if let Some(v) = l.strip_prefix("event:") {
            cur.event = v.trim().into();
        } else if let Some(v) = l.strip_prefix("id:") {
            cur.id = v.trim().into();
        } else if let Some(v) = l.strip_prefix("data:") {
            // Several data lines make one value, joined by newlines.
            if !cur.data.is_empty() {
                cur.data.push('\n');
            }
            cur.data.push_str(v.trim());
        }
    }
    (out, r)
}

fn ids(ev: &[Event]) -> Vec<i64> {
    ev.iter()
        .filter(|e| e.event == "row")
        .map(|e| e.id.parse().unwrap())
        .collect()
}

/// The rows of a batched tail (`batch=true`) as objects, checking its
/// framing: one `fields` event first, then `rows` events whose id is the
/// id of their last row (`id_of` reads it from a row).
fn batched_rows(ev: &[Event], id_of: impl Fn(&serde_json::Value) -> i64) -> Vec<serde_json::Value> {
    assert_eq!(ev[0].event, "fields", "{ev:?}");
    let names: Vec<String> = serde_json::from_str(&ev[0].data).unwrap();
    let mut rows = Vec::new();
    for e in ev[1..].iter().filter(|e| e.event == "rows") {
        let batch: Vec<serde_json::Value> = e
            .data
            .split('\n')
            .map(|line| {
                let values: Vec<serde_json::Value> = serde_json::from_str(line).unwrap();
                assert_eq!(values.len(), names.len(), "{line}");
                names.iter().cloned().zip(values).collect()
            })
            .collect();
        assert_eq!(e.id.parse::<i64>().unwrap(), id_of(batch.last().unwrap()));
        rows.extend(batch);
    }
    rows
}

#[test]
fn tail_follows_commits_and_resumes() {
    let (dir, mut db) = sqlite("lab1");
    let feed = Arc::new(Feed(tokio::sync::watch::channel(0).0));
    let mut state = sqlite_state(dir.path()).with_feed(feed.clone());
    // A long poll: rows must arrive because of the feed, not the poll.
    state.poll = Duration::from_secs(30);
    let srv = Server::start(state);
    let path = "/api/v1/domains/lab1/streams/m_all/tail?fields=i32,u64&after=48";
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        let t = db.find_table("m_all").unwrap();
        for i in 51..=53 {
            db.insert(&Row {
                table: t,
                sender: 1,
                seq: i,
                ts_client: i as f64,
                ts_server: i as f64,
                values: all_values(i),
            })
            .unwrap();
        }
        db.commit().unwrap();
        feed.0.send_modify(|n| *n += 1);
        db
    });
    let (ev, _conn) = events(&srv, path, &[], |ev| ids(ev).len() >= 5);
    assert_eq!(ids(&ev), [49, 50, 51, 52, 53]);
    let row: serde_json::Value = serde_json::from_str(&ev[0].data).unwrap();
    assert_eq!(row, serde_json::json!({"i32": 49, "u64": 49}));
    let _db = writer.join().unwrap();
    // Resume after 51 (what a browser's EventSource sends on reconnect).
    let (ev, _conn) = events(
        &srv,
        "/api/v1/domains/lab1/streams/m_all/tail",
        &[("Last-Event-ID", "51")],
        |ev| ids(ev).len() >= 2,
    );
    assert_eq!(ids(&ev), [52, 53]);
}

#[test]
fn a_client_far_behind_is_closed_with_lagged() {
    let (dir, _db) = sqlite("lab1");
    let mut state = sqlite_state(dir.path());
    state.max_lag = 100;
    let srv = Server::start(state);
    let (ev, _) = events(
        &srv,
        "/api/v1/domains/lab1/streams/m_wave/tail?after=0",
        &[],
        |ev| ev.last().is_some_and(|e| e.event == "lagged"),
    );
    let last = ev.last().unwrap();
    let data: serde_json::Value = serde_json::from_str(&last.data).unwrap();
    assert_eq!(data["code"], "lagged");
    assert_eq!(data["resume_after"], 1000);
    assert_eq!(ids(&ev).len(), 1000);
}

#[test]
fn tail_errors_come_before_the_stream() {
    let (dir, _db) = sqlite("lab1");
    let srv = Server::start(sqlite_state(dir.path()));
    let (s, v) = srv.json("/api/v1/domains/lab1/streams/nope/tail");
    assert_eq!(s, 404);
    assert_eq!(v["error"]["code"], "unknown_stream");
    let (s, v) = srv.json("/api/v1/domains/lab1/streams/m_all/tail?where=zz=1");
    assert_eq!(s, 404, "{v}");
    let (s, v) = srv.json("/api/v1/domains/lab1/streams/m_all/tail?batch=yes");
    assert_eq!(s, 400, "{v}");
    assert_eq!(v["error"]["details"]["parameter"], "batch", "{v}");
}

/// Subscribers of the same request share one reader; each still gets every
/// row exactly once and in order, however late it joins while rows are
/// being committed (the join is gapless), and a subscriber of another
/// request gets its own fields.
#[test]
fn subscribers_joining_during_commits_get_every_row_once() {
    const COMMITS: i64 = 40;
    const PER_COMMIT: i64 = 50;
    let (dir, mut db) = sqlite("lab1");
    let feed = Arc::new(Feed(tokio::sync::watch::channel(0).0));
    let mut state = sqlite_state(dir.path()).with_feed(feed.clone());
    state.poll = Duration::from_secs(30);
    let srv = Arc::new(Server::start(state));
    let first = ALL_ROWS + 1;
    let last = ALL_ROWS + COMMITS * PER_COMMIT;
    let want: Vec<i64> = (first..=last).collect();
    let mut subscribers = Vec::new();
    // Five share one reader, one asks for other fields, two for batched
    // events (a reader of their own).
    for k in 0..8u64 {
        let srv = Arc::clone(&srv);
        let (fields, batch) = match k {
            5 => ("u64", false),
            6 | 7 => ("i32", true),
            _ => ("i32", false),
        };
        let n = want.len();
        subscribers.push(std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(25 * (k % 6)));
            let path = format!(
                "/api/v1/domains/lab1/streams/m_all/tail?fields={fields}&after={ALL_ROWS}&batch={batch}"
            );
            let batched = |ev: &[Event]| -> usize {
                ev.iter()
                    .filter(|e| e.event == "rows")
                    .map(|e| e.data.lines().count())
                    .sum()
            };
            let (ev, _conn) = events(&srv, &path, &[], |ev| match batch {
                false => ids(ev).len() >= n,
                true => batched(ev) >= n,
            });
            (fields, batch, ev)
        }));
    }
    let t = db.find_table("m_all").unwrap();
    for c in 0..COMMITS {
        for i in 0..PER_COMMIT {
            let id = first + c * PER_COMMIT + i;
            db.insert(&Row {
                table: t,
                sender: 1,
                seq: id,
                ts_client: id as f64,
                ts_server: id as f64,
                values: all_values(id),
            })
            .unwrap();
        }
        db.commit().unwrap();
        feed.0.send_modify(|n| *n += 1);
        std::thread::sleep(Duration::from_millis(5));
    }
    for s in subscribers {
        let (fields, batch, ev) = s.join().unwrap();
        if batch {
            // Each row carries its id first (the request did not ask for it).
            let rows = batched_rows(&ev, |v| v["oml_tuple_id"].as_i64().unwrap());
            let got: Vec<i64> = rows
                .iter()
                .map(|r| r["oml_tuple_id"].as_i64().unwrap())
                .collect();
            assert_eq!(got, want, "batched: every row once, in order");
            for r in &rows {
                assert_eq!(r[fields], r["oml_tuple_id"], "{r}");
            }
            assert!(ids(&ev).is_empty(), "no row events in a batched tail");
            continue;
        }
        assert_eq!(ids(&ev), want, "{fields}: every row once, in order");
        let rows: Vec<serde_json::Value> = ev
            .iter()
            .filter(|e| e.event == "row")
            .map(|e| serde_json::from_str(&e.data).unwrap())
            .collect();
        for (id, row) in want.iter().zip(&rows) {
            assert_eq!(row, &serde_json::json!({ fields: id }), "row {id}");
        }
    }
}

/// On PostgreSQL a tail reads ids up to one batch past the last row it
/// sent (so it never scans the writer's open transaction): rows committed
/// in one go beyond a batch, and rows behind a gap of ids larger than a
/// batch (as a rolled-back transaction leaves), still all arrive.
#[test]
fn postgres_tail_crosses_large_batches_and_gaps_of_ids() {
    let mut db = postgres("tailgap");
    let mut pg = pg_options().connect("tailgap").unwrap();
    let max = |pg: &mut postgres::Client| -> i64 {
        pg.query_one("SELECT max(oml_tuple_id)::int8 FROM m_all", &[])
            .unwrap()
            .get(0)
    };
    let start = max(&mut pg);
    let feed = Arc::new(Feed(tokio::sync::watch::channel(0).0));
    let mut state = pg_state().with_feed(feed.clone());
    state.poll = Duration::from_secs(30);
    let srv = Server::start(state);
    let path = format!("/api/v1/domains/tailgap/streams/m_all/tail?fields=i32&after={start}");
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        let t = db.find_table("m_all").unwrap();
        let put = |db: &mut store::PgStore, n: i64| {
            for i in 0..n {
                db.insert(&Row {
                    table: t,
                    sender: 1,
                    seq: 1000 + i,
                    ts_client: i as f64,
                    ts_server: i as f64,
                    values: all_values(i),
                })
                .unwrap();
            }
            db.commit().unwrap();
            feed.0.send_modify(|n| *n += 1);
        };
        put(&mut db, 2500);
        // 3000 ids nobody will ever commit.
        pg.batch_execute(
            "SELECT setval(pg_get_serial_sequence('m_all', 'oml_tuple_id'), \
             (SELECT last_value FROM m_all_oml_tuple_id_seq) + 3000)",
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        put(&mut db, 3);
        let end = max(&mut pg);
        (db, end)
    });
    let (ev, _conn) = events(&srv, &path, &[], |ev| ids(ev).len() >= 2503);
    let (_db, end) = writer.join().unwrap();
    let got = ids(&ev);
    assert_eq!(got.len(), 2503);
    assert_eq!(got[0], start + 1);
    assert_eq!(got[2499], start + 2500);
    assert_eq!(got[2500..], [end - 2, end - 1, end]);
    assert!(end - start > 5000, "the gap is there");
}
