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
//! rows, in several writes: A's tail, which no commit of its own server
//! wakes any more, must still send each within [`PROMPT`].

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
/// Rows server B alone sends at the end, after server A's client
/// stopped, in each of [`REPEATS`] writes [`APART`] apart.
const LAST: i64 = 20;
const REPEATS: i64 = 3;
/// Longer than a tail's re-read and the freshness of a published end
/// together: each write finds A's tail waiting.
const APART: Duration = Duration::from_millis(1500);
/// The whole test's bound.
const DEADLINE: Duration = Duration::from_secs(60);
/// How soon after each of the last writes is stored both tails must have
/// sent it. A tail on PostgreSQL re-reads every half second while idle,
/// and passes the end its own server published once that is a second old
/// (docs/query-api.md, "Live tail"). Measured 0-0.5 s (ten runs, load
/// average 4-5 on 2 vCPUs); before, 3-6 s here, and 10.5 s and 32.6 s in
/// single runs, while A's reader went through the rows A's writer had
/// handed over one batch per half-second re-read.
const PROMPT: Duration = Duration::from_secs(2);

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

        let total = 1 + 2 * ROWS + REPEATS * LAST;
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
        // alone stores the last rows, in REPEATS commits far enough apart
        // that A's tail is waiting for each. Nothing commits on A any
        // more, so A's tail gets them only by noticing B's commits.
        drop(senders.next());
        let mut b_client = senders.next().unwrap();
        wait_until("both clients' rows", || count(&domain) > 2 * ROWS);
        let mut stored_at = Vec::new();
        for r in 0..REPEATS {
            let from = ROWS + 1 + r * LAST;
            let last: String = (from..from + LAST).map(row).collect();
            b_client.write_all(last.as_bytes()).unwrap();
            wait_until("the last rows", || count(&domain) > 2 * ROWS + (r + 1) * LAST);
            let id = *ids(&domain).last().unwrap();
            stored_at.push((id, Instant::now()));
            std::thread::sleep(APART);
        }
        let got: Vec<Vec<(i64, Instant)>> = tails.into_iter().map(|t| t.join().unwrap()).collect();
        drop(b_client);
        let stored = ids(&domain);
        for (k, got) in got.iter().enumerate() {
            for &(id, at) in &stored_at {
                let sent = got.iter().find(|(g, _)| *g == id).map(|(_, t)| *t);
                let late = sent.map(|t| t.saturating_duration_since(at));
                eprintln!("tail on server {k}: row {id} {late:?} after it was stored");
                assert!(
                    late.is_some_and(|l| l < PROMPT),
                    "the tail on server {k} sent row {id} {late:?} after it was stored (at most {PROMPT:?} wanted)"
                );
            }
            let got: Vec<i64> = got.iter().map(|(id, _)| *id).collect();
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
        let got = tail.join().unwrap();
        done.store(true, Ordering::Relaxed);
        elsewhere.join().unwrap();
        let at = got.last().map(|(_, t)| *t).unwrap();
        let got: Vec<i64> = got.iter().map(|(id, _)| *id).collect();
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

/// A client that joins A's shared reader behind it, after rows A's
/// writer handed over and before rows only B stored, must read B's rows
/// in between from the table: the shared reader sent them before the
/// client subscribed. (A catch-up that stopped at the end of A's handed
/// rows, A's published end being stale, followed the reader from beyond
/// B's rows and never sent them: seen as "row 6002 after 3821" in the
/// first test on a loaded machine.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_joining_behind_the_shared_reader_gets_the_rows_in_between() {
    let (a, b) = (start_on_pg().await, start_on_pg().await);
    let url = format!(
        "http://{}/api/v1/domains/{{}}/streams/t_m/tail",
        a.server.http_addr().unwrap()
    );
    let addrs = [a.addr, b.addr];
    let domain = unique_domain("tailjoin");
    tokio::task::spawn_blocking(move || {
        let url = url.replace("{}", &domain);
        let schema = ["1 t_m x:int32 s:string"];
        let mut on_a = TcpStream::connect(addrs[0]).unwrap();
        let mut head = text_header(&domain, "n1", 1_700_000_000, &schema);
        head.push_str(&row(0));
        on_a.write_all(head.as_bytes()).unwrap();
        wait_until("the first row", || count(&domain) >= 1);
        let first_id = ids(&domain)[0];
        let total = 1 + 3 * LAST;
        // The first client starts A's shared reader, at the end.
        let (ready_tx, ready) = mpsc::channel();
        let first = {
            let url = url.clone();
            std::thread::spawn(move || follow(&url, total, Some(ready_tx)))
        };
        ready.recv().unwrap();
        // A stores rows (its writer hands them to A's readers), then B.
        let from_a: String = (1..=LAST).map(row).collect();
        on_a.write_all(from_a.as_bytes()).unwrap();
        wait_until("A's rows", || count(&domain) > LAST);
        let mut on_b = TcpStream::connect(addrs[1]).unwrap();
        let mut from_b = text_header(&domain, "n2", 1_700_000_000, &schema);
        from_b.extend((1..=LAST).map(row));
        on_b.write_all(from_b.as_bytes()).unwrap();
        wait_until("B's rows", || count(&domain) > 2 * LAST);
        // A's published end goes stale; the shared reader reads B's rows.
        std::thread::sleep(APART);
        // The second client resumes before A's rows, joins the reader and
        // catches up; then B stores more rows.
        let (ready_tx, ready) = mpsc::channel();
        let second = {
            let url = format!("{url}?after={first_id}");
            std::thread::spawn(move || follow(&url, total, Some(ready_tx)))
        };
        ready.recv().unwrap();
        std::thread::sleep(APART);
        let more: String = (LAST + 1..=2 * LAST).map(row).collect();
        on_b.write_all(more.as_bytes()).unwrap();
        wait_until("B's last rows", || count(&domain) > 3 * LAST);
        let stored = ids(&domain);
        let first: Vec<i64> = first.join().unwrap().iter().map(|(id, _)| *id).collect();
        let at = stored.iter().position(|&id| id == first[0]).unwrap();
        assert_eq!(first, stored[at..], "the first client's rows");
        let second: Vec<i64> = second.join().unwrap().iter().map(|(id, _)| *id).collect();
        assert_eq!(second, stored[1..], "the second client's rows, after row 0");
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
/// the ids sent, each with when it came. Tells `ready` once the tail has
/// answered (it is then placed at the end of the stream).
fn follow(url: &str, rows: i64, ready: Option<mpsc::Sender<()>>) -> Vec<(i64, Instant)> {
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
    while got.last().is_none_or(|&(l, _)| l < rows) {
        assert!(
            Instant::now() < end,
            "{url}: the tail stopped at {:?}",
            got.last().map(|(id, _)| id)
        );
        line.clear();
        if events.read_line(&mut line).unwrap() == 0 {
            panic!(
                "{url}: the tail ended at {:?}",
                got.last().map(|(id, _)| id)
            );
        }
        if let Some(id) = line.trim_end().strip_prefix("id:") {
            got.push((id.trim().parse().unwrap(), Instant::now()));
        }
    }
    got
}
