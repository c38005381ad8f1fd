//! The physical limit the server is measured against: the same rows,
//! inserted straight into a fresh SQLite file with a prepared statement,
//! in the same table layout and with the same pragmas as the store (WAL,
//! `synchronous = NORMAL`), one transaction per batch of rows.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use omsp::{Schema, Value};
use rusqlite::Connection;

use super::workload;

/// Inserts `tuples` rows (shared among `clients` senders like the server
/// run) into `<dir>/raw.sq3` and returns how long the inserts and commits
/// took. Generating the rows is not timed.
pub fn measure(
    dir: &Path,
    schema: &Schema,
    tuples: u64,
    clients: usize,
    batch: usize,
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
    let mut stmt = conn.prepare(&store::sqlite::ddl::insert(schema))?;
    let start = Instant::now();
    for chunk in rows.chunks(batch.max(1)) {
        conn.execute_batch("BEGIN IMMEDIATE")?;
        for (sender, seq, values) in chunk {
            stmt.raw_bind_parameter(1, sender)?;
            stmt.raw_bind_parameter(2, seq)?;
            stmt.raw_bind_parameter(3, workload::timestamp(*seq))?;
            stmt.raw_bind_parameter(4, 0.5f64)?;
            for (i, v) in values.iter().enumerate() {
                bind(&mut stmt, 5 + i, v)?;
            }
            stmt.raw_execute()?;
        }
        conn.execute_batch("COMMIT")?;
    }
    let took = start.elapsed();
    drop(stmt);
    conn.close().map_err(|(_, e)| e)?;
    Ok(took)
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
