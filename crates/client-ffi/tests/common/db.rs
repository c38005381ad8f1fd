//! What `tests/c/generator.c` leaves in a collection server's SQLite
//! database, checked value by value (shared by the tests that run it
//! against our server, built against our library or the reference's).

use std::path::Path;

use rusqlite::types::Value as Sql;

/// A uint64/guid column: an integer, or 8 big-endian bytes above 2^63−1.
fn u64_of(v: &Sql) -> u64 {
    match v {
        Sql::Integer(i) => u64::try_from(*i).expect("non-negative"),
        Sql::Blob(b) => u64::from_be_bytes(b.as_slice().try_into().expect("8 bytes")),
        other => panic!("not a uint64: {other:?}"),
    }
}

fn int(v: &Sql) -> i64 {
    match v {
        Sql::Integer(i) => *i,
        other => panic!("not an integer: {other:?}"),
    }
}

fn text(v: &Sql) -> &str {
    match v {
        Sql::Text(s) => s,
        other => panic!("not text: {other:?}"),
    }
}

/// Checks `d1.sq3` in `dir` after one generator run; `metadata_copies`:
/// how many times the client sent each metadata tuple (1 for ours; the
/// stock liboml2 sends them twice, spec §11 defect 18, and a server
/// stores what it receives).
pub fn check_database(dir: &Path, metadata_copies: usize) {
    let db = rusqlite::Connection::open(dir.join("d1.sq3")).unwrap();
    let cols = "oml_seq, i32, u32, i64, u64, dbl, str, blb, gid, bol, lng, \
                vd, vi32, vu32, vi64, vu64, vb";
    let mut stmt = db
        .prepare(&format!(
            "SELECT {cols} FROM generator_all ORDER BY oml_seq"
        ))
        .unwrap();
    let rows: Vec<Vec<Sql>> = stmt
        .query_map([], |r| (0..17).map(|i| r.get::<_, Sql>(i)).collect())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), 3);

    let r = &rows[0];
    assert_eq!(int(&r[0]), 1);
    assert_eq!(int(&r[1]), i64::from(i32::MIN));
    assert_eq!(int(&r[2]), i64::from(u32::MAX));
    assert_eq!(int(&r[3]), i64::MIN);
    assert_eq!(u64_of(&r[4]), u64::MAX);
    assert_eq!(r[5], Sql::Real(100.125));
    assert_eq!(text(&r[6]), "tab\there back\\slash nl\nend");
    assert_eq!(r[7], Sql::Blob(vec![0, 1, 2, 0xff]));
    assert_eq!(u64_of(&r[8]), 0x0123_4567_89AB_CDEF);
    assert_eq!(int(&r[9]), 1);
    assert_eq!(int(&r[10]), i64::from(i32::MAX));
    assert_eq!(text(&r[11]), "[ 1.5, -2.25, 10000000000 ]");
    assert_eq!(text(&r[12]), "[ -2147483648, 2147483647 ]");
    assert_eq!(text(&r[13]), "[ 0, 4294967295 ]");
    assert_eq!(
        text(&r[14]),
        "[ -9223372036854775808, 9223372036854775807 ]"
    );
    assert_eq!(text(&r[15]), "[ 0, 18446744073709551615 ]");
    assert_eq!(text(&r[16]), "[ true, false, true ]");

    let r = &rows[1];
    assert_eq!(int(&r[1]), i64::from(i32::MAX));
    assert_eq!(int(&r[2]), 0);
    assert_eq!(int(&r[3]), i64::MAX);
    assert_eq!(u64_of(&r[4]), 1 << 63);
    assert_eq!(r[5], Sql::Real(-0.5));
    assert_eq!(text(&r[6]), "");
    assert_eq!(r[7], Sql::Blob(Vec::new()));
    assert_eq!(u64_of(&r[8]), 1);
    assert_eq!(int(&r[9]), 0);
    assert_eq!(int(&r[10]), -5);
    for v in &r[11..] {
        assert_eq!(text(v), "[ ]");
    }

    let r = &rows[2];
    assert_eq!(int(&r[1]), 42);
    assert_eq!(int(&r[2]), 1 << 31);
    assert_eq!(int(&r[3]), -1);
    assert_eq!(u64_of(&r[4]), (1 << 63) + 1);
    assert_eq!(r[5], Sql::Real(0.25));
    assert_eq!(text(&r[6]), "plain");
    assert_eq!(r[7], Sql::Blob(b"OML".to_vec()));
    assert_eq!(u64_of(&r[8]), u64::MAX);
    assert_eq!(int(&r[9]), 1);
    assert_eq!(int(&r[10]), i64::from(i32::MIN));

    let (x, ok): (Sql, i64) = db
        .query_row("SELECT x, ok FROM generator_late", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(u64_of(&x), u64::MAX - 1);
    assert_eq!(ok, 1);

    let meta: Vec<(String, String, String)> = db
        .prepare("SELECT subject, key, value FROM _experiment_metadata WHERE subject IS NOT NULL")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let has = |s: &str, k: &str, v: &str| meta.iter().any(|m| m.0 == s && m.1 == k && m.2 == v);
    assert!(has(".", "appname", "generator"), "{meta:?}");
    assert!(has(".generator_all.dbl", "unit", "metre"), "{meta:?}");
    assert_eq!(
        meta.iter().filter(|m| m.1 == "appname").count(),
        metadata_copies,
        "{meta:?}"
    );

    let sender: String = db
        .query_row("SELECT name FROM _senders", [], |r| r.get(0))
        .unwrap();
    assert_eq!(sender, "s1");
}
