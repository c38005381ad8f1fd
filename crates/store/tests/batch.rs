//! The SQLite batch insert path: multi-row INSERTs for full groups, row by
//! row for the rest, and a bad row costs only itself.

use omsp::{Schema, Value};
use store::{Row, SqliteOptions, SqliteStore, StoreError, MULTI_ROWS};

fn row(table: store::TableId, seq: i64, values: Vec<Value>) -> Row {
    Row {
        table,
        sender: 1,
        seq,
        ts_client: seq as f64,
        ts_server: 0.5,
        values,
    }
}

fn stored(dir: &std::path::Path) -> Vec<(i64, i64, String)> {
    let c = rusqlite::Connection::open(dir.join("exp.sq3")).unwrap();
    let mut s = c
        .prepare("SELECT oml_seq, i, s FROM app_m ORDER BY oml_tuple_id")
        .unwrap();
    s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn every_row_of_a_long_batch_is_stored_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = SqliteStore::open(dir.path(), "exp", SqliteOptions::default()).unwrap();
    let t = db
        .register_schema(&Schema::parse("2 app_m i:int32 s:string").unwrap())
        .unwrap();
    // Three full multi-row groups and a remainder.
    let n = 3 * MULTI_ROWS as i64 + 5;
    let rows: Vec<Row> = (0..n)
        .map(|k| {
            row(
                t,
                k,
                vec![Value::Int32(k as i32), Value::String(format!("s{k}"))],
            )
        })
        .collect();
    let mut failed = 0;
    db.insert_batch(&rows, &mut |_, _| failed += 1).unwrap();
    db.close().unwrap();
    assert_eq!(failed, 0);
    let got = stored(dir.path());
    assert_eq!(got.len(), n as usize);
    for (k, (seq, i, s)) in got.into_iter().enumerate() {
        assert_eq!((seq, i, s), (k as i64, k as i64, format!("s{k}")));
    }
}

#[test]
fn a_malformed_row_inside_a_group_costs_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = SqliteStore::open(dir.path(), "exp", SqliteOptions::default()).unwrap();
    let t = db
        .register_schema(&Schema::parse("2 app_m i:int32 s:string").unwrap())
        .unwrap();
    let bad = MULTI_ROWS as i64 + 3;
    let rows: Vec<Row> = (0..2 * MULTI_ROWS as i64)
        .map(|k| {
            let mut values = vec![Value::Int32(k as i32), Value::String(format!("s{k}"))];
            if k == bad {
                values.pop();
            }
            row(t, k, values)
        })
        .collect();
    let mut failed = Vec::new();
    db.insert_batch(&rows, &mut |r, e| failed.push((r.seq, e)))
        .unwrap();
    db.close().unwrap();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].0, bad);
    assert!(matches!(failed[0].1, StoreError::RowShape { .. }));
    let seqs: Vec<i64> = stored(dir.path()).into_iter().map(|r| r.0).collect();
    let want: Vec<i64> = (0..2 * MULTI_ROWS as i64).filter(|k| *k != bad).collect();
    assert_eq!(seqs, want);
}

#[test]
fn wide_tables_use_smaller_groups_within_the_parameter_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = SqliteStore::open(dir.path(), "exp", SqliteOptions::default()).unwrap();
    let fields: Vec<String> = (0..1000).map(|i| format!("f{i}:int32")).collect();
    let t = db
        .register_schema(&Schema::parse(&format!("2 app_w {}", fields.join(" "))).unwrap())
        .unwrap();
    let rows: Vec<Row> = (0..70)
        .map(|k| row(t, k, (0..1000).map(Value::Int32).collect()))
        .collect();
    let mut failed = 0;
    db.insert_batch(&rows, &mut |_, _| failed += 1).unwrap();
    db.close().unwrap();
    assert_eq!(failed, 0);
    let c = rusqlite::Connection::open(dir.path().join("exp.sq3")).unwrap();
    let (count, last): (i64, i64) = c
        .query_row("SELECT COUNT(*), SUM(f999) FROM app_w", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    // 1004 columns: groups of 32 rows (32 766 parameters at most), then 6 alone.
    assert_eq!((count, last), (70, 70 * 999));
}
