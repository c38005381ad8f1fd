//! The OML layout in PostgreSQL: one database per experiment domain.
//!
//! Same tables and bookkeeping as [`crate::sqlite`] (`_senders`,
//! `_experiment_metadata` with `table_<name>` and `start_time` rows, one
//! table per stream, `_2`..`_9` renaming), with the reference's PostgreSQL
//! column types except where they lose data (see [`ddl::pg_type`]).
//!
//! Several collection servers may write into one PostgreSQL, even into one
//! domain at once. Everything that changes a domain's catalog — the layout,
//! a table, a sender, the start time — runs in its own short transaction
//! under the domain's advisory lock ([`lock`]), after re-reading what other
//! servers committed, so all servers agree on names and ids.
//!
//! Write path: rows are encoded into a per-table binary COPY buffer as they
//! come ([`copy`]), in the types the table really has ([`columns`]), and
//! kept, with the sessions' offsets and clock records, until the commit:
//! then one transaction sends one `COPY … FROM STDIN (FORMAT binary)` per
//! table and the rest, and commits. Each COPY runs under a savepoint: if
//! PostgreSQL refuses it, the rows are retried one by one and only the rows
//! it refuses are dropped (counted, and logged once per table and commit).
//! If the connection is lost instead, nothing is dropped: the writer
//! reconnects ([`link`]) and sends the whole transaction again — unless
//! the lost answer was to its COMMIT and `txid_status` says it committed,
//! so no row is stored twice.
//!
//! Optionally ([`Partitioning`]), new stream tables are partitioned by
//! `oml_tuple_id` with pg_partman, kept and expired after commits
//! ([`partition`]).

mod catalog;
pub mod columns;
pub mod committed;
pub mod copy;
pub mod ddl;
mod link;
mod lock;
mod options;
pub mod partition;
mod pump;
mod write;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

use ::postgres::Client;
use omsp::metadata::{schema0, SCHEMA0_NAME};
use omsp::Schema;

pub use columns::Uint64Layout;
pub use committed::CommittedRows;
pub use options::PgOptions;
pub use partition::Partitioning;

use crate::catalog::START_TIME_KEY;
use crate::clock::{ClockEstimate, ClockReport};
use crate::commit::CommitPolicy;
use crate::error::StoreError;
use crate::row::{Row, TableId};
use crate::sink::Sink;
use catalog::{Catalog, Db};

/// Queued COPY bytes (over all tables) that trigger a commit before the
/// policy's, so memory stays bounded with large rows.
const FLUSH_BYTES: usize = 16 << 20;

/// How long commits go without the pump after it could not be started.
const PUMP_RETRY: std::time::Duration = std::time::Duration::from_secs(60);

/// What waits for the next commit besides the tables' rows.
#[derive(Debug, Default)]
struct Deferred {
    /// Session → (sender, offset) to record (the latest only).
    sessions: BTreeMap<String, (i32, i64)>,
    /// Clock records, in order.
    clock: Vec<ClockRecord>,
}

/// A clock record waiting for the commit.
#[derive(Debug)]
enum ClockRecord {
    Estimate(ClockEstimate),
    Report(ClockReport),
}

/// An open per-domain PostgreSQL database in the OML layout.
///
/// Rows are kept until [`commit`](Sink::commit) (or
/// [`commit_if_due`](Sink::commit_if_due)) writes them in one transaction.
/// Dropping the store commits what is pending.
pub struct PgStore {
    /// How to connect again after losing the connection.
    opts: PgOptions,
    /// The domain (its database's name).
    domain: String,
    /// The connection to the domain's database (its only writer here).
    client: Client,
    /// `postgresql://<user>@<host>:<port>/<domain>`, for the hook and logs.
    uri: String,
    /// True if the database had no `start_time` when opened.
    created: bool,
    /// The experiment's start time, once known.
    start_time: Option<i64>,
    /// Stream tables and their pending rows.
    catalog: Catalog,
    /// `_senders`, cached: name → id (ids never change once given).
    senders: HashMap<String, i64>,
    /// Pending work: since when, and how many rows.
    tx: Option<(Instant, usize)>,
    /// Bytes queued in the tables' COPY buffers.
    queued_bytes: usize,
    /// Session offsets and clock records for the next commit.
    deferred: Deferred,
    /// Tables of ours created on first use that this store has seen exist.
    aux_ready: HashSet<&'static str>,
    /// The transaction whose COMMIT got no answer (the connection died):
    /// its id, to ask `txid_status` before sending the rows again.
    in_doubt: Option<i64>,
    /// Rows the database refused since [`PgStore::take_refused`].
    refused: u64,
    /// Partition maintenance (with `--pg-partition`).
    upkeep: partition::Upkeep,
    /// Streams a large table's rows while more are encoded ([`pump`]);
    /// started on first use.
    pump: Option<pump::Pump>,
    /// The pump's connection while no transaction is streaming.
    data: Option<Client>,
    /// The table being streamed in the open transaction, and how many of
    /// its encoded bytes the pump has been given.
    streaming: Option<(TableId, usize)>,
    /// When the pump last could not be started (no second connection, no
    /// thread): until [`PUMP_RETRY`] later, commits send everything at once.
    pump_off: Option<Instant>,
    /// Keep each commit's rows for live readers ([`PgStore::keep_committed`]).
    keep: bool,
    /// The last commit's rows, by table, while `keep` is on (until
    /// [`PgStore::committed_ends`] tells their ids).
    kept: Vec<(TableId, committed::Encoded)>,
    /// Each table's highest committed id as last read.
    ends: HashMap<TableId, i64>,
    /// Whether transactions read their tables' ends at `BEGIN` (from the
    /// first time someone followed the domain live on).
    probe_on: bool,
    /// Ends read at the `BEGIN` of the last commit's transaction, by table
    /// (`None`: unreadable).
    begun: Vec<(TableId, Option<i64>)>,
    /// Tables whose ends the pump's `BEGIN` reads, in its order.
    probing: Vec<TableId>,
    /// Rows whose ids are known, for [`PgStore::take_committed_rows`].
    handed: Vec<CommittedRows>,
    /// Tables that had rows in the last successful commit (for
    /// [`Sink::committed_ends`]).
    committed: Vec<TableId>,
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
    /// its layout if needed; waits out a PostgreSQL that is restarting.
    /// Blocking; call from a plain thread.
    pub fn open(opts: &PgOptions, domain: &str) -> Result<PgStore, StoreError> {
        let uri = opts.uri(domain);
        link::persist(opts, &uri, || opts.ensure_database(domain))?;
        let client = link::persist(opts, &uri, || opts.connect(domain))?;
        let mut store = PgStore {
            opts: opts.clone(),
            domain: domain.to_owned(),
            client,
            uri,
            created: false,
            start_time: None,
            catalog: Catalog::new(catalog::NAME_CASE),
            senders: HashMap::new(),
            tx: None,
            queued_bytes: 0,
            deferred: Deferred::default(),
            aux_ready: HashSet::new(),
            in_doubt: None,
            refused: 0,
            upkeep: partition::Upkeep::default(),
            pump: None,
            data: None,
            streaming: None,
            pump_off: None,
            committed: Vec::new(),
            keep: false,
            kept: Vec::new(),
            ends: HashMap::new(),
            probe_on: false,
            begun: Vec::new(),
            probing: Vec::new(),
            handed: Vec::new(),
        };
        store.start_time = store.locked(|s| s.init_layout())?;
        store.created = store.start_time.is_none();
        Ok(store)
    }

    /// Under the catalog lock: the senders table, the catalog, schema 0;
    /// returns the start time if one is stored.
    fn init_layout(&mut self) -> Result<Option<i64>, StoreError> {
        if self.opts.partition.is_some() {
            self.upkeep.schema = Some(partition::ensure_extension(&mut self.client, &self.uri)?);
        }
        let has_senders: bool = self
            .client
            .query_one("SELECT to_regclass('_senders') IS NOT NULL", &[])?
            .get(0);
        if !has_senders {
            self.client.batch_execute(ddl::CREATE_SENDERS)?;
        }
        let mut db = Db {
            client: &mut self.client,
            uint64: self.opts.uint64,
            partition: self
                .opts
                .partition
                .as_ref()
                .zip(self.upkeep.schema.as_deref()),
        };
        self.catalog.refresh(&mut db, &self.uri)?;
        if self.catalog.find(SCHEMA0_NAME).is_none() {
            self.catalog.register(&mut db, &schema0())?;
        }
        read_start_time(&mut self.client)
    }

    /// Runs `f` until it succeeds or fails for another reason than a lost
    /// connection or storage that cannot take data now
    /// ([`link::is_unavailable`]: a full disk, a read-only server),
    /// reconnecting after each loss and pausing while storage fails.
    fn retry<T>(
        &mut self,
        mut f: impl FnMut(&mut PgStore) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut outage: Option<link::Outage> = None;
        loop {
            match f(self) {
                Err(e) if link::is_lost(&e, Some(&self.client)) => {
                    self.client = link::reconnect(&self.opts, &self.domain, &self.uri, &e);
                }
                Err(e) if link::is_unavailable(&e) => {
                    // The connection is fine; its transaction is aborted.
                    let _ = self.client.batch_execute("ROLLBACK");
                    outage
                        .get_or_insert_with(|| link::Outage::start(&self.uri, &e))
                        .pause();
                }
                other => {
                    if let Some(o) = outage {
                        o.end(&self.uri);
                    }
                    return other;
                }
            }
        }
    }

    /// Runs `f` in its own transaction under the catalog lock, and commits
    /// it (retried whole after a lost connection: every `f` re-reads what
    /// it decides on, so running it again is harmless). Tables `f` added to
    /// the catalog are forgotten again if the transaction fails.
    fn locked<T>(
        &mut self,
        mut f: impl FnMut(&mut PgStore) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.retry(|s| {
            let known = s.catalog.len();
            let res = s
                .client
                .batch_execute("BEGIN")
                .map_err(StoreError::from)
                .and_then(|()| lock::catalog(&mut s.client))
                .and_then(|()| f(s))
                .and_then(|v| Ok(s.client.batch_execute("COMMIT").map(|()| v)?));
            if res.is_err() {
                s.catalog.truncate(known);
                let _ = s.client.batch_execute("ROLLBACK");
            }
            res
        })
    }

    /// Creates one of our own tables (`CREATE TABLE IF NOT EXISTS`, which
    /// is not safe against a concurrent twin, hence the lock) once.
    fn ensure_aux(&mut self, name: &'static str, ddl: &'static str) -> Result<(), StoreError> {
        if !self.aux_ready.contains(name) {
            self.locked(|s| Ok(s.client.batch_execute(ddl)?))?;
            self.aux_ready.insert(name);
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

    /// Rows pending for the next commit (`None` if nothing is pending).
    pub fn pending_rows(&self) -> Option<usize> {
        self.tx.map(|(_, n)| n)
    }

    /// Rows the database refused at commits since the last call (the rows
    /// [`Sink::insert`] accepted but PostgreSQL did not store).
    pub fn take_refused(&mut self) -> u64 {
        std::mem::take(&mut self.refused)
    }

    /// Sends every pending row and record in one transaction and commits it.
    pub fn flush(&mut self) -> Result<(), StoreError> {
        if self.tx.is_none() {
            return Ok(());
        }
        let touched: Vec<TableId> = (0..self.catalog.len())
            .map(TableId)
            .filter(|&id| self.catalog.get(id).is_some_and(|t| !t.pending.is_empty()))
            .collect();
        let refused = self.refused;
        self.begun.clear();
        let res = self.retry(write::commit_once);
        // Every row of every table went in: keep them for live readers.
        self.kept.clear();
        if self.keep && res.is_ok() && self.refused == refused {
            for &id in &touched {
                if let Some(t) = self.catalog.get_mut(id) {
                    self.kept.push((id, t.pending.take()));
                }
            }
        }
        self.committed = if res.is_ok() { touched } else { Vec::new() };
        if let Err(e) = &res {
            // Refused for good (not a lost connection): end the transaction,
            // whatever state it is in; its rows are not stored.
            let _ = self.client.batch_execute("ROLLBACK");
            let lost = self.catalog_rows();
            self.refused += lost;
            tracing::error!(db = %self.uri, rows = lost, error = %e,
                "PostgreSQL refused the commit transaction; its rows are not stored");
        }
        // Done, or refused for good (not a lost connection): either way
        // this work is over; refused rows are counted by `commit_once`.
        self.tx = None;
        self.queued_bytes = 0;
        self.deferred = Deferred::default();
        for t in self.catalog.tables_mut() {
            t.pending.clear();
        }
        res
    }

    /// The highest `oml_tuple_id` of each table the last commit wrote rows
    /// to, and of each table this store has not read one of before, read
    /// right after the commit (call it before inserting more). Live
    /// readers bound their scans by it: every row up to it is committed,
    /// while a scan past it would walk through the rows of the writer's
    /// next transaction, which the pump inserts before they commit
    /// (invisible, but each one checked, on the pages being filled).
    ///
    /// With [`PgStore::keep_committed`] on, the rows of each table whose
    /// ids this tells are then ready for [`PgStore::take_committed_rows`]
    /// (see [`committed`]).
    pub fn committed_ends(&mut self) -> Result<Vec<(String, i64)>, StoreError> {
        let kept = std::mem::take(&mut self.kept);
        self.handed.clear();
        // The tables the commit wrote to, and any this store has not read
        // an end of yet: without one, a reader woken by a commit that did
        // not touch its table (a reopened writer's first commits hold
        // only `_senders` and metadata) scans past the rows committed so
        // far, and would read back the rows of a commit it is racing with
        // before that commit's rows are handed over.
        let mut touched = std::mem::take(&mut self.committed);
        touched.extend(
            (0..self.catalog.len())
                .map(TableId)
                .filter(|id| !self.ends.contains_key(id) && !touched.contains(id))
                .collect::<Vec<_>>(),
        );
        let (ids, names): (Vec<TableId>, Vec<String>) = touched
            .into_iter()
            .filter_map(|id| Some((id, self.catalog.get(id)?.schema.name.clone())))
            .unzip();
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let parts: Vec<String> = names
            .iter()
            .map(|n| {
                format!(
                    "(SELECT CAST(max(oml_tuple_id) AS int8) FROM {})",
                    crate::sql::quote(n)
                )
            })
            .collect();
        let answer = self
            .client
            .simple_query(&format!("SELECT {}", parts.join(", ")))?;
        let row = answer.iter().find_map(|m| match m {
            ::postgres::SimpleQueryMessage::Row(r) => Some(r),
            _ => None,
        });
        let Some(row) = row else {
            return Ok(Vec::new());
        };
        let ends: Vec<(TableId, String, i64)> = ids
            .into_iter()
            .zip(names)
            .enumerate()
            .filter_map(|(i, (id, n))| Some((id, n, row.get(i)?.parse().ok()?)))
            .collect();
        let mut kept = kept;
        for (id, name, end) in &ends {
            // Either end is below every id of the commit: the one read at
            // its BEGIN, else the one read after the commit before it.
            let previous = self.ends.insert(*id, *end);
            let at_begin = self
                .begun
                .iter()
                .find(|(t, _)| t == id)
                .and_then(|(_, e)| *e);
            let before = at_begin.or(previous);
            let Some(i) = kept.iter().position(|(k, _)| k == id) else {
                continue;
            };
            let (_, rows) = kept.swap_remove(i);
            let n = rows.1.len() as i64;
            if n == 0 || before != Some(end - n) {
                tracing::debug!(db = %self.uri, table = %name, rows = n, end, ?before, ?at_begin,
                    "a commit's rows are not handed over: their ids are not known");
                continue;
            }
            if let Some(columns) = self.copy_columns(*id) {
                let first = end - n + 1;
                self.handed
                    .push(CommittedRows::new(name.clone(), first, rows, columns));
            }
        }
        Ok(ends.into_iter().map(|(_, n, e)| (n, e)).collect())
    }

    /// Whether commits keep their rows for [`PgStore::take_committed_rows`]
    /// (while someone follows the domain live).
    pub fn keep_committed(&mut self, on: bool) {
        self.keep = on;
        self.probe_on |= on;
        if !on {
            self.kept.clear();
            self.handed.clear();
        }
    }

    /// The rows of the last commit whose ids [`PgStore::committed_ends`]
    /// could tell, by table.
    pub fn take_committed_rows(&mut self) -> Vec<CommittedRows> {
        std::mem::take(&mut self.handed)
    }

    /// The columns of `id`'s COPY, in order, with their types; `None` if a
    /// type has no binary form we read.
    fn copy_columns(
        &self,
        id: TableId,
    ) -> Option<std::sync::Arc<[(String, ::postgres::types::Type)]>> {
        let t = self.catalog.get(id)?;
        let l = t.layout.as_ref()?;
        let meta = [
            ("oml_sender_id", l.sender),
            ("oml_seq", l.seq),
            ("oml_ts_client", l.ts),
            ("oml_ts_server", l.ts),
        ];
        let fields = t
            .schema
            .fields
            .iter()
            .map(|f| f.name.as_str())
            .zip(l.fields.iter().copied());
        meta.into_iter()
            .chain(fields)
            .map(|(n, c)| Some((n.to_owned(), committed::pg_type(c)?)))
            .collect()
    }

    /// Rows pending in the tables (all lost if the commit is refused).
    fn catalog_rows(&self) -> u64 {
        self.tx.map_or(0, |(_, n)| n as u64)
    }

    /// Hands the pump what `id`'s table has encoded since the last chunk,
    /// starting to stream it once it holds [`pump::START`] bytes (if no
    /// other table streams in this transaction).
    fn stream(&mut self, id: TableId) {
        let Some(table) = self.catalog.get(id) else {
            return;
        };
        let encoded = table.pending.encoded();
        match self.streaming {
            Some((t, sent)) if t == id && encoded.len() - sent >= pump::CHUNK => {
                if let Some(p) = &self.pump {
                    p.data(encoded[sent..].to_vec());
                    self.streaming = Some((t, encoded.len()));
                }
            }
            None if encoded.len() >= pump::START
                && self.pump_off.is_none_or(|t| t.elapsed() >= PUMP_RETRY) =>
            {
                let client = match self.data.take() {
                    Some(c) => c,
                    None => match self.opts.connect(&self.domain) {
                        Ok(c) => c,
                        Err(e) => {
                            tracing::warn!(db = %self.uri, error = %e,
                                "no second connection for streaming COPY; commits send their rows at once");
                            self.pump_off = Some(Instant::now());
                            return;
                        }
                    },
                };
                if self.pump.is_none() {
                    match pump::Pump::spawn(&self.domain) {
                        Ok(p) => self.pump = Some(p),
                        Err(e) => {
                            tracing::warn!(db = %self.uri, error = %e,
                                "no thread for streaming COPY; commits send their rows at once");
                            self.pump_off = Some(Instant::now());
                            return;
                        }
                    }
                }
                let (probing, names) = self.probe();
                self.probing = probing;
                let Some(p) = &self.pump else { return };
                let Some(table) = self.catalog.get(id) else {
                    return;
                };
                let encoded = table.pending.encoded();
                p.start(client, &table.copy_sql, names);
                let mut first = Vec::with_capacity(copy::HEADER.len() + encoded.len());
                first.extend_from_slice(copy::HEADER);
                first.extend_from_slice(encoded);
                p.data(first);
                self.streaming = Some((id, encoded.len()));
            }
            _ => {}
        }
    }

    /// The tables whose ends a transaction's `BEGIN` reads (those with
    /// rows pending, once someone followed the domain live), and their
    /// names.
    fn probe(&self) -> (Vec<TableId>, Vec<String>) {
        if !self.probe_on {
            return (Vec::new(), Vec::new());
        }
        (0..self.catalog.len())
            .map(TableId)
            .filter_map(|id| {
                let t = self.catalog.get(id)?;
                (!t.pending.is_empty()).then(|| (id, t.schema.name.clone()))
            })
            .unzip()
    }

    fn pending(&mut self) {
        if self.tx.is_none() {
            self.tx = Some((Instant::now(), 0));
        }
    }
}

fn read_start_time(client: &mut Client) -> Result<Option<i64>, StoreError> {
    Ok(client
        .query_opt(
            "SELECT value FROM _experiment_metadata WHERE key = $1 \
             AND oml_sender_id IS NULL ORDER BY oml_tuple_id LIMIT 1",
            &[&START_TIME_KEY],
        )?
        .and_then(|r| r.get::<_, Option<String>>(0))
        .and_then(|v| v.trim().parse().ok()))
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
        // Queued metadata rows go first, so `_experiment_metadata` keeps
        // the order in which things happened.
        self.flush()?;
        let t = self.locked(|s| match read_start_time(&mut s.client)? {
            Some(t) => Ok(t),
            None => {
                crate::catalog::CatalogDb::insert_bookkeeping(
                    &mut s.client,
                    START_TIME_KEY,
                    &client_start.to_string(),
                )?;
                Ok(client_start)
            }
        })?;
        self.start_time = Some(t);
        Ok(t)
    }

    fn sender_id(&mut self, name: &str) -> Result<i64, StoreError> {
        if let Some(&id) = self.senders.get(name) {
            return Ok(id);
        }
        let id = self.locked(|s| {
            let found = s
                .client
                .query_opt("SELECT id FROM _senders WHERE name = $1", &[&name])?;
            if let Some(id) = found.and_then(|r| r.get::<_, Option<i32>>(0)) {
                return Ok(id);
            }
            let row = s.client.query_one(
                "INSERT INTO _senders (name, id) \
                 SELECT $1, COALESCE(MAX(id), 0) + 1 FROM _senders \
                 ON CONFLICT (name) DO UPDATE SET id = COALESCE(_senders.id, excluded.id) \
                 RETURNING id",
                &[&name],
            )?;
            Ok(row.get::<_, i32>(0))
        })?;
        let id = i64::from(id);
        self.senders.insert(name.to_owned(), id);
        Ok(id)
    }

    fn register_schema(&mut self, schema: &Schema) -> Result<TableId, StoreError> {
        let id = match self.catalog.lookup(schema) {
            Some(id) => id,
            None => {
                self.flush()?;
                self.locked(|s| {
                    let mut db = Db {
                        client: &mut s.client,
                        uint64: s.opts.uint64,
                        partition: s.opts.partition.as_ref().zip(s.upkeep.schema.as_deref()),
                    };
                    s.catalog.refresh(&mut db, &s.uri)?;
                    Ok(s.catalog.register(&mut db, schema)?.0)
                })?
            }
        };
        let needs_layout = self.catalog.get(id).is_some_and(|t| t.layout.is_none());
        if needs_layout {
            let layout = self.retry(|s| {
                let schema = &s.catalog.get(id).expect("registered").schema;
                catalog::read_layout(&mut s.client, schema)
            })?;
            if let Some(t) = self.catalog.get_mut(id) {
                t.layout = Some(layout);
            }
        }
        Ok(id)
    }

    fn table_name(&self, id: TableId) -> Option<&str> {
        self.catalog.get(id).map(|t| t.schema.name.as_str())
    }

    fn insert(&mut self, row: &Row) -> Result<(), StoreError> {
        let unknown = |reason: &str| StoreError::Unstorable {
            table: format!("#{}", row.table.0),
            reason: reason.into(),
        };
        let table = self
            .catalog
            .get_mut(row.table)
            .ok_or_else(|| unknown("unknown table id"))?;
        let layout = table
            .layout
            .as_ref()
            .ok_or_else(|| unknown("table not registered"))?;
        let before = table.pending.bytes();
        table.pending.push(&table.schema, layout, row)?;
        self.queued_bytes += table.pending.bytes() - before;
        self.pending();
        if let Some((_, n)) = &mut self.tx {
            *n += 1;
        }
        self.stream(row.table);
        if self.queued_bytes >= FLUSH_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn session_offset(&mut self, id: &str) -> Result<u64, StoreError> {
        if let Some(&(_, offset)) = self.deferred.sessions.get(id) {
            return Ok(u64::try_from(offset).unwrap_or(0));
        }
        let offset: Option<i64> = self.retry(|s| {
            let exists: bool = s
                .client
                .query_one(
                    "SELECT to_regclass('_streamgauge_sessions') IS NOT NULL",
                    &[],
                )?
                .get(0);
            if !exists {
                return Ok(None);
            }
            Ok(s.client
                .query_opt(
                    "SELECT data_offset FROM _streamgauge_sessions WHERE session = $1",
                    &[&id],
                )?
                .map(|r| r.get(0)))
        })?;
        Ok(offset.map_or(0, |o| u64::try_from(o).unwrap_or(0)))
    }

    fn set_session_offset(&mut self, id: &str, sender: i64, offset: u64) -> Result<(), StoreError> {
        self.ensure_aux(crate::catalog::SESSIONS_TABLE, crate::sql::CREATE_SESSIONS)?;
        let sender = i32::try_from(sender).unwrap_or(i32::MAX);
        self.deferred
            .sessions
            .insert(id.to_owned(), (sender, offset as i64));
        self.pending();
        Ok(())
    }

    fn record_clock_estimate(&mut self, e: &ClockEstimate) -> Result<(), StoreError> {
        self.ensure_aux(crate::clock::CLOCK_TABLE, crate::clock::CREATE_CLOCK)?;
        self.deferred.clock.push(ClockRecord::Estimate(e.clone()));
        self.pending();
        Ok(())
    }

    fn record_clock_report(&mut self, r: &ClockReport) -> Result<(), StoreError> {
        self.ensure_aux(crate::clock::CLOCK_TABLE, crate::clock::CREATE_CLOCK)?;
        self.deferred.clock.push(ClockRecord::Report(r.clone()));
        self.pending();
        Ok(())
    }

    fn commit_if_due(&mut self, policy: &CommitPolicy, idle: bool) -> Result<bool, StoreError> {
        match self.tx {
            Some((started, rows)) if policy.due(rows, started, idle) => {
                self.commit()?;
                self.upkeep();
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        self.flush()
    }

    fn refused(&mut self) -> u64 {
        self.take_refused()
    }

    fn keep_committed(&mut self, on: bool) {
        PgStore::keep_committed(self, on);
    }

    fn keep_due(&self, policy: &CommitPolicy, idle: bool) -> bool {
        self.tx
            .is_some_and(|(started, rows)| policy.due(rows, started, idle))
    }

    fn committed_rows(&mut self) -> Vec<CommittedRows> {
        self.take_committed_rows()
    }

    fn committed_ends(&mut self) -> Option<Vec<(String, i64)>> {
        match PgStore::committed_ends(self) {
            Ok(ends) => Some(ends),
            Err(e) => {
                tracing::debug!(db = %self.uri, error = %e, "committed ends not read");
                None
            }
        }
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
