//! Comparing stored tables with what the reference server stored (the
//! `*.rows.json` vectors): every reference defect is asserted where it is
//! expected, with our value there; everything else must be identical.
//! Shared by the SQLite and PostgreSQL replay tests.

use serde_json::{json, Map, Value as Json};

/// A cell where the reference stored a wrong value: (table, row, column,
/// what the reference stored, what is correct).
pub struct Fix {
    pub table: &'static str,
    pub row: usize,
    pub column: &'static str,
    pub reference: Json,
    pub correct: Json,
}

fn fix(
    table: &'static str,
    row: usize,
    column: &'static str,
    reference: Json,
    correct: Json,
) -> Fix {
    Fix {
        table,
        row,
        column,
        reference,
        correct,
    }
}

/// How an unsigned 64-bit value reads back from a store (SQLite: integer or
/// 8-byte BLOB; PostgreSQL: the exact NUMERIC).
pub type U64Cell = fn(u64) -> Json;

/// SQLite: integer if it fits, else `{"blob_hex": …}` (see store::sqlite::values).
pub fn sqlite_u64(v: u64) -> Json {
    match i64::try_from(v) {
        Ok(i) => json!(i),
        Err(_) => json!({ "blob_hex": format!("{v:016x}") }),
    }
}

/// PostgreSQL: NUMERIC(20,0), read back exactly.
pub fn exact_u64(v: u64) -> Json {
    json!(v)
}

pub fn alltypes_fixes(u64_cell: U64Cell) -> Vec<Fix> {
    let mut f = vec![
        // uint64 2^64-1 came back as -1.
        fix("vec_scalars", 0, "u64", json!(-1), u64_cell(u64::MAX)),
        // uint32 2^32-1 came back as -1.
        fix("vec_scalars", 1, "u32", json!(-1), json!(4_294_967_295u64)),
        // guid 0 came back as NULL.
        fix("vec_scalars", 2, "gid", Json::Null, json!(0)),
    ];
    // Empty vectors came back as '' (not JSON); we store "[ ]".
    for t in [
        "vec_vdouble",
        "vec_vint32",
        "vec_vuint32",
        "vec_vint64",
        "vec_vuint64",
        "vec_vbool",
    ] {
        f.push(fix(t, 1, "v", json!(""), json!("[ ]")));
    }
    f
}

pub fn onemp_fixes(u64_cell: U64Cell) -> Vec<Fix> {
    vec![
        fix(
            "vec_all",
            1,
            "u32",
            json!(-294_967_296),
            json!(4_000_000_000u64),
        ),
        fix(
            "vec_all",
            1,
            "u64",
            json!(-446_744_073_709_551_616i64),
            u64_cell(18_000_000_000_000_000_000),
        ),
        fix(
            "vec_all",
            1,
            "gid",
            json!(-81_985_529_216_486_896i64),
            u64_cell(18_364_758_544_493_064_720),
        ),
    ]
}

fn same_number(a: &Json, b: &Json) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_f64() || b.is_f64() => (x - y).abs() <= 1e-9 * x.abs().max(1.0),
        _ => a == b,
    }
}

/// Asserts that `got` (a dump of one database) equals `expected` (the
/// reference's dump of it) but for `fixes`. Column types are compared after
/// `types` maps the reference's (SQLite) types of each table to ours.
pub fn assert_matches(
    mut expected: Map<String, Json>,
    got: &Map<String, Json>,
    fixes: &[Fix],
    types: impl Fn(&str, &Json) -> Json,
) {
    // Each reference defect is where we expect it, and we differ from it there.
    for f in fixes {
        let table = expected.get_mut(f.table).unwrap();
        let col = table["columns"]
            .as_array()
            .unwrap()
            .iter()
            .position(|c| c == f.column)
            .unwrap();
        let cell = &mut table["rows"][f.row][col];
        assert_eq!(
            *cell, f.reference,
            "reference {}[{}].{}",
            f.table, f.row, f.column
        );
        assert_eq!(
            got[f.table]["rows"][f.row][col], f.correct,
            "ours {}[{}].{}",
            f.table, f.row, f.column
        );
        *cell = f.correct.clone();
    }
    // Everything else is identical.
    let names = |m: &Map<String, Json>| {
        let mut v: Vec<String> = m.keys().cloned().collect();
        v.sort();
        v
    };
    assert_eq!(names(got), names(&expected));
    for (name, want) in &expected {
        let have = &got[name];
        assert_eq!(have["columns"], want["columns"], "{name} columns");
        assert_eq!(have["column_types"], types(name, want), "{name} types");
        let (hr, wr) = (
            have["rows"].as_array().unwrap(),
            want["rows"].as_array().unwrap(),
        );
        assert_eq!(hr.len(), wr.len(), "{name} row count");
        for (i, (h, w)) in hr.iter().zip(wr).enumerate() {
            let (h, w) = (h.as_array().unwrap(), w.as_array().unwrap());
            assert_eq!(h.len(), w.len());
            for (j, (a, b)) in h.iter().zip(w).enumerate() {
                assert!(
                    same_number(a, b),
                    "{name} row {i} col {j}: ours {a} reference {b}"
                );
            }
        }
    }
}
