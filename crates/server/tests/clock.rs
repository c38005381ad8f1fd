//! Clock awareness: a sender whose clock runs 2.5 s ahead of the server's
//! (faked through its `start-time` and timestamps) is recorded in
//! `_streamgauge_clock` with an offset of 2.5 s ± 0.2 s, with its
//! `_client_clock` report beside it, in SQLite and in PostgreSQL; the
//! report is also an ordinary row of the `_client_clock` table.

mod common;

use std::time::{SystemTime, UNIX_EPOCH};

use common::pg_cluster::unique_domain;
use common::postgres as pg;

/// How far ahead the fake sender's clock is.
const SHIFT: f64 = 2.5;

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// A text stream from a sender whose clock reads `SHIFT` seconds ahead:
/// one measurement, then one `_client_clock` report, stamped now.
fn shifted_stream(domain: &str) -> Vec<u8> {
    let now = unix_now() + SHIFT;
    let start = now.floor() as i64;
    let ts = now - start as f64;
    format!(
        "protocol: 5\ndomain: {domain}\nstart-time: {start}\nsender-id: fake\napp-name: fake\n\
         schema: 0 _experiment_metadata subject:string key:string value:string \n\
         schema: 1 fake_m x:int32 \n\
         schema: 2 _client_clock source:string daemon:string synchronized:int32 \
         offset:double maxerror:double esterror:double \n\
         content: text\n\n\
         {ts:.6}\t1\t1\t42\n\
         {ts:.6}\t2\t1\tntp\tchronyd\t1\t0.000125\t0.0205\t0.00025\n"
    )
    .into_bytes()
}

/// Columns read back from `_streamgauge_clock`.
#[derive(Debug)]
struct Stored {
    sender: String,
    offset: f64,
    source: String,
    daemon: String,
    synchronized: i32,
    maxerror: f64,
}

const SELECT: &str = "SELECT sender, clock_offset, source, daemon, synchronized, maxerror \
     FROM _streamgauge_clock WHERE sender_id = 1";

fn check(s: &Stored) {
    assert_eq!(s.sender, "fake");
    assert!((s.offset - SHIFT).abs() < 0.2, "offset {s:?}");
    assert_eq!(
        (s.source.as_str(), s.daemon.as_str(), s.synchronized),
        ("ntp", "chronyd", 1)
    );
    assert!((s.maxerror - 0.0205).abs() < 1e-12);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_records_the_offset_and_the_report() {
    let t = common::start().await;
    common::replay_async(t.addr, shifted_stream("clk")).await;
    t.server.shutdown().await;

    let db = common::open_db(t.dir.path(), "clk");
    let s = db
        .query_row(SELECT, [], |r| {
            Ok(Stored {
                sender: r.get(0)?,
                offset: r.get(1)?,
                source: r.get(2)?,
                daemon: r.get(3)?,
                synchronized: r.get(4)?,
                maxerror: r.get(5)?,
            })
        })
        .unwrap();
    check(&s);
    let reports: i64 = db
        .query_row("SELECT count(*) FROM _client_clock", [], |r| r.get(0))
        .unwrap();
    assert_eq!(reports, 1, "the report is an ordinary stream row too");
    // Not a stream table: no bookkeeping row.
    let bookkeeping: i64 = db
        .query_row(
            "SELECT count(*) FROM _experiment_metadata WHERE key = 'table__streamgauge_clock'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(bookkeeping, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_records_the_offset_and_the_report() {
    let domain = unique_domain("clock");
    let t = pg::start().await;
    common::replay_async(t.addr, shifted_stream(&domain)).await;
    t.server.shutdown().await;

    let rows = pg::query(&domain, SELECT, |r| Stored {
        sender: r.get(0),
        offset: r.get(1),
        source: r.get(2),
        daemon: r.get(3),
        synchronized: r.get(4),
        maxerror: r.get(5),
    });
    assert_eq!(rows.len(), 1);
    check(&rows[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_without_start_time_gets_no_estimate() {
    let t = common::start().await;
    let now = unix_now();
    let stream = format!(
        "protocol: 5\ndomain: clk2\nsender-id: nots\napp-name: a\n\
         schema: 1 a_m x:int32 \ncontent: text\n\n{now:.3}\t1\t1\t1\n"
    );
    common::replay_async(t.addr, stream.into_bytes()).await;
    t.server.shutdown().await;
    let db = common::open_db(t.dir.path(), "clk2");
    let tables: i64 = db
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = '_streamgauge_clock'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(tables, 0);
}
