//! A statement written once with SQLite's `?N` gives the same answer on
//! SQLite as written and on a real PostgreSQL (a throwaway cluster, see
//! the `pgtemp` crate) once [`Dialect::rewrite_placeholders`] has turned
//! it into `$N`: quoted text and identifiers that hold `?1` keep it, and
//! placeholders past `?9` keep their number.

use pgtemp::shared;
use store::sql::{quote, Dialect, Value};

/// Twelve parameters, summed; a string and an identifier holding
/// question marks, doubled quotes and a placeholder-like `?1`.
fn statement() -> String {
    let sum: Vec<String> = (1..=12).map(|n| format!("CAST(?{n} AS BIGINT)")).collect();
    format!(
        "SELECT 'it''s ?1 ??2', {col}, {sum} FROM (SELECT 7 AS {col}) t",
        col = quote("a\"?2 ?"),
        sum = sum.join(" + ")
    )
}

#[test]
fn one_statement_same_answer_on_both() {
    let written = statement();
    let values: Vec<Value> = (1..=12).map(Value::Int).collect();

    let lite = rusqlite::Connection::open_in_memory().unwrap();
    let sql = Dialect::Sqlite.rewrite_placeholders(&written);
    let on_sqlite: (String, i64, i64) = lite
        .query_row(&sql, rusqlite::params_from_iter(&values), |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();

    let mut pg = shared().client("postgres");
    let sql = Dialect::Postgres.rewrite_placeholders(&written);
    assert!(sql.contains("CAST($12 AS BIGINT)"), "{sql}");
    let ints: Vec<i64> = (1..=12).collect();
    let params: Vec<&(dyn postgres::types::ToSql + Sync)> = ints
        .iter()
        .map(|i| i as &(dyn postgres::types::ToSql + Sync))
        .collect();
    let row = pg.query_one(&*sql, &params).unwrap();
    let on_postgres: (String, i64, i64) = (row.get(0), i64::from(row.get::<_, i32>(1)), row.get(2));

    assert_eq!(on_sqlite, ("it's ?1 ??2".to_owned(), 7, 78));
    assert_eq!(on_postgres, on_sqlite);
}
