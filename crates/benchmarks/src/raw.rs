//! The physical limit the server is measured against: the same rows,
//! inserted straight into a fresh SQLite file with a prepared statement,
//! in the same table layout and with the same pragmas as the store (WAL,
//! `synchronous = NORMAL`), one transaction per batch of rows.
//!
//! Two methods: one row per INSERT execution (the classic prepared-statement
//! loop, the definition of the limit used here), and `k` rows per execution
//! (the server's own method, see `store::sqlite`), so the report shows how
//! close the server comes to the best this SQLite can do too.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use omsp::{Schema, Value};
use rusqlite::Connection;

use crate::workload;

/// Inserts `tuples` rows (shared among `clients` senders like the server
/// run) into `<dir>/raw.sq3` and returns how long the inserts and commits
/// took, inserting `per_insert` rows per statement execution. Generating
/// the rows is not timed.
pub fn measure(
    dir: &Path,
    schema: &Schema,
    tuples: u64,
    clients: usize,
    batch: usize,
    per_insert: usize,
) -> Result<Duration> {
    let mut rows: Vec<(i64, i64, Vec<Value>)> = Vec::with_capacity(tuples as usize);
    for c in 0..clients {
        for seq in 0..workload::share(tuples, clients, c) as i64 {
            rows.push((c as i64 + 1, seq, workload::tuple(schema, c, seq)));
        }
    }
    let path = dir.join("raw.sq3");
    let _ = std::fs::remove_file(&path);
    let conn = Connection::open(&path).with_context(|| format!("opening {}", path.display()))?;
    let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    conn.execute_batch("PRAGMA synchronous = NORMAL;")?;
    conn.execute_batch(&store::sqlite::ddl::create_table(schema))?;
    let per_insert = per_insert.max(1);
    let mut stmt = conn.prepare(&store::sqlite::ddl::insert_rows(schema, per_insert))?;
    let mut single = conn.prepare(&store::sqlite::ddl::insert(schema))?;
    let columns = 4 + schema.fields.len();
    let start = Instant::now();
    for chunk in rows.chunks(batch.max(1)) {
        conn.execute_batch("BEGIN IMMEDIATE")?;
        let mut groups = chunk.chunks_exact(per_insert);
        for group in &mut groups {
            for (r, (sender, seq, values)) in group.iter().enumerate() {
                bind_row(&mut stmt, 1 + r * columns, *sender, *seq, values)?;
            }
            stmt.raw_execute()?;
        }
        for (sender, seq, values) in groups.remainder() {
            bind_row(&mut single, 1, *sender, *seq, values)?;
            single.raw_execute()?;
        }
        conn.execute_batch("COMMIT")?;
    }
    let took = start.elapsed();
    drop(stmt);
    drop(single);
    conn.close().map_err(|(_, e)| e)?;
    Ok(took)
}

/// Binds one row's columns from parameter `first` on.
fn bind_row(
    stmt: &mut rusqlite::Statement<'_>,
    first: usize,
    sender: i64,
    seq: i64,
    values: &[Value],
) -> rusqlite::Result<()> {
    stmt.raw_bind_parameter(first, sender)?;
    stmt.raw_bind_parameter(first + 1, seq)?;
    stmt.raw_bind_parameter(first + 2, workload::timestamp(seq))?;
    stmt.raw_bind_parameter(first + 3, 0.5f64)?;
    for (i, v) in values.iter().enumerate() {
        bind(stmt, first + 4 + i, v)?;
    }
    Ok(())
}

/// Binds a value in its native SQLite type, without conversions.
fn bind(stmt: &mut rusqlite::Statement<'_>, i: usize, v: &Value) -> rusqlite::Result<()> {
    match v {
        Value::Int32(x) => stmt.raw_bind_parameter(i, x),
        Value::UInt32(x) => stmt.raw_bind_parameter(i, x),
        Value::Int64(x) => stmt.raw_bind_parameter(i, x),
        Value::UInt64(x) | Value::Guid(x) => match i64::try_from(*x) {
            Ok(s) => stmt.raw_bind_parameter(i, s),
            Err(_) => stmt.raw_bind_parameter(i, x.to_be_bytes()),
        },
        Value::Double(x) => stmt.raw_bind_parameter(i, x),
        Value::Bool(x) => stmt.raw_bind_parameter(i, x),
        Value::String(s) => stmt.raw_bind_parameter(i, s.as_str()),
        Value::Blob(b) => stmt.raw_bind_parameter(i, b.as_slice()),
        other => stmt.raw_bind_parameter(i, format!("{other:?}")),
    }
}
