//! OML4Py 2.10.4 from PyPI against `streamgauge server -b postgresql`,
//! into a PostgreSQL cluster the test starts on loopback: the same tables
//! and values as the reference layout, uint64 exact (NUMERIC(20,0)),
//! `oml_seq` as INT8 (docs/storage.md).
//!
//! Never skipped: a missing python3, oml4py or PostgreSQL fails the test.

mod common;

use std::time::{Duration, Instant};

use common::oml4py::{run_script, start_server, BOOKKEEPING, N};
use pgtemp::{shared, unique_domain};

fn wait_count(domain: &str, table: &str, want: i64) -> postgres::Client {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut got = -1;
    while Instant::now() < deadline {
        if let Ok(mut db) = shared().try_client(domain) {
            got = db
                .query_one(&format!("SELECT count(*) FROM {table}"), &[])
                .map(|r| r.get(0))
                .unwrap_or(-1);
            if got == want {
                return db;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{domain}.{table}: {got} rows, want {want}");
}

#[test]
fn oml4py_streams_are_stored_exactly_in_postgresql() {
    let cluster = shared();
    let domain = unique_domain("py");
    let dir = tempfile::tempdir().unwrap();
    let port = cluster.port.to_string();
    let (_server, listen) = start_server(
        dir.path(),
        &[
            "-b",
            "postgresql",
            "--pg-host",
            "127.0.0.1",
            "--pg-user",
            "oml",
            "--pg-port",
            &port,
        ],
    );
    run_script(dir.path(), &listen, &domain);

    wait_count(&domain, "pyapp_rtt", N);
    let mut db = wait_count(&domain, "pyapp_ctr", N);

    let senders: Vec<(String, i32)> = db
        .query("SELECT name, id FROM _senders", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(senders, [("pynode".to_owned(), 1)]);

    let book: Vec<(String, String)> = db
        .query(
            "SELECT key, value FROM _experiment_metadata WHERE oml_sender_id IS NULL \
             AND key LIKE 'table%' ORDER BY key",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let want: Vec<(String, String)> = BOOKKEEPING
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(book, want);

    let client_meta: Vec<(i32, i64, String, String, String)> = db
        .query(
            "SELECT oml_sender_id, oml_seq, subject, key, value FROM _experiment_metadata \
             WHERE oml_sender_id IS NOT NULL ORDER BY oml_tuple_id",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
        .collect();
    assert_eq!(
        client_meta,
        [
            (1, 0, ".".into(), "hostname".into(), "node-1".into()),
            (1, 0, ".pyapp_rtt.rtt".into(), "unit".into(), "ms".into()),
        ]
    );

    let rtt = db
        .query(
            "SELECT oml_sender_id, oml_seq, seq, rtt, host FROM pyapp_rtt ORDER BY oml_tuple_id",
            &[],
        )
        .unwrap();
    for (i, r) in rtt.iter().enumerate() {
        let i = i as i64;
        let got: (i32, i64, i32, f64, String) = (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4));
        assert_eq!(
            got,
            (
                1,
                i,
                (i - 100) as i32,
                i as f64 * 0.5 + 0.125,
                format!("h\t{i}")
            ),
            "pyapp_rtt row {i}"
        );
    }
    let ctr = db
        .query(
            "SELECT oml_seq, packets::text, label FROM pyapp_ctr ORDER BY oml_tuple_id",
            &[],
        )
        .unwrap();
    for (i, r) in ctr.iter().enumerate() {
        let got: (i64, String, String) = (r.get(0), r.get(1), r.get(2));
        assert_eq!(
            got,
            (i as i64, (u64::MAX - i as u64).to_string(), format!("c{i}")),
            "pyapp_ctr row {i}"
        );
    }
    let ts_ok: i64 = db
        .query_one(
            "SELECT count(*) FROM pyapp_rtt WHERE oml_ts_client >= 0 AND oml_ts_client < 60 \
             AND oml_ts_server >= 0",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(ts_ok, N);
}
