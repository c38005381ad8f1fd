//! Live readers of a PostgreSQL domain while a client streams into it: the
//! writer publishes each commit's last id, and the live tail, the tiles'
//! catch-up and the `points=` edges stop their scans there instead of
//! walking through the rows of the writer's next transaction (which the
//! pump inserts before they commit). Whatever the timing, the tail gets
//! every row once and in order, and a plot reaches the last row. Most
//! rows reach the tail from the writer itself (the rows it committed,
//! not read back), and every value of every type is then exactly what a
//! read of the table gives. A tail left open while the domain has no
//! writer (its clients gone) gets every row of the reopened writer, and
//! takes them from the writer's commits.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::text_header;
use omsp::{Content, Encoder, Header, Schema, Value};
use pgtemp::{shared, unique_domain};
use server::{Backend, PgOptions};

/// Rows sent while the readers follow: each carries a 60-byte string, so
/// a commit of a few thousand is streamed by the pump.
const ROWS: i64 = 60_000;

/// The tests count rows rendered from commits, a count for the whole
/// process: one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn row(i: i64) -> String {
    format!("{i}.5\t1\t{i}\t{i}\t{i:0>60}\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_tiles_and_edges_follow_a_streamed_ingest_exactly() {
    let _serial = SERIAL.lock().await;
    let handed = query::rows_from_commits();
    let folded = query::tiles::read::rows_from_commits();
    let t = start_on_pg().await;
    let http = t.server.http_addr().unwrap();
    let addr = t.addr;
    let domain = unique_domain("live");
    tokio::task::spawn_blocking(move || {
        let api = httpkit::client::Client::new(&http.to_string(), "server HTTP", "");
        let stream = format!("/api/v1/domains/{domain}/streams/t_m");
        let mut s = TcpStream::connect(addr).unwrap();
        let mut head = text_header(&domain, "n1", 1_700_000_000, &["1 t_m x:int32 s:string"]);
        head.extend((1..=100).map(row));
        s.write_all(head.as_bytes()).unwrap();
        wait_rows(&api, &stream, 100);

        let mut events = open_tail(&format!("http://{http}{stream}/tail?batch=true"));

        // The plot's tiles are built now, from the table's first rows:
        // every later row reaches them by a catch-up. (Built later, at
        // idle priority under a busy writer, they would read from the
        // table whatever was in by then.)
        api.get(&format!("{stream}/rows?points=400&fields=x"))
            .unwrap();
        // A plot reloading all along (tiles caught up per commit, edges read
        // per request).
        let done = Arc::new(AtomicBool::new(false));
        let plot = {
            let (done, stream) = (done.clone(), stream.clone());
            std::thread::spawn(move || {
                let api = httpkit::client::Client::new(&http.to_string(), "server HTTP", "");
                let mut n = 0;
                while !done.load(Ordering::Relaxed) {
                    api.get(&format!("{stream}/rows?points=400&fields=x"))
                        .unwrap();
                    n += 1;
                }
                n
            })
        };
        let sender = std::thread::spawn(move || {
            let mut chunk = String::new();
            for i in 101..=100 + ROWS {
                chunk.push_str(&row(i));
                if i % 2000 == 0 {
                    s.write_all(chunk.as_bytes()).unwrap();
                    chunk.clear();
                }
            }
            s.write_all(chunk.as_bytes()).unwrap();
            s
        });

        let ids = read_ids(&mut events, ROWS as usize);
        let want: Vec<i64> = (101..=100 + ROWS).collect();
        assert!(ids == want, "the tail got every row once, in order");
        let handed = query::rows_from_commits() - handed;
        eprintln!("rows the tail took from commits: {handed} of {ROWS}");
        assert!(
            handed >= ROWS as u64 / 2,
            "only {handed} rows came from the writer's commits"
        );
        let _s = sender.join().unwrap();
        done.store(true, Ordering::Relaxed);
        assert!(plot.join().unwrap() > 0);

        // The plot now reaches the last row (M4 keeps each bucket's last).
        let page: serde_json::Value = serde_json::from_str(
            &api.get(&format!("{stream}/rows?points=400&fields=x"))
                .unwrap(),
        )
        .unwrap();
        let last = page["rows"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last[0], 100 + ROWS, "{last}");
        // Tiles folded most rows from the writer's commits, and give what
        // the rows themselves give.
        let folded = query::tiles::read::rows_from_commits() - folded;
        eprintln!("rows folded from commits: {folded} of {ROWS}");
        assert!(
            folded >= ROWS as u64 / 2,
            "only {folded} rows were folded from the writer's commits"
        );
        let from_rows: serde_json::Value = serde_json::from_str(
            &api.get(&format!("{stream}/rows?points=400&fields=x&tiles=false"))
                .unwrap(),
        )
        .unwrap();
        assert_eq!(page["rows"], from_rows["rows"]);
    })
    .await
    .unwrap();
    t.server.shutdown().await;
}

/// A server storing into the shared PostgreSQL cluster, with the API on.
async fn start_on_pg() -> common::TestServer {
    let opts = PgOptions {
        host: "127.0.0.1".into(),
        port: shared().port,
        user: "oml".into(),
        ..PgOptions::default()
    };
    common::start_with(move |c| {
        c.backend = Backend::Postgres(opts);
        c.http_listen = Some("127.0.0.1:0".parse().unwrap());
    })
    .await
}

/// Waits until `stream` holds `n` rows.
fn wait_rows(api: &httpkit::client::Client, stream: &str, n: u64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !api
        .get(stream)
        .is_ok_and(|i| serde_json::from_str::<serde_json::Value>(&i).unwrap()["rows"] == n)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "first rows not stored"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The events of the tail at `url`.
fn open_tail(url: &str) -> impl BufRead {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into();
    let resp = agent.get(url).call().unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    BufReader::new(resp.into_body().into_reader())
}

/// A row of every OML type, with values at the edges of each type.
fn all_types(i: i64) -> Vec<Value> {
    vec![
        Value::Int32(-(i as i32) * 1000 - 7),
        Value::UInt32(u32::MAX - i as u32),
        Value::Int64(i64::MIN + i),
        Value::UInt64(u64::MAX - i as u64),
        Value::Double(if i % 7 == 0 { f64::NAN } else { i as f64 / 3.0 }),
        Value::String(format!("é\"\\\n{i}")),
        Value::Blob(vec![0, 255, i as u8]),
        Value::Guid(u64::MAX / 3 + i as u64),
        Value::Bool(i % 2 == 0),
        Value::VecDouble(vec![0.1, i as f64 * 1e300]),
        Value::VecInt64(vec![i64::MIN, i]),
        Value::VecUInt64(vec![u64::MAX, i as u64]),
        Value::VecBool(vec![true, i % 3 == 0]),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_from_commits_are_the_rows_of_the_table_for_every_type() {
    let _serial = SERIAL.lock().await;
    const N: i64 = 4000;
    let t = start_on_pg().await;
    let http = t.server.http_addr().unwrap();
    let addr = t.addr;
    let domain = unique_domain("handed");
    tokio::task::spawn_blocking(move || {
        let api = httpkit::client::Client::new(&http.to_string(), "server HTTP", "");
        let stream = format!("/api/v1/domains/{domain}/streams/t_all");
        let mut h = Header::new(&domain, "n1", "t", 1_700_000_000, Content::Binary);
        h.schemas.push(
            Schema::parse(
                "1 t_all i:int32 u:uint32 l:int64 ul:uint64 d:double s:string b:blob \
                 g:guid f:bool vd:[double] vl:[int64] vul:[uint64] vb:[bool]",
            )
            .unwrap(),
        );
        let mut enc = Encoder::new(Content::Binary);
        let mut head = Vec::new();
        enc.header(&h, &mut head);
        let mut tuples = |from: i64, to: i64| {
            let mut out = Vec::new();
            for i in from..=to {
                let values = all_types(i);
                enc.tuple(
                    &mut out,
                    1,
                    i,
                    i as f64 * 0.25,
                    values.iter().map(Value::as_value_ref),
                )
                .unwrap();
            }
            out
        };
        head.extend(tuples(1, 10));
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&head).unwrap();
        wait_rows(&api, &stream, 10);
        let mut batched = open_tail(&format!("http://{http}{stream}/tail?batch=true"));
        let mut per_row = open_tail(&format!("http://{http}{stream}/tail"));
        let handed = query::rows_from_commits();
        for from in (11..=N).step_by(200) {
            s.write_all(&tuples(from, (from + 199).min(N))).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }

        // The batched tail: one array per row, as `/rows` gives them.
        let mut got = Vec::new();
        let mut line = String::new();
        while got.len() < (N - 10) as usize {
            line.clear();
            assert!(
                batched.read_line(&mut line).unwrap() > 0,
                "tail ended early"
            );
            if let Some(data) = line.trim_end().strip_prefix("data:") {
                let v: serde_json::Value = serde_json::from_str(data.trim()).unwrap();
                // Not the opening `event: fields` (the names).
                if v[0].is_number() {
                    got.push(v);
                }
            }
        }
        // The per-row tail: an object per row, named as `/rows` names them.
        let mut objects = Vec::new();
        while objects.len() < (N - 10) as usize {
            line.clear();
            assert!(
                per_row.read_line(&mut line).unwrap() > 0,
                "tail ended early"
            );
            if let Some(data) = line.trim_end().strip_prefix("data:") {
                objects.push(serde_json::from_str::<serde_json::Value>(data.trim()).unwrap());
            }
        }
        let handed = query::rows_from_commits() - handed;
        assert!(
            handed >= (N as u64 - 10) / 2,
            "only {handed} rows came from the writer's commits"
        );
        let table: serde_json::Value = serde_json::from_str(
            &api.get(&format!("{stream}/rows?after=10&limit=10000"))
                .unwrap(),
        )
        .unwrap();
        let names: Vec<&str> = table["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        let rows = table["rows"].as_array().unwrap();
        assert_eq!(rows.len(), (N - 10) as usize);
        for (k, row) in rows.iter().enumerate() {
            assert_eq!(&got[k], row, "row {k} of the batched tail");
            for (i, name) in names.iter().enumerate().skip(1) {
                assert_eq!(
                    objects[k][name], row[i],
                    "row {k}, field {name} of the per-row tail"
                );
            }
        }
        // Values at the edges came through exactly.
        let ul = names.iter().position(|n| *n == "ul").unwrap();
        assert_eq!(rows[0][ul], serde_json::json!(u64::MAX - 11));
        drop(s);
    })
    .await
    .unwrap();
    t.server.shutdown().await;
}

/// Reads the batched tail `events` until it has handed `n` rows; returns
/// their ids. (`id:` is a batch's last id; each `data:` line a row whose
/// first value is its id.)
fn read_ids(events: &mut impl BufRead, n: usize) -> Vec<i64> {
    let mut ids = Vec::new();
    let mut line = String::new();
    while ids.len() < n {
        line.clear();
        assert!(events.read_line(&mut line).unwrap() > 0, "tail ended early");
        if let Some(data) = line.trim_end().strip_prefix("data:") {
            let v: serde_json::Value = serde_json::from_str(data.trim()).unwrap();
            if let Some(id) = v.get(0).and_then(|x| x.as_i64()) {
                ids.push(id);
            }
        }
    }
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tail_open_while_the_writer_is_closed_takes_the_reopened_writers_commits() {
    let _serial = SERIAL.lock().await;
    const N: i64 = 20_000;
    let t = start_on_pg().await;
    let http = t.server.http_addr().unwrap();
    let addr = t.addr;
    let domain = unique_domain("reopen");
    let stream = format!("/api/v1/domains/{domain}/streams/t_m");
    // A first client stores 100 rows and leaves; the tail, opened while it
    // was there, has read them.
    let mut events = {
        let (domain, stream) = (domain.clone(), stream.clone());
        tokio::task::spawn_blocking(move || {
            let api = httpkit::client::Client::new(&http.to_string(), "server HTTP", "");
            let mut s = TcpStream::connect(addr).unwrap();
            let mut head = text_header(&domain, "n1", 1_700_000_000, &["1 t_m x:int32 s:string"]);
            head.extend((1..=100).map(row));
            s.write_all(head.as_bytes()).unwrap();
            wait_rows(&api, &stream, 100);
            let mut events = open_tail(&format!("http://{http}{stream}/tail?batch=true&after=0"));
            assert_eq!(read_ids(&mut events, 100), (1..=100).collect::<Vec<i64>>());
            drop(s);
            events
        })
        .await
        .unwrap()
    };
    // The domain's writer closes after its last client (its final commit
    // done); the tail stays open on a domain without a writer.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while t.server.writer_threads() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the writer never closed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A second client reopens the writer: every row it commits reaches the
    // tail, and from the writer's commits, not read back from the table.
    tokio::task::spawn_blocking(move || {
        let handed = query::rows_from_commits();
        let mut s = TcpStream::connect(addr).unwrap();
        let mut head = text_header(&domain, "n2", 1_700_000_000, &["1 t_m x:int32 s:string"]);
        head.extend((101..=100 + N).map(row));
        s.write_all(head.as_bytes()).unwrap();
        let ids = read_ids(&mut events, N as usize);
        assert!(
            ids == (101..=100 + N).collect::<Vec<i64>>(),
            "the tail got every row once, in order"
        );
        // Between the close and the reopened writer's first commit no
        // end is published (another server may write the database), so a
        // round then reads the table without a bound; one that runs late
        // (readers run at idle priority: under load, seconds late) reads
        // back the reopened writer's first rows (it loses nothing). Quiet,
        // every row comes from the writer: its first commit publishes
        // every table's end (`a_reopened_stores_first_commit_names_the_
        // tables_it_did_not_write` in the store's tests).
        let handed = query::rows_from_commits() - handed;
        eprintln!("rows the tail took from the reopened writer's commits: {handed} of {N}");
        assert!(
            handed >= N as u64 / 2,
            "only {handed} of {N} rows came from the reopened writer's commits"
        );
        drop(s);
    })
    .await
    .unwrap();
    t.server.shutdown().await;
}
