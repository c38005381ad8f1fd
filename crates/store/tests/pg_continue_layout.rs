//! The PostgreSQL store writing into tables of other layouts: the reference-compatible BIGINT uint64 option, a table with the
//! reference's INT4 `oml_seq`, rows PostgreSQL refuses only at the commit
//! (counted, never reported as stored), and errors carrying their SQLSTATE.

use omsp::{Schema, Value};
use pgtemp::{shared, unique_domain};
use store::postgres::Uint64Layout;
use store::{PgOptions, PgStore, Row, Sink, StoreError};

fn options(uint64: Uint64Layout) -> PgOptions {
    PgOptions {
        host: "127.0.0.1".into(),
        port: shared().port,
        user: "oml".into(),
        uint64,
        ..PgOptions::default()
    }
}

fn row(table: store::TableId, seq: i64, values: Vec<Value>) -> Row {
    Row {
        table,
        sender: 1,
        seq,
        ts_client: 1.0,
        ts_server: 2.0,
        values,
    }
}

fn column_type(domain: &str, table: &str, column: &str) -> String {
    shared().psql(
        domain,
        &format!(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute \
             WHERE attrelid = '{table}'::regclass AND attname = '{column}'"
        ),
    )
}

#[test]
fn bigint_layout_stores_uint64_as_twos_complement() {
    let domain = unique_domain("u64big");
    let mut db = PgStore::open(&options(Uint64Layout::Bigint), &domain).unwrap();
    let t = db
        .register_schema(&Schema::parse("1 app_u u:uint64 g:guid").unwrap())
        .unwrap();
    for (seq, u) in [(1, 5u64), (2, 1 << 63), (3, u64::MAX)] {
        db.insert(&row(t, seq, vec![Value::UInt64(u), Value::Guid(u)]))
            .unwrap();
    }
    db.close().unwrap();
    assert_eq!(column_type(&domain, "app_u", "u"), "bigint");
    assert_eq!(column_type(&domain, "app_u", "g"), "bigint");
    let got = shared().psql(
        &domain,
        "SELECT string_agg(u::text, ',' ORDER BY oml_seq) FROM app_u",
    );
    assert_eq!(got, "5,-9223372036854775808,-1");
    // The default stays exact NUMERIC(20,0).
    let domain = unique_domain("u64num");
    let mut db = PgStore::open(&options(Uint64Layout::Numeric), &domain).unwrap();
    let t = db
        .register_schema(&Schema::parse("1 app_u u:uint64").unwrap())
        .unwrap();
    db.insert(&row(t, 1, vec![Value::UInt64(u64::MAX)]))
        .unwrap();
    db.close().unwrap();
    assert_eq!(column_type(&domain, "app_u", "u"), "numeric(20,0)");
    assert_eq!(
        shared().psql(&domain, "SELECT u FROM app_u"),
        "18446744073709551615"
    );
}

#[test]
fn reference_int4_seq_is_written_as_int4_and_overflow_refused_alone() {
    let domain = unique_domain("int4seq");
    // A database laid out by the reference: INT4 oml_seq, BIGINT uint64.
    PgStore::open(&options(Uint64Layout::Numeric), &domain)
        .unwrap()
        .close()
        .unwrap();
    // As the role the reference logs in with (oml), as it would.
    shared()
        .client(&domain)
        .batch_execute(
            "CREATE TABLE app_r (oml_tuple_id SERIAL PRIMARY KEY, oml_sender_id INT4, \
             oml_seq INT4, oml_ts_client FLOAT8, oml_ts_server FLOAT8, \"n\" INT4, \"u\" BIGINT); \
             INSERT INTO _experiment_metadata (key, value) \
             VALUES ('table_app_r', '1 app_r n:int32 u:uint64')",
        )
        .unwrap();
    let mut db = PgStore::open(&options(Uint64Layout::Numeric), &domain).unwrap();
    let t = db
        .register_schema(&Schema::parse("4 app_r n:int32 u:uint64").unwrap())
        .unwrap();
    assert_eq!(
        db.table_name(t),
        Some("app_r"),
        "the reference's table, not app_r_2"
    );
    db.insert(&row(t, 7, vec![Value::Int32(1), Value::UInt64(u64::MAX)]))
        .unwrap();
    let err = db
        .insert(&row(t, 1 << 31, vec![Value::Int32(2), Value::UInt64(3)]))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("oml_seq: 2147483648 is out of range"),
        "{err}"
    );
    db.insert(&row(t, 8, vec![Value::Int32(3), Value::UInt64(3)]))
        .unwrap();
    db.close().unwrap();
    let got = shared().psql(
        &domain,
        "SELECT string_agg(oml_seq || ':' || u, ',' ORDER BY oml_seq) FROM app_r",
    );
    assert_eq!(got, "7:-1,8:3");
}

#[test]
fn rows_refused_at_the_commit_are_counted_not_stored() {
    let domain = unique_domain("refused");
    let mut db = PgStore::open(&options(Uint64Layout::Numeric), &domain).unwrap();
    let t = db
        .register_schema(&Schema::parse("1 app_c x:int32").unwrap())
        .unwrap();
    // A constraint only the database knows about.
    shared().psql(&domain, "ALTER TABLE app_c ADD CHECK (x < 10)");
    for (seq, x) in [(1, 1), (2, 50), (3, 3), (4, 70)] {
        db.insert(&row(t, seq, vec![Value::Int32(x)])).unwrap();
    }
    db.commit().unwrap();
    assert_eq!(db.take_refused(), 2);
    assert_eq!(db.take_refused(), 0);
    db.close().unwrap();
    assert_eq!(
        shared().psql(
            &domain,
            "SELECT string_agg(x::text, ',' ORDER BY oml_seq) FROM app_c"
        ),
        "1,3"
    );
}

#[test]
fn errors_carry_their_sqlstate_and_detail() {
    let domain = unique_domain("sqlstate");
    PgStore::open(&options(Uint64Layout::Numeric), &domain)
        .unwrap()
        .close()
        .unwrap();
    let mut c = shared().client(&domain);
    let e = StoreError::from(
        c.batch_execute("CREATE TABLE _senders (x INT)")
            .unwrap_err(),
    );
    assert_eq!(e.sqlstate(), Some("42P07"));
    assert_eq!(
        e.to_string(),
        "postgresql: SQLSTATE 42P07: relation \"_senders\" already exists"
    );
    let e = StoreError::from(
        c.batch_execute("INSERT INTO _senders (name, id) VALUES ('a', 1), ('a', 2)")
            .unwrap_err(),
    );
    assert!(
        e.to_string().starts_with(
            "postgresql: SQLSTATE 23505: duplicate key value violates unique constraint"
        ) && e
            .to_string()
            .contains("(detail: Key (name)=(a) already exists.)"),
        "{e}"
    );
}

#[test]
fn a_commit_refused_at_the_end_counts_all_its_rows_and_the_store_goes_on() {
    let domain = unique_domain("refusedcommit");
    let mut db = PgStore::open(&options(Uint64Layout::Numeric), &domain).unwrap();
    let t = db
        .register_schema(&Schema::parse("1 app_d x:int32").unwrap())
        .unwrap();
    // Checked only at COMMIT: the whole transaction is refused there.
    shared().psql(
        &domain,
        "ALTER TABLE app_d ADD CONSTRAINT one_x UNIQUE (x) DEFERRABLE INITIALLY DEFERRED",
    );
    for seq in 1..=3 {
        db.insert(&row(t, seq, vec![Value::Int32(7)])).unwrap();
    }
    let err = db.commit().unwrap_err();
    assert_eq!(err.sqlstate(), Some("23505"), "{err}");
    assert_eq!(db.take_refused(), 3);
    // The next transaction is not affected.
    db.insert(&row(t, 4, vec![Value::Int32(8)])).unwrap();
    db.commit().unwrap();
    assert_eq!(db.take_refused(), 0);
    db.close().unwrap();
    assert_eq!(
        shared().psql(&domain, "SELECT string_agg(oml_seq::text, ',') FROM app_d"),
        "4"
    );
}
