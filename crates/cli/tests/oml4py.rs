//! A real third-party client: OML4Py 2.10.4 from PyPI (installed by
//! `scripts/setup.sh`) sends several measurement points and metadata to the
//! real `streamgauge server` binary; the SQLite tables must hold exactly
//! what the script injected, in the reference layout.
//!
//! If python3 or oml4py is missing, or the script fails, this test fails:
//! it is never skipped.

mod common;

use common::oml4py::{run_script, start_server, wait_rows, BOOKKEEPING, N};
use rusqlite::types::Value as Sql;

#[test]
fn oml4py_streams_are_stored_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, port) = start_server(dir.path(), &[]);
    run_script(dir.path(), &port, "pydomain");

    let path = dir.path().join("pydomain.sq3");
    wait_rows(&path, "SELECT count(*) FROM pyapp_ctr", N);
    wait_rows(&path, "SELECT count(*) FROM pyapp_rtt", N);
    let db = rusqlite::Connection::open(&path).unwrap();

    let senders: Vec<(String, i64)> = db
        .prepare("SELECT name, id FROM _senders")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(senders, [("pynode".to_owned(), 1)]);

    let meta = |sql: &str| -> Vec<Vec<Sql>> {
        let mut stmt = db.prepare(sql).unwrap();
        let cols = stmt.column_count();
        stmt.query_map([], |r| (0..cols).map(|i| r.get::<_, Sql>(i)).collect())
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let text = |s: &str| Sql::Text(s.to_owned());
    // Bookkeeping: oml4py declares schema 0 itself, with index 0.
    let book = meta(
        "SELECT key, value FROM _experiment_metadata WHERE oml_sender_id IS NULL \
         AND key LIKE 'table%' ORDER BY key",
    );
    let want: Vec<Vec<Sql>> = BOOKKEEPING
        .iter()
        .map(|(k, v)| vec![text(k), text(v)])
        .collect();
    assert_eq!(book, want);
    // Client metadata: subject "." for the experiment, ".<app>_<mp>.<field>"
    // for a field; oml4py numbers stream 0 per MP, so both have seq 0.
    let client_meta = meta(
        "SELECT oml_sender_id, oml_seq, subject, key, value FROM _experiment_metadata \
         WHERE oml_sender_id IS NOT NULL ORDER BY oml_tuple_id",
    );
    assert_eq!(
        client_meta,
        [
            vec![
                Sql::Integer(1),
                Sql::Integer(0),
                text("."),
                text("hostname"),
                text("node-1")
            ],
            vec![
                Sql::Integer(1),
                Sql::Integer(0),
                text(".pyapp_rtt.rtt"),
                text("unit"),
                text("ms"),
            ],
        ]
    );

    let rtt =
        meta("SELECT oml_sender_id, oml_seq, seq, rtt, host FROM pyapp_rtt ORDER BY oml_tuple_id");
    for (i, row) in rtt.iter().enumerate() {
        let i = i as i64;
        assert_eq!(
            row,
            &vec![
                Sql::Integer(1),
                Sql::Integer(i),
                Sql::Integer(i - 100),
                Sql::Real(i as f64 * 0.5 + 0.125),
                text(&format!("h\t{i}")),
            ],
            "pyapp_rtt row {i}"
        );
    }
    let ctr = meta("SELECT oml_seq, packets, label FROM pyapp_ctr ORDER BY oml_tuple_id");
    for (i, row) in ctr.iter().enumerate() {
        let want = u64::MAX - i as u64;
        // Above 2^63-1 uint64 is stored as its 8 big-endian bytes (docs/storage.md).
        assert_eq!(
            row,
            &vec![
                Sql::Integer(i as i64),
                Sql::Blob(want.to_be_bytes().to_vec()),
                text(&format!("c{i}")),
            ],
            "pyapp_ctr row {i}"
        );
    }
    let ts_ok: i64 = db
        .query_row(
            "SELECT count(*) FROM pyapp_rtt WHERE oml_ts_client >= 0 AND oml_ts_client < 60 \
             AND oml_ts_server >= 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(ts_ok, N);
}
