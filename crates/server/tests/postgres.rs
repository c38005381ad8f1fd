//! The collection server storing into a real PostgreSQL server (a cluster
//! the tests start on loopback): reference captures, reopening, schema
//! conflicts, concurrent clients, unsigned values beyond INT8, visibility.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::pg_cluster::unique_domain;
use common::postgres as pg;
use common::reference::{alltypes_fixes, assert_matches, exact_u64, onemp_fixes, Fix};
use server::{Backend, Server, ServerConfig};

/// The binary capture's NaN double, which SQLite (and so the reference
/// dump) can only store as NULL; PostgreSQL keeps it.
fn nan_kept(mut fixes: Vec<Fix>) -> Vec<Fix> {
    fixes.push(Fix {
        table: "vec_scalars",
        row: 2,
        column: "dbl",
        reference: serde_json::Value::Null,
        correct: serde_json::json!("NaN"),
    });
    fixes
}

async fn check(capture: (&str, &str), rows: (&str, &str), fixes: Vec<Fix>) {
    let domain = unique_domain("replay");
    let t = pg::start().await;
    let bytes = pg::with_domain(&common::vector(capture.0, capture.1), &domain);
    common::replay_async(t.addr, bytes).await;
    t.server.shutdown().await;

    let expected = common::vector_json(rows.0, rows.1);
    let expected = expected["vecdomain"].as_object().unwrap().clone();
    let got = pg::dump(&domain);
    let reference = expected.clone();
    assert_matches(expected, &got, &fixes, |table, want| {
        pg::expected_types(&reference, table, want)
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alltypes_binary_matches_reference() {
    check(
        ("0001-ref-alltypes.bin", "ref-alltypes.bin"),
        ("0001-ref-alltypes.rows.json", "ref-alltypes.rows.json"),
        nan_kept(alltypes_fixes(exact_u64)),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alltypes_text_matches_reference() {
    check(
        ("0001-ref-alltypes.txt", "ref-alltypes.txt"),
        (
            "0001-ref-alltypes.rows-text.json",
            "ref-alltypes.rows-text.json",
        ),
        alltypes_fixes(exact_u64),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn onemp_binary_matches_reference() {
    check(
        ("0002-ref-onemp.bin", "ref-onemp.bin"),
        ("0002-ref-onemp.rows.json", "ref-onemp.rows.json"),
        onemp_fixes(exact_u64),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn onemp_text_matches_reference() {
    check(
        ("0002-ref-onemp.txt", "ref-onemp.txt"),
        ("0002-ref-onemp.rows-text.json", "ref-onemp.rows-text.json"),
        onemp_fixes(exact_u64),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopening_appends_keeps_start_time_and_renames_conflicts() {
    let domain = unique_domain("reopen");
    let t = pg::start().await;
    let first = common::text_header(&domain, "a", 1000, &["1 app_m x:int32"]) + "1.5\t1\t1\t10\n";
    common::replay_async(t.addr, first.into_bytes()).await;
    // The database was closed (last client left); a client starting 100 s
    // later declares app_m with another type.
    let second =
        common::text_header(&domain, "b", 1100, &["1 app_m x:double"]) + "2.5\t1\t1\t0.5\n";
    common::replay_async(t.addr, second.into_bytes()).await;
    let third = common::text_header(&domain, "a", 1000, &["1 app_m x:int32"]) + "3.5\t1\t2\t30\n";
    common::replay_async(t.addr, third.into_bytes()).await;
    t.server.shutdown().await;

    let start = pg::query(
        &domain,
        "SELECT value FROM _experiment_metadata WHERE key = 'start_time'",
        |r| r.get::<_, String>(0),
    );
    assert_eq!(start, ["1000"]);
    let m = pg::query(
        &domain,
        "SELECT oml_sender_id, oml_seq, oml_ts_client, x FROM app_m ORDER BY oml_tuple_id",
        |r| {
            (
                r.get::<_, i32>(0),
                r.get::<_, i64>(1),
                r.get::<_, f64>(2),
                r.get::<_, i32>(3),
            )
        },
    );
    assert_eq!(m, [(1, 1, 1.5, 10), (1, 2, 3.5, 30)]);
    let m2 = pg::query(
        &domain,
        "SELECT oml_sender_id, oml_ts_client, x FROM app_m_2",
        |r| (r.get::<_, i32>(0), r.get::<_, f64>(1), r.get::<_, f64>(2)),
    );
    assert_eq!(m2, [(2, 102.5, 0.5)], "rebased to the first start time");
    let rows = pg::query(
        &domain,
        "SELECT value FROM _experiment_metadata WHERE key = 'table_app_m_2'",
        |r| r.get::<_, String>(0),
    );
    assert_eq!(rows, ["1 app_m_2 x:double"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_clients_and_huge_unsigned_values() {
    let domain = unique_domain("many");
    let t = pg::start().await;
    let (clients, rows) = (8u64, 2000u64);
    let mut threads = Vec::new();
    for c in 0..clients {
        let (addr, domain) = (t.addr, domain.clone());
        threads.push(std::thread::spawn(move || {
            let mut input =
                common::text_header(&domain, &format!("c{c}"), 1, &["1 app_u n:int32 u:uint64"]);
            for i in 0..rows {
                // Client 0 sends values the reference's BIGINT cannot hold:
                // there one such INSERT aborts everyone's open transaction.
                let u = if c == 0 { u64::MAX - i } else { i };
                input.push_str(&format!("0.5\t1\t{i}\t{c}\t{u}\n"));
            }
            common::replay(addr, input.as_bytes());
        }));
    }
    for th in threads {
        th.join().unwrap();
    }
    t.server.shutdown().await;
    let per_client = pg::query(
        &domain,
        "SELECT n, count(*), count(DISTINCT oml_sender_id), max(u)::text FROM app_u \
         GROUP BY n ORDER BY n",
        |r| {
            (
                r.get::<_, i32>(0),
                r.get::<_, i64>(1),
                r.get::<_, i64>(2),
                r.get::<_, String>(3),
            )
        },
    );
    assert_eq!(per_client.len(), clients as usize);
    for (c, (n, count, senders, max)) in per_client.into_iter().enumerate() {
        assert_eq!((n, count, senders), (c as i32, rows as i64, 1));
        let want = if c == 0 { u64::MAX } else { rows - 1 };
        assert_eq!(max, want.to_string());
    }
    let senders = pg::count(&domain, "SELECT count(*) FROM _senders");
    assert_eq!(senders, clients as i64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_are_visible_within_a_second_while_the_client_stays_connected() {
    let domain = unique_domain("live");
    let t = pg::start().await;
    let mut s = TcpStream::connect(t.addr).unwrap();
    let mut input = common::text_header(&domain, "s", 1, &["1 a_b x:int32"]);
    for i in 0..100 {
        input.push_str(&format!("0.5\t1\t{i}\t{i}\n"));
    }
    s.write_all(input.as_bytes()).unwrap();
    let sent = Instant::now();
    let d = domain.clone();
    let n = tokio::task::spawn_blocking(move || loop {
        let n = pg::count(&d, "SELECT count(*) FROM a_b");
        if n == 100 || sent.elapsed() > Duration::from_secs(1) {
            return n;
        }
        std::thread::sleep(Duration::from_millis(20));
    })
    .await
    .unwrap();
    assert_eq!(n, 100);
    drop(s);
    t.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_that_cannot_create_databases_is_refused_at_start() {
    let mut config = ServerConfig::new(".");
    config.listen = vec!["127.0.0.1:0".parse().unwrap()];
    config.backend = Backend::Postgres(pg::options("nocreate"));
    let err = Server::start(config).await.unwrap_err().to_string();
    assert!(err.contains("may not create databases"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resumable_sessions_commit_their_offset_with_the_rows() {
    use common::resume::{ack_until, open_for, tuples};
    let domain = unique_domain("resume");
    let t = pg::start().await;
    let addr = t.addr;
    let d = domain.clone();
    tokio::task::spawn_blocking(move || {
        let first = tuples(0, 400);
        let (mut s, mut r, resume) = open_for(addr, &d, "pg-1", 0);
        assert_eq!(resume, 0);
        s.write_all(&first).unwrap();
        assert_eq!(ack_until(&mut r, first.len() as u64), first.len() as u64);
        drop((s, r));
        let (mut s, mut r, resume) = open_for(addr, &d, "pg-1", 0);
        assert_eq!(resume, first.len() as u64);
        let more = tuples(400, 500);
        s.write_all(&more).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let end = (first.len() + more.len()) as u64;
        assert_eq!(ack_until(&mut r, end), end);
    })
    .await
    .unwrap();
    t.server.shutdown().await;
    let seqs = pg::query(
        &domain,
        "SELECT oml_seq FROM t_m ORDER BY oml_tuple_id",
        |r| r.get::<_, i64>(0),
    );
    assert_eq!(seqs, (0..500).collect::<Vec<_>>());
    let stored = pg::query(
        &domain,
        "SELECT data_offset FROM _streamgauge_sessions WHERE session = 'pg-1'",
        |r| r.get::<_, i64>(0),
    );
    assert_eq!(stored.len(), 1);
}
