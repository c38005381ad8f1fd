//! The limits PostgreSQL ingest is measured against, on the same rows:
//!
//! - **raw COPY**: the rows, encoded beforehand in the binary COPY format
//!   (untimed), sent as one `COPY … FROM STDIN (FORMAT binary)` and one
//!   transaction per batch into a fresh table with the store's layout
//!   (same DDL: SERIAL primary key, same column types);
//! - **one INSERT per row**, the reference oml2-server's method: a prepared
//!   INSERT executed synchronously (one round trip per row) in one
//!   transaction, on a small subset, extrapolated to rows per second.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use omsp::{OmlType, Schema, Value};
use postgres::types::ToSql;
use postgres::Client;
use store::postgres::copy::CopyBuffer;
use store::postgres::ddl;
use store::sql::quote;

use crate::pg::PgTarget;
use crate::workload;

/// Server timestamp of every raw row (any constant does).
const TS_SERVER: f64 = 0.5;

/// A fresh, empty table with the store's layout for `schema`'s rows.
fn fresh_table(client: &mut Client, schema: &Schema) -> Result<Schema> {
    static N: AtomicU32 = AtomicU32::new(0);
    let mut table = schema.clone();
    table.name = format!("raw_{}", N.fetch_add(1, Ordering::Relaxed));
    client.batch_execute(&format!(
        "DROP TABLE IF EXISTS {}; {}",
        quote(&table.name),
        ddl::create_table(&table)?
    ))?;
    Ok(table)
}

/// Sends `tuples` rows (shared among `clients` senders like the server
/// run) by binary COPY, `batch` rows per COPY and transaction; returns how
/// long the COPYs and commits took.
pub fn copy(
    target: &PgTarget,
    schema: &Schema,
    tuples: u64,
    clients: usize,
    batch: usize,
) -> Result<Duration> {
    let mut client = target.opts.connect(&target.raw_db)?;
    let table = fresh_table(&mut client, schema)?;
    let mut chunks = vec![CopyBuffer::default()];
    let mut in_chunk = 0;
    for c in 0..clients {
        for seq in 0..workload::share(tuples, clients, c) as i64 {
            if in_chunk == batch.max(1) {
                chunks.push(CopyBuffer::default());
                in_chunk = 0;
            }
            let values = workload::tuple(schema, c, seq);
            let ts = (workload::timestamp(seq), TS_SERVER);
            if let Some(buf) = chunks.last_mut() {
                buf.push_tuple(&table, c as i64 + 1, seq, ts, &values)?;
            }
            in_chunk += 1;
        }
    }
    let sql = ddl::copy_in(&table);
    let start = Instant::now();
    for buf in &chunks {
        client.batch_execute("BEGIN")?;
        let mut w = client.copy_in(&sql)?;
        for part in buf.stream() {
            std::io::Write::write_all(&mut w, part)?;
        }
        w.finish().context("raw COPY")?;
        client.batch_execute("COMMIT")?;
    }
    let took = start.elapsed();
    client.batch_execute(&format!("DROP TABLE {}", quote(&table.name)))?;
    Ok(took)
}

/// Inserts `rows` rows of client 0 one synchronous prepared INSERT at a
/// time, in one transaction; returns rows per second.
pub fn row_inserts(target: &PgTarget, schema: &Schema, rows: u64) -> Result<f64> {
    let mut client = target.opts.connect(&target.raw_db)?;
    let table = fresh_table(&mut client, schema)?;
    let cols: Vec<String> = ["oml_sender_id", "oml_seq", "oml_ts_client", "oml_ts_server"]
        .into_iter()
        .chain(schema.fields.iter().map(|f| f.name.as_str()))
        .map(quote)
        .collect();
    // uint64 goes as text into its NUMERIC column, as the reference sends
    // every value as text.
    let params: Vec<String> = (1..=4)
        .map(|i| format!("${i}"))
        .chain(schema.fields.iter().enumerate().map(|(i, f)| match f.ty {
            OmlType::UInt64 | OmlType::Guid => format!("${}::text::numeric", i + 5),
            _ => format!("${}", i + 5),
        }))
        .collect();
    let stmt = client.prepare(&format!(
        "INSERT INTO {} ({}) VALUES ({})",
        quote(&table.name),
        cols.join(", "),
        params.join(", ")
    ))?;
    let bound: Vec<Vec<Box<dyn ToSql + Sync>>> = (0..rows as i64)
        .map(|seq| {
            let mut p: Vec<Box<dyn ToSql + Sync>> = vec![
                Box::new(1i32),
                Box::new(seq),
                Box::new(workload::timestamp(seq)),
                Box::new(TS_SERVER),
            ];
            for v in workload::tuple(schema, 0, seq) {
                p.push(param(v)?);
            }
            Ok(p)
        })
        .collect::<Result<_>>()?;
    let start = Instant::now();
    client.batch_execute("BEGIN")?;
    for p in &bound {
        let refs: Vec<&(dyn ToSql + Sync)> = p.iter().map(|b| b.as_ref()).collect();
        client.execute(&stmt, &refs)?;
    }
    client.batch_execute("COMMIT")?;
    let took = start.elapsed();
    client.batch_execute(&format!("DROP TABLE {}", quote(&table.name)))?;
    Ok(rows as f64 / took.as_secs_f64())
}

/// A value as a statement parameter of its column's type.
fn param(v: Value) -> Result<Box<dyn ToSql + Sync>> {
    Ok(match v {
        Value::Int32(x) => Box::new(x),
        Value::UInt32(x) => Box::new(i64::from(x)),
        Value::Int64(x) => Box::new(x),
        Value::UInt64(x) | Value::Guid(x) => Box::new(x.to_string()),
        Value::Double(x) => Box::new(x),
        Value::Bool(x) => Box::new(x),
        Value::String(s) => Box::new(s),
        Value::Blob(b) => Box::new(b),
        other => anyhow::bail!("no parameter for {:?} values", other.oml_type()),
    })
}
