//! Watching the database from outside, as an analysis script would: when
//! are all rows committed and visible, and are they exactly what was sent.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use indicatif::ProgressBar;
use omsp::{Schema, Value};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::workload;

/// A read-only connection to the benchmark's database.
pub struct Watcher {
    /// Separate from the server's connection, so only committed rows count.
    conn: Connection,
    /// The quoted table name.
    table: String,
}

impl Watcher {
    /// Waits (up to `timeout`) for the server to create the file, then opens it.
    pub fn open(path: &Path, schema: &Schema, timeout: Duration) -> Result<Watcher> {
        let deadline = Instant::now() + timeout;
        while !path.exists() {
            ensure!(
                Instant::now() < deadline,
                "{} never appeared",
                path.display()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .with_context(|| format!("opening {}", path.display()))?;
        conn.busy_timeout(Duration::from_secs(5))?;
        Ok(Watcher {
            conn,
            table: store::sql::quote(&schema.name),
        })
    }

    /// Committed rows so far. `oml_tuple_id` is the rowid of a fresh table,
    /// so its maximum is the row count, found in O(log n) (a `COUNT(*)`
    /// every few milliseconds would steal the server's CPU).
    fn committed(&self) -> Result<u64> {
        let sql = format!("SELECT max(oml_tuple_id) FROM {}", self.table);
        match self
            .conn
            .query_row(&sql, [], |r| r.get::<_, Option<i64>>(0))
        {
            Ok(n) => Ok(n.unwrap_or(0) as u64),
            // The table is not committed yet.
            Err(rusqlite::Error::SqliteFailure(_, Some(m))) if m.contains("no such table") => Ok(0),
            Err(e) => Err(e.into()),
        }
    }

    /// Polls until `expected` rows are visible; returns when they were.
    /// Fails if nothing new appears for `stall`.
    pub fn wait_for(&self, expected: u64, stall: Duration, bar: &ProgressBar) -> Result<Instant> {
        let mut last = (0, Instant::now());
        loop {
            let n = self.committed()?;
            let now = Instant::now();
            bar.set_position(n);
            if n >= expected {
                return Ok(now);
            }
            if n > last.0 {
                last = (n, now);
            } else if now.duration_since(last.1) > stall {
                bail!("only {n} of {expected} rows after {stall:?} without progress");
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Zero loss: exactly `expected` rows, each client's sequence numbers
    /// complete, and every `stride`-th tuple holds exactly the values sent.
    pub fn check(&self, schema: &Schema, clients: usize, tuples: u64, stride: u64) -> Result<u64> {
        let count: i64 =
            self.conn
                .query_row(&format!("SELECT count(*) FROM {}", self.table), [], |r| {
                    r.get(0)
                })?;
        ensure!(count as u64 == tuples, "{count} rows stored, {tuples} sent");
        let mut checked = 0;
        for c in 0..clients {
            let n = workload::share(tuples, clients, c) as i64;
            let sender: i64 = self
                .conn
                .query_row(
                    "SELECT id FROM _senders WHERE name = ?1",
                    [workload::sender(c)],
                    |r| r.get(0),
                )
                .optional()?
                .with_context(|| format!("sender {} missing", workload::sender(c)))?;
            let (rows, lo, hi): (i64, Option<i64>, Option<i64>) = self.conn.query_row(
                &format!(
                    "SELECT count(DISTINCT oml_seq), min(oml_seq), max(oml_seq) FROM {} \
                     WHERE oml_sender_id = ?1",
                    self.table
                ),
                [sender],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
            ensure!(
                rows == n && (n == 0 || (lo, hi) == (Some(0), Some(n - 1))),
                "client {c}: {rows} distinct seqs in {lo:?}..={hi:?}, sent 0..{n}"
            );
            let mut stmt = self.conn.prepare(&format!(
                "SELECT * FROM {} WHERE oml_sender_id = ?1 AND oml_seq % ?2 = 0",
                self.table
            ))?;
            let mut q = stmt.query(rusqlite::params![sender, stride.max(1) as i64])?;
            while let Some(row) = q.next()? {
                let seq: i64 = row.get(2)?;
                let ts: f64 = row.get(3)?;
                ensure!(
                    (ts - workload::timestamp(seq)).abs() < 1e-3,
                    "client {c} seq {seq}: timestamp {ts}"
                );
                for (i, want) in workload::tuple(schema, c, seq).iter().enumerate() {
                    let got = row.get_ref(5 + i)?;
                    ensure!(
                        same(want, got),
                        "client {c} seq {seq} field {i}: stored {got:?}, sent {want:?}"
                    );
                }
                checked += 1;
            }
        }
        Ok(checked)
    }
}

/// Whether a stored value is exactly the one sent.
fn same(want: &Value, got: ValueRef<'_>) -> bool {
    match (want, got) {
        (Value::Int32(w), ValueRef::Integer(g)) => i64::from(*w) == g,
        (Value::UInt32(w), ValueRef::Integer(g)) => i64::from(*w) == g,
        (Value::Int64(w), ValueRef::Integer(g)) => *w == g,
        (Value::UInt64(w) | Value::Guid(w), g) => {
            store::sqlite::values::read_unsigned64(g) == Some(*w)
        }
        (Value::Double(w), ValueRef::Real(g)) => w.to_bits() == g.to_bits(),
        (Value::Bool(w), ValueRef::Integer(g)) => i64::from(*w) == g,
        (Value::String(w), ValueRef::Text(g)) => w.as_bytes() == g,
        _ => false,
    }
}
