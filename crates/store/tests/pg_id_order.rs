//! Two writers in one PostgreSQL domain (two collection servers behind a
//! load balancer): rows must become visible in `oml_tuple_id` order, so a
//! live tail that reads "the rows after the last id I sent" never moves
//! past an id that a slower transaction commits later.
//!
//! The ids come from the table's sequence, in the order transactions ask
//! for them; the write lock each commit transaction takes before its first
//! id (`store::postgres::lock::WRITES_KEY`) makes them commit in that
//! order too. Without it both tests here fail: a tail skips the rows of
//! the transaction that took lower ids and committed last.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pgtemp as pg_cluster;

use omsp::{Schema, Value};
use pg_cluster::{shared, unique_domain};
use store::{PgOptions, PgStore, Row, Sink, TableId};

/// The bound on each wait: a writer or tail stuck longer fails the test.
const DEADLINE: Duration = Duration::from_secs(30);

fn open(domain: &str) -> PgStore {
    let opts = PgOptions {
        host: "127.0.0.1".into(),
        port: shared().port,
        user: "oml".into(),
        ..PgOptions::default()
    };
    PgStore::open(&opts, domain).unwrap()
}

fn table(db: &mut PgStore) -> TableId {
    let id = db
        .register_schema(&Schema::parse("1 app_m n:int32 s:string").unwrap())
        .unwrap();
    db.commit().unwrap();
    id
}

/// A row of about 100 encoded bytes; `writer` tells whose it is.
fn row(table: TableId, writer: i32, seq: i64) -> Row {
    Row {
        table,
        sender: i64::from(writer),
        seq,
        ts_client: 0.25 * seq as f64,
        ts_server: 1.5,
        values: vec![Value::Int32(writer), Value::String(format!("{seq:0>60}"))],
    }
}

/// A live tail reduced to what matters here: each round reads the rows
/// after the last id it received, in id order, as the query API's tails
/// do on a stream whose ids are dense.
struct IdTail {
    db: postgres::Client,
    last: i64,
    got: Vec<i64>,
}

impl IdTail {
    fn new(domain: &str) -> IdTail {
        IdTail {
            db: shared().client(domain),
            last: 0,
            got: Vec::new(),
        }
    }

    /// One round; how many rows it received.
    fn round(&mut self) -> usize {
        let rows = self
            .db
            .query(
                "SELECT CAST(oml_tuple_id AS int8) FROM app_m WHERE oml_tuple_id > $1 \
                 ORDER BY oml_tuple_id LIMIT 1000",
                &[&(self.last as i32)],
            )
            .unwrap();
        for r in &rows {
            let id: i64 = r.get(0);
            self.got.push(id);
            self.last = id;
        }
        rows.len()
    }

    /// Reads until a round finds nothing more.
    fn drain(&mut self) {
        while self.round() > 0 {}
    }

    /// Checks that the tail received every stored row, each once.
    fn check(&self, domain: &str) {
        let stored: Vec<i64> = shared()
            .client(domain)
            .query(
                "SELECT CAST(oml_tuple_id AS int8) FROM app_m ORDER BY oml_tuple_id",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let got: BTreeSet<i64> = self.got.iter().copied().collect();
        assert_eq!(got.len(), self.got.len(), "the tail received a row twice");
        let missed: Vec<i64> = stored
            .iter()
            .copied()
            .filter(|id| !got.contains(id))
            .collect();
        assert!(
            missed.is_empty(),
            "the tail missed {} of {} rows, from id {} (committed after it had moved past)",
            missed.len(),
            stored.len(),
            missed[0]
        );
        assert_eq!(self.got, stored, "the tail received rows out of id order");
    }
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + DEADLINE;
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Server A holds a large transaction open (its rows streamed while it
/// encodes more: the ids are taken) while server B commits a small one.
/// B must wait for A, so that B's higher ids never become visible before
/// A's lower ones.
#[test]
fn a_writer_with_higher_ids_commits_after_the_one_with_lower_ids() {
    let domain = unique_domain("idorder");
    let mut a = open(&domain);
    let ta = table(&mut a);
    let mut b = open(&domain);
    let tb = table(&mut b);

    // 20 000 rows of A (about 2.4 MB): past the point where its rows are
    // streamed in an open transaction, which takes their ids as they
    // arrive, and several chunks on.
    for i in 1..=20_000 {
        a.insert(&row(ta, 1, i)).unwrap();
    }
    let mut watch = shared().client(&domain);
    wait_until("A's rows taking their ids", || {
        let taken: i64 = watch
            .query_one(
                "SELECT CAST(coalesce(pg_sequence_last_value('app_m_oml_tuple_id_seq'), 0) \
                 AS int8)",
                &[],
            )
            .unwrap()
            .get(0);
        taken >= 1_000
    });

    let b_done = Arc::new(AtomicBool::new(false));
    let writer_b = {
        let done = b_done.clone();
        std::thread::spawn(move || {
            for i in 1..=100 {
                b.insert(&row(tb, 2, i)).unwrap();
            }
            b.commit().unwrap();
            done.store(true, Ordering::SeqCst);
            b
        })
    };
    // B either committed (it did not wait for A) or waits for A's lock.
    wait_until("B's commit to end or wait", || {
        b_done.load(Ordering::SeqCst) || {
            let waiting: i64 = watch
                .query_one(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' \
                     AND NOT granted",
                    &[],
                )
                .unwrap()
                .get(0);
            waiting > 0
        }
    });

    let mut tail = IdTail::new(&domain);
    tail.round();
    a.commit().unwrap();
    let b = writer_b.join().unwrap();
    tail.drain();
    tail.check(&domain);
    assert_eq!(tail.got.len(), 20_100);
    drop((a, b));
}

/// Two writers commit small batches into one table as fast as they can
/// while a tail follows: it must receive every row once, in id order.
#[test]
fn a_tail_gets_every_row_of_two_writers_committing_small_batches() {
    /// Commits per writer, and rows per commit.
    const COMMITS: i64 = 600;
    const BATCH: i64 = 5;
    let domain = unique_domain("idorder");
    let mut first = open(&domain);
    let t = table(&mut first);
    let done = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = [(1, first), (2, open(&domain))]
        .into_iter()
        .map(|(w, mut db)| {
            std::thread::spawn(move || {
                let t = if w == 1 { t } else { table(&mut db) };
                for c in 0..COMMITS {
                    for i in 0..BATCH {
                        db.insert(&row(t, w, c * BATCH + i)).unwrap();
                    }
                    db.commit().unwrap();
                }
            })
        })
        .collect();
    let tail = {
        let (domain, done) = (domain.clone(), done.clone());
        std::thread::spawn(move || {
            let mut tail = IdTail::new(&domain);
            let end = Instant::now() + DEADLINE;
            while !done.load(Ordering::SeqCst) {
                assert!(Instant::now() < end, "the writers did not finish");
                tail.round();
            }
            tail.drain();
            tail
        })
    };
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let tail = tail.join().unwrap();
    tail.check(&domain);
    assert_eq!(tail.got.len() as i64, 2 * COMMITS * BATCH);
}
