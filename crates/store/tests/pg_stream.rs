//! Large commits on PostgreSQL: a table's rows are streamed on a second
//! connection while more are encoded (`store::postgres::pump`). Whatever
//! happens to that stream, every accepted row is stored exactly once and
//! the rest of the transaction (other tables, session offsets) with them.

use pgtemp as pg_cluster;

use omsp::{Schema, Value};
use pg_cluster::{shared, unique_domain};
use store::{PgOptions, PgStore, Row, Sink, TableId};

fn open(domain: &str) -> PgStore {
    let opts = PgOptions {
        host: "127.0.0.1".into(),
        port: shared().port,
        user: "oml".into(),
        ..PgOptions::default()
    };
    PgStore::open(&opts, domain).unwrap()
}

/// Rows of about 100 encoded bytes: 20 000 are several chunks past the
/// point where streaming starts.
const ROWS: i64 = 20_000;

fn row(table: TableId, seq: i64) -> Row {
    Row {
        table,
        sender: 1,
        seq,
        ts_client: 0.25 * seq as f64,
        ts_server: 1.5,
        values: vec![
            Value::Int32(seq as i32),
            Value::String(format!("{seq:0>60}")),
        ],
    }
}

fn count(domain: &str, table: &str) -> i64 {
    shared()
        .client(domain)
        .query_one(
            &format!("SELECT count(DISTINCT oml_seq) * 1000000 + count(*) FROM {table}"),
            &[],
        )
        .unwrap()
        .get(0)
}

/// Registers `big` (streamed) and `small`; returns their ids.
fn tables(db: &mut PgStore) -> (TableId, TableId) {
    let big = db
        .register_schema(&Schema::parse("1 app_big n:int32 s:string").unwrap())
        .unwrap();
    let small = db
        .register_schema(&Schema::parse("2 app_small n:int32 s:string").unwrap())
        .unwrap();
    db.commit().unwrap();
    (big, small)
}

fn fill(db: &mut PgStore, big: TableId, small: TableId, from: i64) {
    for i in from..from + ROWS {
        db.insert(&row(big, i)).unwrap();
        if i % 100 == 0 {
            db.insert(&row(small, i)).unwrap();
        }
    }
}

fn offset(domain: &str, session: &str) -> i64 {
    shared()
        .client(domain)
        .query_one(
            "SELECT data_offset FROM _streamgauge_sessions WHERE session = $1",
            &[&session],
        )
        .unwrap()
        .get(0)
}

#[test]
fn a_streamed_commit_stores_every_row_once_with_the_rest_of_its_transaction() {
    let domain = unique_domain("stream");
    let mut db = open(&domain);
    let (big, small) = tables(&mut db);
    // Twice: the second transaction streams on the connection the first
    // handed back.
    for round in 0..2 {
        fill(&mut db, big, small, 1 + round * ROWS);
        db.set_session_offset("s", 1, 1000 + round as u64).unwrap();
        db.commit().unwrap();
        let n = ROWS * (round + 1);
        assert_eq!(count(&domain, "app_big"), n * 1_000_001, "round {round}");
        assert_eq!(count(&domain, "app_small"), n / 100 * 1_000_001);
        assert_eq!(offset(&domain, "s"), 1000 + round);
    }
    assert_eq!(db.refused(), 0);
}

#[test]
fn a_refusal_in_the_streamed_table_drops_only_the_refused_row() {
    let domain = unique_domain("streamrefused");
    let mut db = open(&domain);
    let (big, small) = tables(&mut db);
    shared().psql(
        &domain,
        "ALTER TABLE app_big ADD CONSTRAINT no777 CHECK (n <> 777)",
    );
    fill(&mut db, big, small, 1);
    db.set_session_offset("s", 1, 55).unwrap();
    db.commit().unwrap();
    assert_eq!(db.refused(), 1);
    assert_eq!(count(&domain, "app_big"), (ROWS - 1) * 1_000_001);
    assert_eq!(count(&domain, "app_small"), ROWS / 100 * 1_000_001);
    assert_eq!(offset(&domain, "s"), 55);
    // The store streams again afterwards.
    fill(&mut db, big, small, ROWS + 1);
    db.commit().unwrap();
    assert_eq!(count(&domain, "app_big"), (2 * ROWS - 1) * 1_000_001);
}

#[test]
fn a_streaming_connection_lost_mid_copy_loses_and_doubles_nothing() {
    let domain = unique_domain("streamlost");
    let mut db = open(&domain);
    let (big, small) = tables(&mut db);
    fill(&mut db, big, small, 1);
    // The streaming connection is the one in a COPY; the store's own is
    // idle. Kill it before the commit.
    // (The pump starts it on its own thread: wait for it.)
    let mut pg = shared().client(&domain);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let killed: i64 = pg
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE datname = $1 AND query LIKE 'COPY%' AND pid <> pg_backend_pid()",
                &[&domain],
            )
            .unwrap()
            .get(0);
        if killed == 1 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no streaming connection"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    db.set_session_offset("s", 1, 77).unwrap();
    db.commit().unwrap();
    assert_eq!(db.refused(), 0);
    assert_eq!(count(&domain, "app_big"), ROWS * 1_000_001);
    assert_eq!(count(&domain, "app_small"), ROWS / 100 * 1_000_001);
    assert_eq!(offset(&domain, "s"), 77);
    // A new streaming connection is made for the next large commit.
    fill(&mut db, big, small, ROWS + 1);
    db.commit().unwrap();
    assert_eq!(count(&domain, "app_big"), 2 * ROWS * 1_000_001);
}

fn max_id(domain: &str, table: &str) -> i64 {
    shared()
        .client(domain)
        .query_one(
            &format!("SELECT CAST(max(oml_tuple_id) AS int8) FROM {table}"),
            &[],
        )
        .unwrap()
        .get(0)
}

#[test]
fn committed_ends_name_each_written_table_and_its_last_id() {
    let domain = unique_domain("streamends");
    let mut db = open(&domain);
    let (big, small) = tables(&mut db);
    // A streamed commit (big) with a plain table beside it (small).
    fill(&mut db, big, small, 1);
    db.commit().unwrap();
    // The first time, every table of the domain is named (those the
    // commit did not touch too: see the next test).
    let mut ends = Sink::committed_ends(&mut db).unwrap();
    ends.sort();
    assert_eq!(
        ends,
        vec![
            (
                "_experiment_metadata".to_owned(),
                max_id(&domain, "_experiment_metadata")
            ),
            ("app_big".to_owned(), max_id(&domain, "app_big")),
            ("app_small".to_owned(), max_id(&domain, "app_small")),
        ]
    );
    assert_eq!(ends[1].1, ROWS, "ids are dense from 1");
    // Asked twice, nothing new: nothing to tell.
    assert_eq!(Sink::committed_ends(&mut db), Some(Vec::new()));
    // A small commit to one table names that table only.
    db.insert(&row(small, 7)).unwrap();
    db.commit().unwrap();
    assert_eq!(
        Sink::committed_ends(&mut db),
        Some(vec![("app_small".to_owned(), max_id(&domain, "app_small"))])
    );
    // A commit whose only row was refused: the end stays where it was.
    let before = max_id(&domain, "app_small");
    shared().psql(
        &domain,
        "ALTER TABLE app_small ADD CONSTRAINT no9 CHECK (n <> 9)",
    );
    db.insert(&row(small, 9)).unwrap();
    db.commit().unwrap();
    assert_eq!(db.refused(), 1);
    assert_eq!(
        Sink::committed_ends(&mut db),
        Some(vec![("app_small".to_owned(), before)])
    );
}

#[test]
fn a_reopened_stores_first_commit_names_the_tables_it_did_not_write() {
    // A live reader woken by a commit that did not touch its table scans
    // past that table's committed rows unless it knows where they end; a
    // reopened writer must tell it at once, not after its first commit to
    // that table (which the reader would race, reading its rows back).
    let domain = unique_domain("reopenends");
    let mut db = open(&domain);
    let (big, small) = tables(&mut db);
    fill(&mut db, big, small, 1);
    db.commit().unwrap();
    drop(db);
    let mut db = open(&domain);
    let (big, small) = tables(&mut db);
    db.insert(&row(small, 1)).unwrap();
    db.commit().unwrap();
    let ends = Sink::committed_ends(&mut db).unwrap();
    let end = |t: &str| ends.iter().find(|(n, _)| n == t).map(|(_, e)| *e);
    assert_eq!(end("app_big"), Some(ROWS), "{ends:?}");
    assert_eq!(end("app_small"), Some(max_id(&domain, "app_small")));
    // From then on, only the tables a commit wrote to.
    db.insert(&row(big, 1)).unwrap();
    db.commit().unwrap();
    assert_eq!(
        Sink::committed_ends(&mut db),
        Some(vec![("app_big".to_owned(), ROWS + 1)])
    );
}

/// The `oml_seq` of each row handed over, in order, and its first id.
fn handed(db: &mut PgStore) -> Vec<(String, i64, Vec<i64>)> {
    let mut out: Vec<(String, i64, Vec<i64>)> = Sink::committed_rows(db)
        .iter()
        .map(|r| {
            let mut f = Vec::new();
            let seqs = (0..r.len())
                .map(|i| {
                    assert!(r.fields(i, &mut f));
                    i64::from_be_bytes(f[1].unwrap().try_into().unwrap())
                })
                .collect();
            (r.table.clone(), r.first, seqs)
        })
        .collect();
    out.sort();
    out
}

/// `oml_seq` of the rows of `table` from id `first` on, in id order.
fn stored_seqs(domain: &str, table: &str, first: i64) -> Vec<i64> {
    shared()
        .client(domain)
        .query(
            &format!(
                "SELECT oml_seq FROM {table} WHERE oml_tuple_id >= {first} ORDER BY oml_tuple_id"
            ),
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[test]
fn a_commit_whose_reader_came_while_it_was_open_is_handed_over() {
    let domain = unique_domain("handover_late");
    let mut db = open(&domain);
    let (big, small) = tables(&mut db);
    // Someone followed the domain once, then left.
    db.keep_committed(true);
    db.keep_committed(false);
    fill(&mut db, big, small, 1);
    db.commit().unwrap();
    // Nobody follows while the next transaction fills (and streams); a
    // reader comes before its commit, as the writer tells the store.
    fill(&mut db, big, small, ROWS + 1);
    db.keep_committed(true);
    db.commit().unwrap();
    Sink::committed_ends(&mut db).unwrap();
    let got = handed(&mut db);
    assert_eq!(got.len(), 2, "both tables handed over");
    assert_eq!(got[0].0, "app_big");
    assert_eq!(got[0].2, (ROWS + 1..=2 * ROWS).collect::<Vec<_>>());
    assert_eq!(stored_seqs(&domain, "app_big", got[0].1), got[0].2);
    assert_eq!(got[1].0, "app_small");
    assert_eq!(stored_seqs(&domain, "app_small", got[1].1), got[1].2);
}

#[test]
fn committed_rows_are_handed_over_only_when_their_ids_are_known() {
    let domain = unique_domain("handover");
    let mut db = open(&domain);
    let (big, small) = tables(&mut db);
    db.keep_committed(true);
    // The first commit: its transaction read the tables' ends when it
    // began (streamed, with a plain table beside it), so its rows are
    // handed over too.
    fill(&mut db, big, small, 1);
    db.commit().unwrap();
    Sink::committed_ends(&mut db).unwrap();
    let got = handed(&mut db);
    assert_eq!(got.len(), 2);
    assert_eq!((got[0].1, got[0].2.len() as i64), (1, ROWS));
    // The next one (streamed, with a plain table beside it) fills the ids
    // right after those ends: its rows are handed over, each with its id.
    fill(&mut db, big, small, ROWS + 1);
    db.commit().unwrap();
    Sink::committed_ends(&mut db).unwrap();
    let got = handed(&mut db);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].0, "app_big");
    assert_eq!(got[0].1, ROWS + 1);
    assert_eq!(got[0].2, (ROWS + 1..=2 * ROWS).collect::<Vec<_>>());
    assert_eq!(got[1].0, "app_small");
    assert_eq!(got[1].2.len(), (ROWS / 100) as usize);
    // Which is what the table holds under those ids.
    let stored: Vec<(i64, i64)> = shared()
        .client(&domain)
        .query(
            &format!("SELECT CAST(oml_tuple_id AS int8), oml_seq FROM app_big WHERE oml_tuple_id > {ROWS} ORDER BY 1"),
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let told: Vec<(i64, i64)> = got[0]
        .2
        .iter()
        .enumerate()
        .map(|(i, s)| (got[0].1 + i as i64, *s))
        .collect();
    assert_eq!(stored, told);
    // Another writer's row before our transaction began (a small commit
    // begins at the commit): the ends read at BEGIN are past it, so our
    // rows are still told apart, with their ids.
    db.insert(&row(small, 1)).unwrap();
    shared().psql(
        &domain,
        "INSERT INTO app_small (oml_sender_id, oml_seq, oml_ts_client, oml_ts_server, n, s) VALUES (2, 1, 0, 0, 1, 'x')",
    );
    db.insert(&row(small, 2)).unwrap();
    db.commit().unwrap();
    Sink::committed_ends(&mut db).unwrap();
    let got = handed(&mut db);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1, max_id(&domain, "app_small") - 1);
    assert_eq!(got[0].2, vec![1, 2]);
    assert_eq!(stored_seqs(&domain, "app_small", got[0].1), vec![1, 2]);
    // Another writer's row inside our transaction (the streamed table's
    // began long before the commit): the ids are not ours alone, so
    // nothing is handed over.
    fill(&mut db, big, small, 3 * ROWS + 1);
    shared().psql(
        &domain,
        "INSERT INTO app_big (oml_sender_id, oml_seq, oml_ts_client, oml_ts_server, n, s) VALUES (2, 1, 0, 0, 1, 'x')",
    );
    db.insert(&row(big, 4 * ROWS + 1)).unwrap();
    db.commit().unwrap();
    Sink::committed_ends(&mut db).unwrap();
    assert!(handed(&mut db).iter().all(|(t, ..)| t != "app_big"));
    // A commit with a refused row: not handed over either.
    shared().psql(
        &domain,
        "ALTER TABLE app_small ADD CONSTRAINT no9 CHECK (n <> 9)",
    );
    for n in [8, 9, 10] {
        db.insert(&row(small, n)).unwrap();
    }
    db.commit().unwrap();
    assert_eq!(db.refused(), 1);
    Sink::committed_ends(&mut db).unwrap();
    assert!(handed(&mut db).is_empty());
    // Back to plain commits: handed over again.
    db.insert(&row(small, 11)).unwrap();
    db.commit().unwrap();
    Sink::committed_ends(&mut db).unwrap();
    let got = handed(&mut db);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].2, vec![11]);
    // Switched off: nothing kept.
    db.keep_committed(false);
    db.insert(&row(small, 12)).unwrap();
    db.commit().unwrap();
    Sink::committed_ends(&mut db).unwrap();
    assert!(handed(&mut db).is_empty());
}
