//! Stream tables partitioned by pg_partman (`--pg-partition`),
//! on a real PostgreSQL with the extension: rows land in the partition of
//! their `oml_tuple_id` and read back exactly through the parent, which
//! keeps the reference's columns; partitions are made ahead as ids
//! advance, and rows that outran them are moved out of the default
//! partition; retention drops partitions whose rows are all old while
//! ingest goes on; two servers racing on a new partitioned stream store
//! every row once; the query API reads a partitioned stream as any other.

mod common;
#[path = "pg_scaleout/util.rs"]
mod util;

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use omsp::{Schema, Value};
use pgtemp::{blocking, shared, unique_domain};
use server::{Backend, PgOptions};
use store::postgres::{partition, Partitioning};
use store::{CommitPolicy, PgStore, Row, Sink, TableId};
use util::{at_once, join, one_to, seqs};

/// Ids per partition in these tests.
const ROWS_PER_PART: i64 = 1000;

/// Whether the cluster has pg_partman, set up once in `template1` as
/// `docs/storage.md` says (so every domain database made here has it).
/// Missing extension files are a recorded skip, a failure under CI.
fn partman() -> bool {
    static READY: OnceLock<bool> = OnceLock::new();
    *READY.get_or_init(|| {
        let c = shared();
        let have = c.psql(
            "postgres",
            "SELECT count(*) FROM pg_available_extensions WHERE name = 'pg_partman'",
        );
        if have != "1" {
            testkit::skip(
                "pg_partman is not installed (Debian package postgresql-15-partman; \
                 scripts/setup.sh installs it)",
            );
            return false;
        }
        c.psql("template1", &partition::setup_sql("oml"));
        true
    })
}

/// The test cluster as `oml`, partitioning new stream tables.
fn options(retention: Option<Duration>) -> PgOptions {
    PgOptions {
        host: "127.0.0.1".into(),
        port: shared().port,
        user: "oml".into(),
        partition: Some(Partitioning {
            rows: ROWS_PER_PART,
            premake: 2,
            retention,
            every: Duration::from_millis(20),
        }),
        ..PgOptions::default()
    }
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Rows `seqs` of one sender into `table`, committed (which runs the
/// maintenance) after every `per_commit`.
fn write(
    db: &mut PgStore,
    table: TableId,
    seqs: std::ops::RangeInclusive<i64>,
    ts: f64,
    per_commit: usize,
) {
    let sender = db.sender_id("s1").unwrap();
    let seqs: Vec<i64> = seqs.collect();
    for chunk in seqs.chunks(per_commit) {
        for &seq in chunk {
            db.insert(&Row {
                table,
                sender,
                seq,
                ts_client: seq as f64,
                ts_server: ts,
                values: vec![Value::Int32(seq as i32), Value::Double(seq as f64 / 4.0)],
            })
            .unwrap();
        }
        // Let the maintenance period pass, then commit.
        std::thread::sleep(Duration::from_millis(25));
        assert!(db.commit_if_due(&CommitPolicy::default(), true).unwrap());
    }
}

/// The partitions of `table`: name → (rows in it), default included.
fn partitions(c: &mut postgres::Client, table: &str) -> BTreeMap<String, i64> {
    let mut out: BTreeMap<String, i64> = c
        .query(
            "SELECT k.relname::text FROM pg_inherits i JOIN pg_class k ON k.oid = i.inhrelid \
             WHERE i.inhparent = $1::text::regclass",
            &[&table],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), 0))
        .collect();
    for (name, n) in out.iter_mut() {
        *n = c
            .query_one(&format!("SELECT count(*) FROM \"{name}\""), &[])
            .unwrap()
            .get(0);
    }
    out
}

/// `(oml_seq, x, y)` of every row of `table`, read through the parent.
fn rows(c: &mut postgres::Client, table: &str) -> Vec<(i64, i32, f64)> {
    c.query(
        &format!("SELECT oml_seq, x, y FROM \"{table}\" ORDER BY oml_tuple_id"),
        &[],
    )
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1), r.get(2)))
    .collect()
}

fn expected(seqs: std::ops::RangeInclusive<i64>) -> Vec<(i64, i32, f64)> {
    seqs.map(|s| (s, s as i32, s as f64 / 4.0)).collect()
}

#[test]
fn rows_land_in_their_partitions_and_read_back_exactly() {
    if !partman() {
        return;
    }
    let domain = unique_domain("part_rows");
    let mut db = PgStore::open(&options(None), &domain).unwrap();
    db.ensure_start_time(now()).unwrap();
    let schema = Schema::parse("1 Big_m x:int32 y:double").unwrap();
    let t = db.register_schema(&schema).unwrap();
    // 2 500 rows, 500 per commit: the partitions stay ahead of the ids.
    write(&mut db, t, 1..=2500, 1.0, 500);
    let mut c = shared().client(&domain);
    let parts = partitions(&mut c, "\"Big_m\"");
    assert_eq!(parts["Big_m_default"], 0, "{parts:?}");
    assert_eq!(parts["Big_m_p0"], 999, "ids 1..999");
    assert_eq!(parts["Big_m_p1000"], 1000);
    assert_eq!(parts["Big_m_p2000"], 501);
    // Made ahead: two empty partitions after the one being filled.
    assert_eq!(parts.get("Big_m_p3000"), Some(&0), "{parts:?}");
    assert_eq!(parts.get("Big_m_p4000"), Some(&0), "{parts:?}");
    let misplaced: i64 = c
        .query_one(
            "SELECT count(*) FROM \"Big_m\" \
             WHERE tableoid::regclass::text <> format('%I', 'Big_m_p' || oml_tuple_id / 1000 * 1000)",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(misplaced, 0);

    // One commit of 3 000 rows outruns the partitions made ahead: the
    // rows beyond them go to the default partition, and the maintenance
    // after that commit moves them into partitions of their own.
    write(&mut db, t, 2501..=5500, 2.0, 3000);
    let parts = partitions(&mut c, "\"Big_m\"");
    assert_eq!(parts["Big_m_default"], 0, "{parts:?}");
    assert_eq!(parts["Big_m_p5000"], 501, "ids 5000..=5500: {parts:?}");
    assert!(
        parts.contains_key("Big_m_p7000"),
        "made ahead again: {parts:?}"
    );
    drop(db);

    assert_eq!(rows(&mut c, "Big_m"), expected(1..=5500));
    // The parent has exactly the reference's columns (SELECT * unchanged);
    // the metadata table is not partitioned.
    let columns: Vec<String> = c
        .query(
            "SELECT attname::text FROM pg_attribute WHERE attrelid = '\"Big_m\"'::regclass \
             AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(
        columns,
        [
            "oml_tuple_id",
            "oml_sender_id",
            "oml_seq",
            "oml_ts_client",
            "oml_ts_server",
            "x",
            "y"
        ]
    );
    let kinds: Vec<(String, String)> = c
        .query(
            "SELECT relname::text, relkind::text FROM pg_class \
             WHERE relname IN ('Big_m', '_experiment_metadata') ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        kinds,
        [
            ("Big_m".to_owned(), "p".to_owned()),
            ("_experiment_metadata".to_owned(), "r".to_owned())
        ]
    );

    // Reopened (the catalog sees partitions as tables that are not
    // streams), the stream goes on in the same table.
    let mut db = PgStore::open(&options(None), &domain).unwrap();
    let t = db.register_schema(&schema).unwrap();
    assert_eq!(db.table_name(t), Some("Big_m"));
    write(&mut db, t, 5501..=5600, 3.0, 100);
    drop(db);
    assert_eq!(rows(&mut c, "Big_m"), expected(1..=5600));
}

#[test]
fn retention_drops_old_partitions_and_ingest_goes_on() {
    if !partman() {
        return;
    }
    let domain = unique_domain("part_keep");
    let day = Duration::from_secs(86_400);
    let mut db = PgStore::open(&options(Some(day)), &domain).unwrap();
    // The experiment started three days ago.
    let start = now() - 3 * 86_400;
    db.ensure_start_time(start).unwrap();
    let t = db
        .register_schema(&Schema::parse("1 keep_m x:int32 y:double").unwrap())
        .unwrap();
    // Rows 1..2500 arrived on the first day, 2501..4000 now.
    write(&mut db, t, 1..=2500, 60.0, 500);
    let fresh = (now() - start) as f64;
    write(&mut db, t, 2501..=4000, fresh, 500);

    let mut c = shared().client(&domain);
    let parts = partitions(&mut c, "keep_m");
    assert!(!parts.contains_key("keep_m_p0"), "{parts:?}");
    assert!(!parts.contains_key("keep_m_p1000"), "{parts:?}");
    // p2000 holds old rows 2000..2500 and fresh ones: kept, whole.
    assert_eq!(parts["keep_m_p2000"], 1000, "{parts:?}");
    assert_eq!(rows(&mut c, "keep_m"), expected(2000..=4000));

    // Ingest goes on into the partitions made ahead, and more of them.
    write(&mut db, t, 4001..=6000, fresh, 400);
    drop(db);
    assert_eq!(rows(&mut c, "keep_m"), expected(2000..=6000));
    let parts = partitions(&mut c, "keep_m");
    assert_eq!(parts["keep_m_default"], 0, "{parts:?}");
    assert!(parts.contains_key("keep_m_p7000"), "{parts:?}");
}

#[test]
fn without_partman_in_new_databases_a_plain_role_is_refused_a_superuser_creates_it() {
    if !partman() {
        return;
    }
    // `oml` is no superuser: the start-up check passes because template1
    // has pg_partman, and names the fix when the template lacks it (a
    // database made from template0 stands in for such a template).
    let opts = options(None);
    opts.check_can_create_databases().unwrap();
    let mut maint = shared().client("postgres");
    let domain = unique_domain("part_bare");
    shared().psql(
        "postgres",
        &format!("CREATE DATABASE \"{domain}\" TEMPLATE template0"),
    );
    let err = partition::check_available(&mut maint, || Ok(shared().client(&domain)))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("template1") && err.contains("CREATE EXTENSION IF NOT EXISTS pg_partman"),
        "{err}"
    );
    // A domain database without the extension, which `oml` may not create.
    let err = PgStore::open(&opts, &domain).unwrap_err().to_string();
    assert!(err.contains("pg_partman"), "{err}");
    // A superuser server creates it there, and partitions.
    let superuser = PgOptions {
        user: "postgres".into(),
        ..options(None)
    };
    let mut db = PgStore::open(&superuser, &domain).unwrap();
    db.ensure_start_time(now()).unwrap();
    let t = db
        .register_schema(&Schema::parse("1 su_m x:int32 y:double").unwrap())
        .unwrap();
    write(&mut db, t, 1..=10, 1.0, 10);
    drop(db);
    // The tables are the superuser's: read them as the superuser.
    let mut c = postgres::Config::new()
        .host("127.0.0.1")
        .port(shared().port)
        .user("postgres")
        .dbname(&domain)
        .connect(postgres::NoTls)
        .unwrap();
    assert_eq!(rows(&mut c, "su_m"), expected(1..=10));
    assert_eq!(partitions(&mut c, "su_m")["su_m_p0"], 10);
}

/// A server partitioning new stream tables, optionally with the HTTP API.
async fn start(http: bool) -> common::TestServer {
    let opts = options(None);
    common::start_with(move |c| {
        c.backend = Backend::Postgres(opts);
        if http {
            c.http_listen = Some("127.0.0.1:0".parse().unwrap());
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_race_on_a_new_partitioned_stream() {
    if !blocking(partman) {
        return;
    }
    const ROWS: u64 = 2_000;
    let a = start(true).await;
    let b = start(false).await;
    let domain = unique_domain("part_race");
    // Eight clients at one instant, four on each server, on a new domain
    // and a new stream: one parent, one create_parent, 16 000 ids.
    join(at_once(util::alternating(
        [a.addr, b.addr],
        &domain,
        "s",
        "race_m",
        8,
        ROWS,
    )))
    .await;
    let http = a.server.http_addr().unwrap();
    a.server.shutdown().await;
    b.server.shutdown().await;

    let port = shared().port;
    let got = seqs(port, &domain, "race_m");
    let want: BTreeMap<String, Vec<i64>> =
        (0..8).map(|i| (format!("s{i}"), one_to(ROWS))).collect();
    assert_eq!(got, want);
    let d = domain.clone();
    let (configs, children) = blocking(move || {
        let mut c = shared().client(&d);
        let configs: i64 = c
            .query_one("SELECT count(*) FROM partman.part_config", &[])
            .unwrap()
            .get(0);
        (configs, partitions(&mut c, "race_m").len())
    });
    assert_eq!(configs, 1, "one stream table partitioned once");
    // Partitioned for real (the three made with the parent at least); how
    // many more exist depends on how fast the ingest outran the once-a-
    // second maintenance (9 and 10 both seen), so making them ahead is
    // checked in `rows_land_in_their_partitions_and_read_back_exactly`.
    assert!(
        children >= 3,
        "the stream table has its partitions: {children}"
    );

    // The query API reads the partitioned stream as any other: a server
    // started now (the first one is gone) answers from the same database.
    let q = start(true).await;
    let http2 = q.server.http_addr().unwrap();
    assert_ne!(http, http2);
    let d = domain.clone();
    let (info, page) = tokio::task::spawn_blocking(move || {
        let c = httpkit::client::Client::new(&http2.to_string(), "server HTTP", "");
        let info = c
            .get(&format!("/api/v1/domains/{d}/streams/race_m"))
            .unwrap();
        let page = c
            .get(&format!(
                "/api/v1/domains/{d}/streams/race_m/rows?sender=s3&limit=100000"
            ))
            .unwrap();
        (info, page)
    })
    .await
    .unwrap();
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(info["rows"], 8 * ROWS, "{info}");
    let page: serde_json::Value = serde_json::from_str(&page).unwrap();
    let seq = page["fields"]
        .as_array()
        .unwrap()
        .iter()
        .position(|f| f["name"].as_str().or(f.as_str()) == Some("oml_seq"))
        .expect("oml_seq is a column of the rows");
    let got: Vec<i64> = page["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[seq].as_i64().unwrap())
        .collect();
    assert_eq!(got, one_to(ROWS), "sender s3's rows, in order");
    q.server.shutdown().await;
}
