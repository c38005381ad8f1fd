//! Live tails started while commits race their start-up, on PostgreSQL,
//! under CPU load. Two servers write the same stream (as behind a load
//! balancer), so their transactions take ids from one sequence at the
//! same time and rows become visible out of id order; many subscribers
//! (one event per row, batched, a field subset, a filter: four shared
//! readers per server) start while the clients stream rows in small commits. Every
//! subscriber must get every row committed after it started — the rows
//! from its first one on, each once, in id order, with no gap where its
//! own catch-up reads hand over to the shared reader or to the rows the
//! writer hands over — and its first row must be no later than the
//! first one committed after its response began.
//!
//! A third writer, the test itself, keeps taking an id in a transaction
//! it holds open until the servers have committed rows above it (as a
//! server with a long transaction would), so every subscriber meets rows
//! that become visible after higher ones.
//!
//! Rounds repeat with fresh subscribers while the same clients stream
//! on, so each start races a different point of the commit cycles.
//! Without the tail's visibility horizon (`crates/query/src/tail/
//! visible.rs`) every subscriber skips the slow writer's rows (`row 501
//! followed by 503`), and under load whole transactions of the other
//! server (`row 9600 followed by 19801`).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::text_header;
use pgtemp::{shared, unique_domain};
use server::{Backend, PgOptions};

/// Rounds of subscribers.
const ROUNDS: usize = 3;
/// Subscribers started per round.
const SUBSCRIBERS: usize = 8;
/// Rows each subscriber follows after its start before it leaves.
const FOLLOW: i64 = 600;
/// Rows per write of the client (about one commit each under load).
const CHUNK: i64 = 100;
/// Pause between the client's writes.
const PACE: Duration = Duration::from_millis(40);
/// The whole test's bound: a tail that stops delivering fails it here.
const DEADLINE: Duration = Duration::from_secs(60);

fn row(i: i64) -> String {
    format!("{i}.5\t1\t{i}\t{i}\tv{i:0>20}\n")
}

/// The ways of following the stream: each query is its own shared
/// reader, the batched one renders the writer's handed-over rows, and
/// the filtered one (every row matches) reads sparse ids by design.
const QUERIES: [&str; 4] = ["", "?batch=true", "?fields=x", "?where=x%3E%3D-1"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tail_gets_every_row_committed_after_it_started() {
    let began = Instant::now();
    let (a, b) = (start_on_pg().await, start_on_pg().await);
    let https = [a.server.http_addr().unwrap(), b.server.http_addr().unwrap()];
    let addrs = [a.addr, b.addr];
    let domain = unique_domain("tailrace");
    tokio::task::spawn_blocking(move || {
        let streams = https.map(|h| format!("http://{h}/api/v1/domains/{domain}/streams/t_m"));
        let mut s = TcpStream::connect(addrs[0]).unwrap();
        let mut head = text_header(&domain, "n1", 1_700_000_000, &["1 t_m x:int32 s:string"]);
        head.extend((1..=100).map(row));
        s.write_all(head.as_bytes()).unwrap();
        wait_until("the first rows", || {
            shared()
                .try_client(&domain)
                .is_ok_and(|mut db| max_id(&mut db) >= 100)
        });

        // A second server writes the same stream: its transactions and
        // the first one's take ids from the same sequence at the same
        // time, so rows do not become visible in id order.
        let mut s2 = TcpStream::connect(addrs[1]).unwrap();
        s2.write_all(
            text_header(&domain, "n2", 1_700_000_000, &["1 t_m x:int32 s:string"]).as_bytes(),
        )
        .unwrap();

        // The clients stream until every subscriber is done.
        let done = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicI64::new(100));
        let senders: Vec<_> = [s, s2]
            .into_iter()
            .map(|mut s| {
                let (done, sent) = (done.clone(), sent.clone());
                std::thread::spawn(move || {
                    let mut next = 101;
                    while !done.load(Ordering::Relaxed) {
                        let chunk: String = (next..next + CHUNK).map(row).collect();
                        s.write_all(chunk.as_bytes()).unwrap();
                        next += CHUNK;
                        sent.fetch_add(CHUNK, Ordering::Relaxed);
                        // About 12 000 rows/s each: a commit every few
                        // ms, which the tails keep up with on two busy
                        // cores.
                        std::thread::sleep(PACE);
                    }
                    s
                })
            })
            .collect();
        let load: Vec<_> = (0..1)
            .map(|_| {
                let done = done.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !done.load(Ordering::Relaxed) {
                        for i in 0..10_000u64 {
                            x = x.wrapping_mul(31).wrapping_add(i);
                        }
                        std::hint::black_box(x);
                    }
                })
            })
            .collect();

        // A slow writer, as a third server with a long transaction would
        // be: it takes an id, holds it while the servers commit rows
        // above it, then commits.
        let slow = {
            let (done, domain) = (done.clone(), domain.clone());
            std::thread::spawn(move || {
                let mut db = shared().client(&domain);
                let mut held = 0;
                while !done.load(Ordering::Relaxed) {
                    let mut tx = db.transaction().unwrap();
                    let id: i64 = tx
                        .query_one(
                            "INSERT INTO t_m (oml_sender_id, oml_seq, oml_ts_client, \
                             oml_ts_server, x, s) VALUES (1, -1, 0, 0, -1, 'slow') \
                             RETURNING oml_tuple_id::int8",
                            &[],
                        )
                        .unwrap()
                        .get(0);
                    let past = id + 4 * CHUNK;
                    let end = Instant::now() + DEADLINE;
                    while max_id(&mut shared().client(&domain)) < past
                        && !done.load(Ordering::Relaxed)
                    {
                        assert!(Instant::now() < end, "the servers stopped committing");
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    tx.commit().unwrap();
                    held += 1;
                }
                held
            })
        };

        let mut failures = Vec::new();
        for round in 0..ROUNDS {
            let subscribers: Vec<_> = (0..SUBSCRIBERS)
                .map(|k| {
                    let url = format!(
                        "{}/tail{}",
                        streams[k % 2],
                        QUERIES[(k / 2) % QUERIES.len()]
                    );
                    let (domain, sent) = (domain.clone(), sent.clone());
                    std::thread::spawn(move || {
                        // Staggered over the commits of the round.
                        let from = sent.load(Ordering::Relaxed) + k as i64 * CHUNK;
                        wait_until("the client's progress", || {
                            sent.load(Ordering::Relaxed) >= from
                        });
                        follow(&url, &domain, round, k)
                    })
                })
                .collect();
            for s in subscribers {
                if let Err(e) = s.join().unwrap() {
                    eprintln!("{e}");
                    failures.push(e);
                }
            }
            eprintln!(
                "round {round} done at {:.1} s",
                began.elapsed().as_secs_f64()
            );
            assert!(began.elapsed() < DEADLINE, "took too long");
        }
        done.store(true, Ordering::Relaxed);
        for s in senders {
            drop(s.join().unwrap());
        }
        for l in load {
            l.join().unwrap();
        }
        let held = slow.join().unwrap();
        assert!(held > ROUNDS, "the slow writer committed {held} times");
        let holes: i64 = shared()
            .client(&domain)
            .query_one(
                "SELECT count(*) FROM (SELECT oml_tuple_id - lag(oml_tuple_id) \
                 OVER (ORDER BY oml_tuple_id) AS d FROM t_m) AS x WHERE d > 1",
                &[],
            )
            .unwrap()
            .get(0);
        eprintln!("ids no row holds: {holes} runs");
        eprintln!(
            "{} subscribers in {:.1} s",
            ROUNDS * SUBSCRIBERS,
            began.elapsed().as_secs_f64()
        );
        assert!(failures.is_empty(), "{}", failures.join("\n"));
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

fn max_id(db: &mut postgres::Client) -> i64 {
    db.query_opt("SELECT max(oml_tuple_id)::int8 FROM t_m", &[])
        .ok()
        .flatten()
        .and_then(|r| r.get::<_, Option<i64>>(0))
        .unwrap_or(0)
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + DEADLINE;
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// One subscriber: opens the tail, notes the highest id committed once
/// its response began, follows [`FOLLOW`] rows past it and checks what
/// came.
fn follow(url: &str, domain: &str, round: usize, k: usize) -> Result<(), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
    let resp = agent.get(url).call().map_err(|e| e.to_string())?;
    if resp.status() != 200 {
        return Err(format!("{url}: status {}", resp.status()));
    }
    // Every row above this was committed after the tail started.
    let committed = max_id(&mut shared().client(domain));
    let want = committed + FOLLOW;
    let batched = url.contains("batch=true");
    let mut events = BufReader::new(resp.into_body().into_reader());
    let mut ids = Vec::new();
    let mut line = String::new();
    while ids.last().is_none_or(|&l| l < want) {
        line.clear();
        match events.read_line(&mut line) {
            Ok(0) => return Err(format!("{url}: the tail ended")),
            Err(e) => return Err(format!("{url}: {e} after {:?}", ids.last())),
            Ok(_) => {}
        }
        let line = line.trim_end();
        if line.starts_with("event: lagged") || line.starts_with("event: error") {
            let mut data = String::new();
            let _ = events.read_line(&mut data);
            return Err(format!("{url}: {line} {}", data.trim_end()));
        }
        if batched {
            if let Some(data) = line.strip_prefix("data:") {
                let v: serde_json::Value = serde_json::from_str(data.trim()).unwrap();
                if let Some(id) = v.get(0).and_then(|x| x.as_i64()) {
                    ids.push(id);
                }
            }
        } else if let Some(id) = line.strip_prefix("id:") {
            ids.push(id.trim().parse().unwrap());
        }
    }
    let who = format!("round {round} subscriber {k} ({url})");
    let first = ids[0];
    if first > committed + 1 {
        return Err(format!(
            "{who}: first row {first}, but rows from {} on were committed after it started",
            committed + 1
        ));
    }
    if let Some(w) = ids.windows(2).find(|w| w[1] != w[0] + 1) {
        return Err(format!(
            "{who}: row {} followed by {} ({} rows from {first})",
            w[0],
            w[1],
            ids.len()
        ));
    }
    Ok(())
}
