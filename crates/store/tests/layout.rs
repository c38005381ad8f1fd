//! The OML database layout: creation, reopening, senders, schema conflicts.

use omsp::{Schema, Value};
use store::{Row, SqliteOptions, SqliteStore, StoreError};

fn open(dir: &std::path::Path) -> SqliteStore {
    SqliteStore::open(dir, "exp", SqliteOptions::default()).unwrap()
}

fn row(table: store::TableId, seq: i64, values: Vec<Value>) -> Row {
    Row {
        table,
        sender: 1,
        seq,
        ts_client: 0.5,
        ts_server: 0.5,
        values,
    }
}

fn metadata(dir: &std::path::Path) -> Vec<(Option<i64>, String, Option<String>)> {
    let c = rusqlite::Connection::open(dir.join("exp.sq3")).unwrap();
    let mut s = c
        .prepare("SELECT oml_sender_id, key, value FROM _experiment_metadata ORDER BY oml_tuple_id")
        .unwrap();
    s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn domains_that_could_escape_the_directory_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let inner = dir.path().join("data");
    std::fs::create_dir(&inner).unwrap();
    for bad in ["../x", "a/b", "", ".hidden", "x\0y"] {
        let err = SqliteStore::open(&inner, bad, SqliteOptions::default()).unwrap_err();
        assert!(matches!(err, StoreError::InvalidDomain(_)), "{bad}: {err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    assert_eq!(std::fs::read_dir(&inner).unwrap().count(), 0);
}

#[test]
fn reopening_keeps_start_time_schemas_and_senders() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = open(dir.path());
    assert!(db.is_new());
    assert_eq!(db.ensure_start_time(100).unwrap(), 100);
    assert_eq!(db.sender_id("a").unwrap(), 1);
    assert_eq!(db.sender_id("b").unwrap(), 2);
    let t = db
        .register_schema(&Schema::parse("2 app_m x:double").unwrap())
        .unwrap();
    db.insert(&row(t, 1, vec![Value::Double(f64::NAN)]))
        .unwrap();
    db.close().unwrap();

    let mut db = open(dir.path());
    assert!(!db.is_new());
    assert_eq!(db.ensure_start_time(999).unwrap(), 100);
    assert_eq!(db.sender_id("b").unwrap(), 2);
    assert_eq!(db.sender_id("c").unwrap(), 3);
    // Same definition under another index: same table, appended to.
    let t2 = db
        .register_schema(&Schema::parse("5 app_m x:real").unwrap())
        .unwrap();
    assert_eq!(t2, db.find_table("app_m").unwrap());
    db.insert(&row(t2, 2, vec![Value::Double(1.0)])).unwrap();
    db.close().unwrap();

    let c = rusqlite::Connection::open(dir.path().join("exp.sq3")).unwrap();
    let xs: Vec<Option<f64>> = c
        .prepare("SELECT x FROM app_m ORDER BY oml_seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(xs, [None, Some(1.0)], "NaN is stored as NULL");
    let keys: Vec<String> = metadata(dir.path()).into_iter().map(|m| m.1).collect();
    assert_eq!(
        keys,
        ["table__experiment_metadata", "start_time", "table_app_m"]
    );
}

#[test]
fn conflicting_schemas_get_suffixed_tables_up_to_9() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = open(dir.path());
    db.ensure_start_time(1).unwrap();
    let base = db
        .register_schema(&Schema::parse("1 a_m x:double").unwrap())
        .unwrap();
    let mut ids = vec![base];
    for k in 2..=9 {
        let s = Schema::parse(&format!("1 a_m x:double y{k}:int32")).unwrap();
        let id = db.register_schema(&s).unwrap();
        assert_eq!(db.table_schema(id).unwrap().name, format!("a_m_{k}"));
        ids.push(id);
    }
    let err = db
        .register_schema(&Schema::parse("1 a_m z:bool").unwrap())
        .unwrap_err();
    assert!(matches!(err, StoreError::SchemaConflict { .. }));
    // Re-registering finds the renamed table again, also after reopening.
    let s3 = Schema::parse("7 a_m x:double y3:int32").unwrap();
    assert_eq!(db.register_schema(&s3).unwrap(), ids[2]);
    db.close().unwrap();
    let mut db = open(dir.path());
    let id = db.register_schema(&s3).unwrap();
    assert_eq!(
        db.table_schema(id).unwrap().to_string(),
        "1 a_m_3 x:double y3:int32"
    );
    drop(db);
    let m = metadata(dir.path());
    assert!(m.contains(&(
        None,
        "table_a_m_2".into(),
        Some("1 a_m_2 x:double y2:int32".into())
    )));
}

#[test]
fn client_metadata_named_like_bookkeeping_does_not_confuse_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = open(dir.path());
    db.ensure_start_time(50).unwrap();
    let meta = db.find_table("_experiment_metadata").unwrap();
    let s = |x: &str| Value::String(x.into());
    db.insert(&row(meta, 1, vec![s("."), s("start_time"), s("7")]))
        .unwrap();
    db.insert(&row(
        meta,
        2,
        vec![s("."), s("table_evil"), s("1 evil x:int32")],
    ))
    .unwrap();
    db.close().unwrap();
    let db = open(dir.path());
    assert_eq!(db.start_time(), Some(50));
    assert!(db.find_table("evil").is_none());
}

#[test]
fn case_insensitive_table_names_do_not_collide() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = open(dir.path());
    let a = db
        .register_schema(&Schema::parse("1 App x:int32").unwrap())
        .unwrap();
    let b = db
        .register_schema(&Schema::parse("2 app x:int32").unwrap())
        .unwrap();
    assert_ne!(a, b);
    assert_eq!(db.table_schema(b).unwrap().name, "app_2");
}
