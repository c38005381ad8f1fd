//! Watching a PostgreSQL domain database from a separate connection: when
//! are all rows committed and visible, and are they exactly what was sent.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use indicatif::ProgressBar;
use omsp::{OmlType, Schema, Value};
use postgres::error::SqlState;
use postgres::Client;
use store::sql::quote;
use store::PgOptions;

use crate::workload;

/// A connection of its own to the benchmark's database.
pub struct PgWatcher {
    /// Separate from the server's connection, so only committed rows count.
    client: Client,
    /// The quoted table name.
    table: String,
}

impl PgWatcher {
    /// Waits (up to `timeout`) for the server to create database `domain`,
    /// then connects to it.
    pub fn open(
        opts: &PgOptions,
        domain: &str,
        schema: &Schema,
        timeout: Duration,
    ) -> Result<Self> {
        let deadline = Instant::now() + timeout;
        let client = loop {
            match opts.connect(domain) {
                Ok(c) => break c,
                Err(e) if Instant::now() >= deadline => {
                    return Err(e).with_context(|| format!("database {domain} never appeared"))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        };
        Ok(PgWatcher {
            client,
            table: quote(&schema.name),
        })
    }

    /// Runs a one-number query; a table not committed yet counts as empty.
    fn number(&mut self, sql: &str) -> Result<u64> {
        match self.client.query_one(sql, &[]) {
            Ok(row) => Ok(row.get::<_, Option<i64>>(0).unwrap_or(0) as u64),
            Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => Ok(0),
            Err(e) => Err(e.into()),
        }
    }

    fn count(&mut self) -> Result<u64> {
        self.number(&format!("SELECT count(*) FROM {}", self.table))
    }

    /// Polls until `expected` rows are visible; returns when they were.
    ///
    /// `oml_tuple_id` is a SERIAL written by one connection in one
    /// transaction at a time, so with ids 1..=n the rows are all visible
    /// once a row with id ≥ `expected` is: a lookup through the primary key
    /// that stays O(log n) even while the server's open transaction holds
    /// thousands of invisible rows (polling `COUNT(*)` or `max()` every few
    /// milliseconds would scan them and steal the server's CPU). `COUNT(*)`
    /// must then confirm it (a refused row leaves a gap, so the ids run
    /// ahead of the count); if it does not, `COUNT(*)` is polled. Progress
    /// is the id sequence (rows sent, committed or not); fails if it does
    /// not move for `stall`.
    pub fn wait_for(
        &mut self,
        expected: u64,
        stall: Duration,
        bar: &ProgressBar,
    ) -> Result<Instant> {
        let done = format!(
            "SELECT count(*) FROM (SELECT 1 FROM {} WHERE oml_tuple_id >= {expected} LIMIT 1) t",
            self.table
        );
        let sent = format!(
            "SELECT pg_sequence_last_value(pg_get_serial_sequence('{}', 'oml_tuple_id'))",
            self.table.replace('\'', "''")
        );
        let mut last = (0, Instant::now());
        let mut by_count = false;
        let mut poll = 0u64;
        loop {
            let now = Instant::now();
            if by_count {
                if self.count()? == expected {
                    return Ok(now);
                }
            } else if self.number(&done)? > 0 {
                if self.count()? == expected {
                    return Ok(now);
                }
                by_count = true;
            }
            if poll.is_multiple_of(50) {
                let n = self.number(&sent)?;
                bar.set_position(n.min(expected));
                if n > last.0 {
                    last = (n, now);
                } else if now.duration_since(last.1) > stall {
                    let n = self.count()?;
                    bail!("only {n} of {expected} rows after {stall:?} without progress");
                }
            }
            poll += 1;
            std::thread::sleep(Duration::from_millis(if by_count { 20 } else { 2 }));
        }
    }

    /// Zero loss: exactly `tuples` rows, each client's sequence numbers
    /// complete, and every `stride`-th tuple holds exactly the values sent.
    pub fn check(
        &mut self,
        schema: &Schema,
        clients: usize,
        tuples: u64,
        stride: u64,
    ) -> Result<u64> {
        let count = self.count()?;
        ensure!(count == tuples, "{count} rows stored, {tuples} sent");
        // NUMERIC has no native Rust type here: compare its exact text.
        let fields: Vec<String> = schema
            .fields
            .iter()
            .map(|f| match f.ty {
                OmlType::UInt64 | OmlType::Guid => format!("{}::text", quote(&f.name)),
                _ => quote(&f.name),
            })
            .collect();
        let sample = format!(
            "SELECT oml_seq, oml_ts_client, {} FROM {} WHERE oml_sender_id = $1 AND oml_seq % $2 = 0",
            fields.join(", "),
            self.table
        );
        let mut checked = 0;
        for c in 0..clients {
            let n = workload::share(tuples, clients, c) as i64;
            let name = workload::sender(c);
            let sender: i32 = self
                .client
                .query_opt("SELECT id FROM _senders WHERE name = $1", &[&name])?
                .with_context(|| format!("sender {name} missing"))?
                .get(0);
            let row = self.client.query_one(
                &format!(
                    "SELECT count(DISTINCT oml_seq), min(oml_seq), max(oml_seq) FROM {} \
                     WHERE oml_sender_id = $1",
                    self.table
                ),
                &[&sender],
            )?;
            let (rows, lo, hi): (i64, Option<i64>, Option<i64>) =
                (row.get(0), row.get(1), row.get(2));
            ensure!(
                rows == n && (n == 0 || (lo, hi) == (Some(0), Some(n - 1))),
                "client {c}: {rows} distinct seqs in {lo:?}..={hi:?}, sent 0..{n}"
            );
            for row in self
                .client
                .query(&sample, &[&sender, &(stride.max(1) as i64)])?
            {
                let seq: i64 = row.get(0);
                let ts: f64 = row.get(1);
                ensure!(
                    (ts - workload::timestamp(seq)).abs() < 1e-3,
                    "client {c} seq {seq}: timestamp {ts}"
                );
                for (i, want) in workload::tuple(schema, c, seq).iter().enumerate() {
                    ensure!(
                        same(want, &row, 2 + i)?,
                        "client {c} seq {seq} field {i}: stored value differs from {want:?}"
                    );
                }
                checked += 1;
            }
        }
        Ok(checked)
    }
}

/// Whether column `i` of `row` holds exactly the value sent.
fn same(want: &Value, row: &postgres::Row, i: usize) -> Result<bool> {
    Ok(match want {
        Value::Int32(w) => row.try_get::<_, i32>(i)? == *w,
        Value::UInt32(w) => row.try_get::<_, i64>(i)? == i64::from(*w),
        Value::Int64(w) => row.try_get::<_, i64>(i)? == *w,
        Value::UInt64(w) | Value::Guid(w) => row.try_get::<_, String>(i)? == w.to_string(),
        Value::Double(w) => row.try_get::<_, f64>(i)?.to_bits() == w.to_bits(),
        Value::Bool(w) => row.try_get::<_, bool>(i)? == *w,
        Value::String(w) => row.try_get::<_, String>(i)? == *w,
        Value::Blob(w) => row.try_get::<_, Vec<u8>>(i)? == *w,
        other => bail!("no check for {:?} values", other.oml_type()),
    })
}
