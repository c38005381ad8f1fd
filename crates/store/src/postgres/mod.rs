//! The OML layout in PostgreSQL: one database per experiment domain.
//!
//! Same tables and bookkeeping as [`crate::sqlite`] (`_senders`,
//! `_experiment_metadata` with `table_<name>` and `start_time` rows, one
//! table per stream, `_2`..`_9` renaming), with the reference's PostgreSQL
//! column types except where they lose data (see [`ddl::pg_type`]).
//!
//! Write path: rows are encoded into a per-table binary COPY buffer as they
//! come ([`copy`]) and sent as one `COPY … FROM STDIN (FORMAT binary)` per
//! table when the transaction is committed (or the buffers grow large). Each
//! COPY, and each other write, runs under a savepoint: if PostgreSQL refuses
//! something, only that is undone — a refused COPY is retried row by row and
//! only the rows the database refuses are dropped (and logged). The
//! reference, whose failed INSERT aborts the open transaction, loses up to a
//! second of every client's rows there.

mod catalog;
pub mod copy;
pub mod ddl;
mod options;

use std::collections::HashMap;
use std::io::Write;
use std::time::Instant;

use ::postgres::Client;
use omsp::metadata::{schema0, SCHEMA0_NAME};
use omsp::Schema;

pub use options::PgOptions;

use crate::catalog::{CatalogDb, START_TIME_KEY};
use crate::clock::{ClockEstimate, ClockReport};
use crate::commit::CommitPolicy;
use crate::error::StoreError;
use crate::row::{Row, TableId};
use crate::sink::Sink;
use catalog::{Catalog, Table};

/// Queued COPY bytes (over all tables) that trigger a flush before the
/// commit, so memory stays bounded with large rows.
const FLUSH_BYTES: usize = 16 << 20;

/// An open per-domain PostgreSQL database in the OML layout.
///
/// Writes go into a transaction that is opened on the first write and ended
/// by [`commit`](Sink::commit) (or [`commit_if_due`](Sink::commit_if_due)).
/// Dropping the store commits what is pending.
pub struct PgStore {
    /// The connection to the domain's database (its only writer).
    client: Client,
    /// `postgresql://<user>@<host>:<port>/<domain>`, for the hook and logs.
    uri: String,
    /// True if the database had no `start_time` when opened.
    created: bool,
    /// The experiment's start time, once known.
    start_time: Option<i64>,
    /// Stream tables and their queued rows.
    catalog: Catalog,
    /// `_senders`, cached: name → id.
    senders: HashMap<String, i64>,
    /// Open transaction: when it began and how many rows it holds.
    tx: Option<(Instant, usize)>,
    /// Bytes queued in the tables' COPY buffers.
    queued_bytes: usize,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("uri", &self.uri)
            .field("created", &self.created)
            .field("tx", &self.tx)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Opens the database of `domain`, creating it (`CREATE DATABASE`) and
    /// its layout if needed. Blocking; call from a plain thread.
    pub fn open(opts: &PgOptions, domain: &str) -> Result<PgStore, StoreError> {
        opts.ensure_database(domain)?;
        let client = opts.connect(domain)?;
        let mut store = PgStore {
            client,
            uri: opts.uri(domain),
            created: false,
            start_time: None,
            catalog: Catalog::new(Client::NAME_CASE),
            senders: HashMap::new(),
            tx: None,
            queued_bytes: 0,
        };
        store.begin()?;
        store.init_layout()?;
        store.commit()?;
        Ok(store)
    }

    fn init_layout(&mut self) -> Result<(), StoreError> {
        self.catalog = Catalog::load(&mut self.client, &self.uri)?;
        let has_senders: bool = self
            .client
            .query_one("SELECT to_regclass('_senders') IS NOT NULL", &[])?
            .get(0);
        if !has_senders {
            self.client.batch_execute(ddl::CREATE_SENDERS)?;
        }
        if self.catalog.find(SCHEMA0_NAME).is_none() {
            self.catalog.register(&mut self.client, &schema0())?;
        }
        self.start_time = self
            .client
            .query_opt(
                "SELECT value FROM _experiment_metadata WHERE key = $1 \
                 AND oml_sender_id IS NULL ORDER BY oml_tuple_id LIMIT 1",
                &[&START_TIME_KEY],
            )?
            .and_then(|r| r.get::<_, Option<String>>(0))
            .and_then(|v| v.trim().parse().ok());
        self.created = self.start_time.is_none();
        for row in self.client.query("SELECT name, id FROM _senders", &[])? {
            let (name, id): (String, Option<i32>) = (row.get(0), row.get(1));
            if let Some(id) = id {
                self.senders.insert(name, i64::from(id));
            }
        }
        Ok(())
    }

    /// The experiment's start time (Unix seconds), if set.
    pub fn start_time(&self) -> Option<i64> {
        self.start_time
    }

    /// The schema of a table as stored (its name may carry a `_N` suffix).
    pub fn table_schema(&self, id: TableId) -> Option<&Schema> {
        self.catalog.get(id).map(|t| &t.schema)
    }

    /// The table called `name` (exact spelling), if this database has it.
    pub fn find_table(&self, name: &str) -> Option<TableId> {
        self.catalog.find(name)
    }

    /// Rows in the open transaction, sent or queued (`None` if none is open).
    pub fn pending_rows(&self) -> Option<usize> {
        self.tx.map(|(_, n)| n)
    }

    fn begin(&mut self) -> Result<(), StoreError> {
        if self.tx.is_none() {
            self.client.batch_execute("BEGIN")?;
            self.tx = Some((Instant::now(), 0));
        }
        Ok(())
    }

    /// Runs `f` in the open transaction under a savepoint: if it fails, what
    /// it did is undone and the transaction stays usable.
    fn guarded<T>(
        &mut self,
        f: impl FnOnce(&mut Client, &mut Catalog) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.begin()?;
        self.client.batch_execute("SAVEPOINT sg_write")?;
        match f(&mut self.client, &mut self.catalog) {
            Ok(v) => {
                self.client.batch_execute("RELEASE SAVEPOINT sg_write")?;
                Ok(v)
            }
            Err(e) => {
                self.client
                    .batch_execute("ROLLBACK TO SAVEPOINT sg_write; RELEASE SAVEPOINT sg_write")?;
                Err(e)
            }
        }
    }

    /// Sends every queued row (one COPY per table), in the open transaction.
    pub fn flush(&mut self) -> Result<(), StoreError> {
        if self.queued_bytes == 0 {
            return Ok(());
        }
        self.begin()?;
        for table in self.catalog.tables_mut() {
            if !table.pending.is_empty() {
                copy_table(&mut self.client, table, &self.uri)?;
                table.pending.clear();
            }
        }
        self.queued_bytes = 0;
        Ok(())
    }
}

/// One COPY of a table's queued rows under a savepoint; if PostgreSQL
/// refuses it, the rows are sent one by one and only the refused ones are
/// dropped, with a log line each.
fn copy_table(client: &mut Client, table: &Table, db: &str) -> Result<(), StoreError> {
    client.batch_execute("SAVEPOINT sg_copy")?;
    let err = match send(client, &table.copy_sql, &table.pending.stream()) {
        Ok(()) => return Ok(client.batch_execute("RELEASE SAVEPOINT sg_copy")?),
        Err(e) => e,
    };
    client.batch_execute("ROLLBACK TO SAVEPOINT sg_copy")?;
    if client.is_closed() {
        return Err(err);
    }
    let name = table.schema.name.as_str();
    tracing::warn!(db, table = name, error = %err, "COPY refused; retrying row by row");
    for (seq, parts) in table.pending.each_row() {
        match send(client, &table.copy_sql, &parts) {
            Ok(()) => client.batch_execute("RELEASE SAVEPOINT sg_copy; SAVEPOINT sg_copy")?,
            Err(e) => {
                client.batch_execute("ROLLBACK TO SAVEPOINT sg_copy")?;
                tracing::error!(db, table = name, seq, error = %e, "row not stored");
            }
        }
    }
    Ok(client.batch_execute("RELEASE SAVEPOINT sg_copy")?)
}

fn send(client: &mut Client, sql: &str, parts: &[&[u8]]) -> Result<(), StoreError> {
    let mut w = client.copy_in(sql)?;
    for p in parts {
        w.write_all(p)?;
    }
    w.finish()?;
    Ok(())
}

impl Sink for PgStore {
    fn description(&self) -> String {
        self.uri.clone()
    }

    fn uri(&self) -> String {
        self.uri.clone()
    }

    fn is_new(&self) -> bool {
        self.created
    }

    fn ensure_start_time(&mut self, client_start: i64) -> Result<i64, StoreError> {
        if let Some(t) = self.start_time {
            return Ok(t);
        }
        self.flush()?;
        self.guarded(|c, _| c.insert_bookkeeping(START_TIME_KEY, &client_start.to_string()))?;
        self.start_time = Some(client_start);
        Ok(client_start)
    }

    fn sender_id(&mut self, name: &str) -> Result<i64, StoreError> {
        if let Some(&id) = self.senders.get(name) {
            return Ok(id);
        }
        let id = self.guarded(|c, _| {
            let id: i32 = c
                .query_one("SELECT COALESCE(MAX(id), 0) + 1 FROM _senders", &[])?
                .get(0);
            c.execute(
                "INSERT INTO _senders (name, id) VALUES ($1, $2)",
                &[&name, &id],
            )?;
            Ok(i64::from(id))
        })?;
        self.senders.insert(name.to_owned(), id);
        Ok(id)
    }

    fn register_schema(&mut self, schema: &Schema) -> Result<TableId, StoreError> {
        // Queued metadata rows go first, so `_experiment_metadata` keeps the
        // order in which things happened.
        self.flush()?;
        self.guarded(|c, cat| Ok(cat.register(c, schema)?.0))
    }

    fn table_name(&self, id: TableId) -> Option<&str> {
        self.catalog.get(id).map(|t| t.schema.name.as_str())
    }

    fn insert(&mut self, row: &Row) -> Result<(), StoreError> {
        self.begin()?;
        let table = self
            .catalog
            .get_mut(row.table)
            .ok_or_else(|| StoreError::Unstorable {
                table: format!("#{}", row.table.0),
                reason: "unknown table id".into(),
            })?;
        let before = table.pending.bytes();
        table.pending.push(&table.schema, row)?;
        self.queued_bytes += table.pending.bytes() - before;
        if let Some((_, n)) = &mut self.tx {
            *n += 1;
        }
        if self.queued_bytes >= FLUSH_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn session_offset(&mut self, id: &str) -> Result<u64, StoreError> {
        let offset: Option<i64> = self.guarded(|c, _| {
            let exists: bool = c
                .query_one(
                    "SELECT to_regclass('_streamgauge_sessions') IS NOT NULL",
                    &[],
                )?
                .get(0);
            if !exists {
                return Ok(None);
            }
            Ok(c.query_opt(
                "SELECT data_offset FROM _streamgauge_sessions WHERE session = $1",
                &[&id],
            )?
            .map(|r| r.get(0)))
        })?;
        Ok(offset.map_or(0, |o| u64::try_from(o).unwrap_or(0)))
    }

    fn set_session_offset(&mut self, id: &str, sender: i64, offset: u64) -> Result<(), StoreError> {
        let sender = i32::try_from(sender).unwrap_or(i32::MAX);
        let offset = offset as i64;
        self.guarded(|c, _| {
            c.batch_execute(crate::sql::CREATE_SESSIONS)?;
            c.execute(
                "INSERT INTO _streamgauge_sessions (session, sender_id, data_offset) \
                 VALUES ($1, $2, $3) ON CONFLICT (session) DO UPDATE SET \
                 sender_id = excluded.sender_id, data_offset = excluded.data_offset",
                &[&id, &sender, &offset],
            )?;
            Ok(())
        })
    }

    fn record_clock_estimate(&mut self, e: &ClockEstimate) -> Result<(), StoreError> {
        let sender = i32::try_from(e.sender).unwrap_or(i32::MAX);
        let samples = i32::try_from(e.samples).unwrap_or(i32::MAX);
        self.guarded(|c, _| {
            c.batch_execute(crate::clock::CREATE_CLOCK)?;
            c.execute(
                &crate::clock::pg(crate::clock::UPSERT_ESTIMATE),
                &[
                    &sender,
                    &e.name,
                    &e.start_time,
                    &e.connected_at,
                    &e.offset,
                    &samples,
                ],
            )?;
            Ok(())
        })
    }

    fn record_clock_report(&mut self, r: &ClockReport) -> Result<(), StoreError> {
        let sender = i32::try_from(r.sender).unwrap_or(i32::MAX);
        let synchronized = i32::from(r.synchronized);
        self.guarded(|c, _| {
            c.batch_execute(crate::clock::CREATE_CLOCK)?;
            c.execute(
                &crate::clock::pg(crate::clock::UPSERT_REPORT),
                &[
                    &sender,
                    &r.name,
                    &r.source,
                    &r.daemon,
                    &synchronized,
                    &r.offset,
                    &r.maxerror,
                    &r.esterror,
                    &r.reported_at,
                ],
            )?;
            Ok(())
        })
    }

    fn commit_if_due(&mut self, policy: &CommitPolicy, idle: bool) -> Result<bool, StoreError> {
        match self.tx {
            Some((started, rows)) if policy.due(rows, started, idle) => {
                self.commit()?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        self.flush()?;
        if self.tx.is_some() {
            let res = self.client.batch_execute("COMMIT");
            // Whether it worked or the connection is gone, that transaction is over.
            self.tx = None;
            res?;
        }
        Ok(())
    }

    fn close(mut self) -> Result<(), StoreError> {
        self.commit()
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        if let Err(e) = self.commit() {
            tracing::error!(db = %self.uri, error = %e, "final commit failed");
        }
    }
}
