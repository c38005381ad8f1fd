//! The PostgreSQL store against a real PostgreSQL server (a throwaway
//! cluster started by the test, see the `pgtemp` crate).

use pgtemp as pg_cluster;

use omsp::{Schema, Value};
use pg_cluster::{shared, unique_domain};
use store::{CommitPolicy, PgOptions, PgStore, Row, Sink, StoreError};

fn options(user: &str) -> PgOptions {
    PgOptions {
        host: "127.0.0.1".into(),
        port: shared().port,
        user: user.into(),
        ..PgOptions::default()
    }
}

fn open(domain: &str) -> PgStore {
    PgStore::open(&options("oml"), domain).unwrap()
}

fn row(table: store::TableId, sender: i64, seq: i64, values: Vec<Value>) -> Row {
    Row {
        table,
        sender,
        seq,
        ts_client: 0.25 * seq as f64,
        ts_server: 1.5,
        values,
    }
}

const ALL: &str = "3 t_all i32:int32 u32:uint32 i64:int64 u64:uint64 dbl:double \
                   str:string blb:blob gid:guid bol:bool vd:[double] vi:[int32] \
                   vu:[uint32] vl:[int64] vul:[uint64] vb:[bool]";

fn all_row(i: i64) -> Vec<Value> {
    let big = i == 1;
    vec![
        Value::Int32(if big { i32::MIN } else { i32::MAX }),
        Value::UInt32(u32::MAX),
        Value::Int64(if big { i64::MIN } else { i64::MAX }),
        Value::UInt64(if big { u64::MAX } else { 1 << 63 }),
        Value::Double(match i {
            1 => f64::NAN,
            2 => f64::NEG_INFINITY,
            _ => -1.23456789012345e-300,
        }),
        Value::String("tab\there 'q' \"dq\" back\\slash nl\nend é".into()),
        Value::Blob(vec![0, 1, 0xff, 0]),
        Value::Guid(if big { u64::MAX } else { 0 }),
        Value::Bool(big),
        Value::VecDouble(if big { vec![] } else { vec![1.5, 1e-300] }),
        Value::VecInt32(if big { vec![] } else { vec![-1, 2] }),
        Value::VecUInt32(vec![]),
        Value::VecInt64(vec![i64::MIN]),
        Value::VecUInt64(if big { vec![u64::MAX] } else { vec![] }),
        Value::VecBool(vec![true, false]),
    ]
}

#[test]
fn every_type_round_trips_exactly() {
    let domain = unique_domain("types");
    let mut db = open(&domain);
    assert!(db.is_new());
    assert_eq!(db.ensure_start_time(1_700_000_000).unwrap(), 1_700_000_000);
    let sender = db.sender_id("node-1").unwrap();
    let t = db.register_schema(&Schema::parse(ALL).unwrap()).unwrap();
    for i in 1..=3 {
        db.insert(&row(t, sender, i, all_row(i))).unwrap();
    }
    db.insert(&Row {
        seq: 1 << 40, // beyond INT4: oml_seq is INT8
        ts_client: f64::NAN,
        ..row(t, sender, 4, all_row(3))
    })
    .unwrap();
    db.close().unwrap();

    let mut c = shared().client(&domain);
    let types: Vec<(String, String)> = c
        .query(
            "SELECT column_name::text, format_type(atttypid, atttypmod) \
             FROM information_schema.columns JOIN pg_attribute \
             ON attrelid = 't_all'::regclass AND attname = column_name \
             WHERE table_name = 't_all' ORDER BY ordinal_position",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let want = [
        ("oml_tuple_id", "integer"),
        ("oml_sender_id", "integer"),
        ("oml_seq", "bigint"),
        ("oml_ts_client", "double precision"),
        ("oml_ts_server", "double precision"),
        ("i32", "integer"),
        ("u32", "bigint"),
        ("i64", "bigint"),
        ("u64", "numeric(20,0)"),
        ("dbl", "double precision"),
        ("str", "text"),
        ("blb", "bytea"),
        ("gid", "numeric(20,0)"),
        ("bol", "boolean"),
        ("vd", "text"),
        ("vi", "text"),
        ("vu", "text"),
        ("vl", "text"),
        ("vul", "text"),
        ("vb", "text"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(types, want);

    let rows = c
        .query(
            "SELECT oml_tuple_id, oml_sender_id, oml_seq, oml_ts_client, i32, u32, i64, \
             u64::text, dbl, str, blb, gid::text, bol, vd, vi, vu, vl, vul, vb \
             FROM t_all ORDER BY oml_tuple_id",
            &[],
        )
        .unwrap();
    assert_eq!(rows.len(), 4);
    let r1 = &rows[0];
    assert_eq!(r1.get::<_, i32>(0), 1);
    assert_eq!(r1.get::<_, i32>(1), 1);
    assert_eq!(r1.get::<_, i64>(2), 1);
    assert_eq!(r1.get::<_, f64>(3), 0.25);
    assert_eq!(r1.get::<_, i32>(4), i32::MIN);
    assert_eq!(r1.get::<_, i64>(5), i64::from(u32::MAX));
    assert_eq!(r1.get::<_, i64>(6), i64::MIN);
    assert_eq!(r1.get::<_, String>(7), u64::MAX.to_string());
    assert!(r1.get::<_, f64>(8).is_nan(), "NaN is kept");
    assert_eq!(
        r1.get::<_, String>(9),
        "tab\there 'q' \"dq\" back\\slash nl\nend é"
    );
    assert_eq!(r1.get::<_, Vec<u8>>(10), vec![0, 1, 0xff, 0]);
    assert_eq!(r1.get::<_, String>(11), u64::MAX.to_string());
    assert!(r1.get::<_, bool>(12));
    let texts = |r: &postgres::Row| (13..19).map(|i| r.get::<_, String>(i)).collect::<Vec<_>>();
    assert_eq!(
        texts(r1),
        [
            "[ ]",
            "[ ]",
            "[ ]",
            "[ -9223372036854775808 ]",
            "[ 18446744073709551615 ]",
            "[ true, false ]"
        ]
    );
    let r2 = &rows[1];
    assert_eq!(r2.get::<_, String>(7), (1u64 << 63).to_string());
    assert_eq!(r2.get::<_, f64>(8), f64::NEG_INFINITY);
    assert_eq!(r2.get::<_, String>(11), "0", "guid 0 is 0, not NULL");
    assert!(!r2.get::<_, bool>(12));
    assert_eq!(texts(r2)[0], "[ 1.5, 1e-300 ]");
    let r3 = &rows[2];
    assert_eq!(
        r3.get::<_, f64>(8).to_bits(),
        (-1.23456789012345e-300f64).to_bits(),
        "doubles are exact (binary FLOAT8)"
    );
    let r4 = &rows[3];
    assert_eq!(r4.get::<_, i64>(2), 1 << 40);
    assert_eq!(r4.get::<_, Option<f64>>(3), None, "no timestamp: NULL");

    // NUMERIC(20,0) orders and compares over the whole unsigned range.
    let max: String = c
        .query_one("SELECT max(u64)::text FROM t_all", &[])
        .unwrap()
        .get(0);
    assert_eq!(max, u64::MAX.to_string());
    let big: i64 = c
        .query_one(
            "SELECT count(*) FROM t_all WHERE u64 > 9223372036854775807",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(big, 4);
}

#[test]
fn layout_and_bookkeeping_like_the_reference() {
    let domain = unique_domain("layout");
    let mut db = open(&domain);
    db.ensure_start_time(1_234).unwrap();
    assert_eq!(db.sender_id("a").unwrap(), 1);
    assert_eq!(db.sender_id("b'; DROP TABLE _senders; --").unwrap(), 2);
    assert_eq!(db.sender_id("a").unwrap(), 1);
    db.register_schema(&Schema::parse("2 app_mp x:int32 y:real").unwrap())
        .unwrap();
    db.close().unwrap();
    let mut c = shared().client(&domain);
    let meta: Vec<(i32, Option<i32>, String, String)> = c
        .query(
            "SELECT oml_tuple_id, oml_sender_id, key, value FROM _experiment_metadata \
             ORDER BY oml_tuple_id",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    assert_eq!(
        meta,
        [
            (
                1,
                None,
                "table__experiment_metadata".into(),
                "0 _experiment_metadata subject:string key:string value:string".into()
            ),
            (2, None, "start_time".into(), "1234".into()),
            (
                3,
                None,
                "table_app_mp".into(),
                "2 app_mp x:int32 y:double".into()
            ),
        ]
    );
    let senders: Vec<(String, i32)> = c
        .query("SELECT name, id FROM _senders ORDER BY id", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(senders[1], ("b'; DROP TABLE _senders; --".into(), 2));
}

#[test]
fn reopening_appends_and_keeps_start_time() {
    let domain = unique_domain("reopen");
    let schema = Schema::parse("1 app_mp x:uint64").unwrap();
    let mut db = open(&domain);
    db.ensure_start_time(100).unwrap();
    let s = db.sender_id("one").unwrap();
    let t = db.register_schema(&schema).unwrap();
    db.insert(&row(t, s, 1, vec![Value::UInt64(u64::MAX)]))
        .unwrap();
    db.close().unwrap();

    let mut db = open(&domain);
    assert!(!db.is_new());
    assert_eq!(db.start_time(), Some(100));
    assert_eq!(db.ensure_start_time(200).unwrap(), 100);
    assert_eq!(db.sender_id("one").unwrap(), s);
    assert_eq!(db.sender_id("two").unwrap(), 2);
    let t2 = db.register_schema(&schema.with_index(5)).unwrap();
    assert_eq!(db.table_name(t2), Some("app_mp"));
    db.insert(&row(t2, 2, 1, vec![Value::UInt64(7)])).unwrap();
    db.close().unwrap();

    let mut c = shared().client(&domain);
    let got: Vec<(i32, i32, String)> = c
        .query(
            "SELECT oml_tuple_id, oml_sender_id, x::text FROM app_mp ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(got, [(1, 1, u64::MAX.to_string()), (2, 2, "7".to_string())]);
}

#[test]
fn conflicting_schemas_are_renamed_up_to_9() {
    let domain = unique_domain("conflict");
    let mut db = open(&domain);
    let base = db
        .register_schema(&Schema::parse("1 a_m x:double").unwrap())
        .unwrap();
    assert_eq!(db.table_name(base), Some("a_m"));
    for k in 2..=9 {
        let s = Schema::parse(&format!("1 a_m x:int32 f{k}:int32")).unwrap();
        let t = db.register_schema(&s).unwrap();
        assert_eq!(db.table_name(t), Some(format!("a_m_{k}").as_str()));
        // Same definition again: same table.
        assert_eq!(db.register_schema(&s).unwrap(), t);
    }
    let err = db
        .register_schema(&Schema::parse("1 a_m y:string").unwrap())
        .unwrap_err();
    assert!(matches!(err, StoreError::SchemaConflict { .. }), "{err}");
    // A stream name PostgreSQL would truncate is refused, the store goes on.
    let long = format!("1 {} x:int32", "n".repeat(64));
    assert!(db.register_schema(&Schema::parse(&long).unwrap()).is_err());
    db.close().unwrap();
    let mut c = shared().client(&domain);
    let v: String = c
        .query_one(
            "SELECT value FROM _experiment_metadata WHERE key = 'table_a_m_2'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(v, "1 a_m_2 x:int32 f2:int32");
    // After reopening, the renamed tables are found again.
    let mut db = open(&domain);
    let t = db
        .register_schema(&Schema::parse("1 a_m x:int32 f3:int32").unwrap())
        .unwrap();
    assert_eq!(db.table_name(t), Some("a_m_3"));
}

#[test]
fn refused_rows_do_not_lose_other_rows() {
    let domain = unique_domain("refused");
    let mut db = open(&domain);
    let t = db
        .register_schema(&Schema::parse("1 app_s s:string n:int32").unwrap())
        .unwrap();
    db.commit().unwrap();
    // Make PostgreSQL itself refuse some rows (n = 13), inside a COPY.
    shared().psql(
        &domain,
        "ALTER TABLE app_s ADD CONSTRAINT no13 CHECK (n <> 13)",
    );
    let mut refused = 0;
    for i in 1..=20 {
        let s = if i == 5 { "nul\0byte" } else { "ok" };
        let r = row(
            t,
            1,
            i,
            vec![Value::String(s.into()), Value::Int32(i as i32)],
        );
        if let Err(e) = db.insert(&r) {
            assert!(matches!(e, StoreError::Unstorable { .. }), "{e}");
            refused += 1;
        }
    }
    assert_eq!(refused, 1, "the NUL string is refused up front");
    db.commit_if_due(&CommitPolicy::default(), true).unwrap();
    db.close().unwrap();
    let mut c = shared().client(&domain);
    let seqs: Vec<i64> = c
        .query("SELECT oml_seq FROM app_s ORDER BY oml_seq", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let want: Vec<i64> = (1..=20).filter(|&i| i != 5 && i != 13).collect();
    assert_eq!(seqs, want);
}

#[test]
fn a_refused_copy_resends_the_rest_of_the_commit() {
    // The commit first sends everything without savepoints; a refusal
    // aborts that transaction, and the whole commit is sent again guarded.
    // Nothing but the refused row may be missing from the second one:
    // not the rows of a table sent before it, nor those after it, nor the
    // session's offset.
    let domain = unique_domain("resend");
    let mut db = open(&domain);
    let a = db
        .register_schema(&Schema::parse("1 app_a n:int32").unwrap())
        .unwrap();
    let b = db
        .register_schema(&Schema::parse("2 app_b n:int32").unwrap())
        .unwrap();
    let c = db
        .register_schema(&Schema::parse("3 app_c n:int32").unwrap())
        .unwrap();
    db.commit().unwrap();
    shared().psql(
        &domain,
        "ALTER TABLE app_b ADD CONSTRAINT no7 CHECK (n <> 7)",
    );
    for i in 1..=10 {
        for t in [a, b, c] {
            db.insert(&row(t, 1, i, vec![Value::Int32(i as i32)]))
                .unwrap();
        }
    }
    db.set_session_offset("s1", 1, 4242).unwrap();
    db.commit().unwrap();
    assert_eq!(db.refused(), 1, "only n = 7 of app_b");
    db.close().unwrap();
    let mut pg = shared().client(&domain);
    for (table, want) in [("app_a", 10), ("app_b", 9), ("app_c", 10)] {
        let n: i64 = pg
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .unwrap()
            .get(0);
        assert_eq!(n, want, "{table}");
    }
    let offset: i64 = pg
        .query_one(
            "SELECT data_offset FROM _streamgauge_sessions WHERE session = 's1'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(offset, 4242);
}

#[test]
fn rows_are_visible_after_an_idle_commit() {
    let domain = unique_domain("visible");
    let mut db = open(&domain);
    let t = db
        .register_schema(&Schema::parse("1 app_v n:int32").unwrap())
        .unwrap();
    db.insert(&row(t, 1, 1, vec![Value::Int32(1)])).unwrap();
    let mut c = shared().client(&domain);
    let count = |c: &mut postgres::Client| -> i64 {
        c.query_one("SELECT count(*) FROM app_v", &[])
            .map(|r| r.get(0))
            .unwrap_or(-1)
    };
    // Tables are committed when made (other servers must see them at
    // once); rows only at the commit.
    assert_eq!(count(&mut c), 0, "uncommitted: the row is not there yet");
    assert!(db.commit_if_due(&CommitPolicy::default(), true).unwrap());
    assert_eq!(count(&mut c), 1);
}

#[test]
fn role_without_createdb_is_refused_at_startup() {
    let err = options("nocreate")
        .check_can_create_databases()
        .unwrap_err();
    assert!(
        matches!(err, StoreError::CannotCreateDatabases { ref role } if role == "nocreate"),
        "{err}"
    );
    options("oml").check_can_create_databases().unwrap();
}

#[test]
fn domains_are_validated_before_sql() {
    let err = PgStore::open(&options("oml"), "x\"; DROP DATABASE postgres; --").unwrap_err();
    assert!(matches!(err, StoreError::InvalidDomain(_)), "{err}");
}
