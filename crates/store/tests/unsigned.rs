//! Why uint64 values above 2^63−1 are stored as BLOBs: SQLite's own
//! behaviour, checked here, and our round trip over the whole range.

use omsp::{Schema, Value};
use rusqlite::types::ValueRef;
use store::sqlite::values::read_unsigned64;
use store::{Row, SqliteOptions, SqliteStore};

#[test]
fn sqlite_turns_large_decimal_text_into_a_lossy_real() {
    let c = rusqlite::Connection::open_in_memory().unwrap();
    c.execute_batch("CREATE TABLE t (u UNSIGNED BIGINT)")
        .unwrap();
    c.execute("INSERT INTO t VALUES (?1)", ["18446744073709551615"])
        .unwrap();
    let (ty, real): (String, f64) = c
        .query_row("SELECT typeof(u), u FROM t", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(
        ty, "real",
        "if SQLite ever keeps the text, revisit values.rs"
    );
    assert_ne!(real as u64, u64::MAX - 1, "the low digits are gone");
}

#[test]
fn unsigned_values_round_trip_exactly_and_sort_correctly() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = SqliteStore::open(dir.path(), "u", SqliteOptions::default()).unwrap();
    let t = db
        .register_schema(&Schema::parse("1 a_u u:uint64 g:guid w:uint32").unwrap())
        .unwrap();
    let samples = [u64::MAX, 0, 1 << 63, i64::MAX as u64, 42, (1 << 63) + 1];
    for (i, &u) in samples.iter().enumerate() {
        db.insert(&Row {
            table: t,
            sender: 1,
            seq: i as i64,
            ts_client: 0.0,
            ts_server: 0.0,
            values: vec![Value::UInt64(u), Value::Guid(u), Value::UInt32(u32::MAX)],
        })
        .unwrap();
    }
    db.close().unwrap();
    let c = rusqlite::Connection::open(dir.path().join("u.sq3")).unwrap();
    let mut stmt = c.prepare("SELECT u, g, w FROM a_u ORDER BY u").unwrap();
    let got: Vec<(u64, u64, i64)> = stmt
        .query_map([], |r| {
            let u = read_unsigned64(r.get_ref(0)?).unwrap();
            let g = read_unsigned64(r.get_ref(1)?).unwrap();
            Ok((u, g, r.get(2)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    assert_eq!(got.iter().map(|x| x.0).collect::<Vec<_>>(), sorted);
    assert!(got.iter().all(|x| x.0 == x.1 && x.2 == i64::from(u32::MAX)));
    // Comparisons with integer literals hold over the whole range.
    let above: i64 = c
        .query_row(
            "SELECT count(*) FROM a_u WHERE u > 9223372036854775807",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(above, 3);
    let zero_guid: ValueRef = ValueRef::Integer(0);
    let stored: i64 = c
        .query_row("SELECT count(*) FROM a_u WHERE g = 0", [], |r| r.get(0))
        .unwrap();
    assert_eq!((read_unsigned64(zero_guid), stored), (Some(0), 1));
}
