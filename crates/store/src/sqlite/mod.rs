//! The OML layout in SQLite: one `<domain>.sq3` file per experiment domain.

mod catalog;
pub mod ddl;
mod rollback;
pub mod values;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use omsp::metadata::schema0;
use omsp::names::is_valid_domain;
use omsp::Schema;
use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::catalog::{CatalogDb, START_TIME_KEY};
use crate::clock::{ClockEstimate, ClockReport};
use crate::commit::CommitPolicy;
use crate::error::StoreError;
use crate::row::{Row, TableId};
use catalog::Catalog;
pub use catalog::MULTI_ROWS;

/// Connection settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqliteOptions {
    /// How long a statement waits for another connection's lock (readers
    /// never block the writer in WAL mode, but a second writer would).
    pub busy_timeout: Duration,
    /// Prepared statements kept per connection (one INSERT per table).
    pub statement_cache: usize,
}

impl Default for SqliteOptions {
    fn default() -> SqliteOptions {
        SqliteOptions {
            busy_timeout: Duration::from_secs(5),
            statement_cache: 256,
        }
    }
}

/// An open `<domain>.sq3` database in the OML layout.
///
/// Writes go into a transaction that is opened on the first write and ended
/// by [`commit`](SqliteStore::commit) (or [`commit_if_due`](SqliteStore::commit_if_due)).
/// Dropping the store commits what is pending.
#[derive(Debug)]
pub struct SqliteStore {
    /// The connection (the only writer of this file).
    conn: Connection,
    /// `<dir>/<domain>.sq3`.
    path: PathBuf,
    /// True if the file had no `start_time` when opened (a new experiment).
    created: bool,
    /// The experiment's start time, once known.
    start_time: Option<i64>,
    /// Stream tables.
    catalog: Catalog,
    /// `_senders`, cached: name → id.
    senders: HashMap<String, i64>,
    /// Id the next new sender gets (max + 1).
    next_sender: i64,
    /// Open transaction: when it began and how many rows it holds.
    tx: Option<(Instant, usize)>,
    /// The caches as of the last commit, restored if the open transaction
    /// is rolled back after a storage failure (see [`rollback`]).
    saved: rollback::Saved,
}

impl SqliteStore {
    /// Opens or creates `<dir>/<domain>.sq3`. The domain must satisfy
    /// [`is_valid_domain`], so the file is always directly inside `dir`.
    pub fn open(dir: &Path, domain: &str, opts: SqliteOptions) -> Result<SqliteStore, StoreError> {
        if !is_valid_domain(domain) {
            return Err(StoreError::InvalidDomain(domain.to_owned()));
        }
        if !dir.is_dir() {
            return Err(StoreError::DataDir {
                path: dir.to_owned(),
                reason: "not a directory".into(),
            });
        }
        let path = dir.join(format!("{domain}.sq3"));
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(opts.busy_timeout)?;
        conn.set_prepared_statement_cache_capacity(opts.statement_cache);
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(db = %path.display(), mode, "could not switch to WAL journal mode");
        }
        conn.execute_batch("PRAGMA synchronous = NORMAL;")?;
        let mut store = SqliteStore {
            catalog: Catalog::new(Connection::NAME_CASE),
            conn,
            path,
            created: false,
            start_time: None,
            senders: HashMap::new(),
            next_sender: 1,
            tx: None,
            saved: rollback::Saved::default(),
        };
        store.begin()?;
        store.init_layout()?;
        store.commit()?;
        Ok(store)
    }

    fn init_layout(&mut self) -> Result<(), StoreError> {
        self.catalog = Catalog::load(&mut self.conn, &self.path.display().to_string())?;
        let has_senders: bool = self.conn.query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = '_senders'",
            [],
            |r| r.get(0),
        )?;
        if !has_senders {
            self.conn.execute_batch(ddl::CREATE_SENDERS)?;
        }
        if self.catalog.find(omsp::metadata::SCHEMA0_NAME).is_none() {
            self.catalog.register(&mut self.conn, &schema0())?;
        }
        self.start_time = self
            .conn
            .query_row(
                "SELECT value FROM _experiment_metadata WHERE key = ?1 \
                 AND oml_sender_id IS NULL ORDER BY oml_tuple_id LIMIT 1",
                [START_TIME_KEY],
                |r| r.get::<_, Option<String>>(0),
            )
            .optional()?
            .flatten()
            .and_then(|v| v.trim().parse().ok());
        self.created = self.start_time.is_none();
        let mut stmt = self.conn.prepare("SELECT name, id FROM _senders")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
        for row in rows {
            let (name, id) = row?;
            self.next_sender = self.next_sender.max(id.saturating_add(1));
            self.senders.insert(name, id);
        }
        Ok(())
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `file:<absolute path>` (the event hook's URI for this database).
    pub fn uri(&self) -> String {
        let abs = std::fs::canonicalize(&self.path).unwrap_or_else(|_| self.path.clone());
        format!("file:{}", abs.display())
    }

    /// True if this open created the experiment (no `start_time` was stored).
    pub fn is_new(&self) -> bool {
        self.created
    }

    /// The experiment's start time (Unix seconds), if set.
    pub fn start_time(&self) -> Option<i64> {
        self.start_time
    }

    /// Sets the start time if the database has none yet (the first client's
    /// `start-time` wins) and returns the one in force.
    pub fn ensure_start_time(&mut self, client_start: i64) -> Result<i64, StoreError> {
        if let Some(t) = self.start_time {
            return Ok(t);
        }
        let r = self.begin().and_then(|()| {
            self.conn
                .insert_bookkeeping(START_TIME_KEY, &client_start.to_string())
        });
        self.guard(r)?;
        self.start_time = Some(client_start);
        Ok(client_start)
    }

    /// The id of sender `name` in `_senders`, adding it (max + 1) if new.
    pub fn sender_id(&mut self, name: &str) -> Result<i64, StoreError> {
        if let Some(&id) = self.senders.get(name) {
            return Ok(id);
        }
        let id = self.next_sender;
        let r = self.begin().and_then(|()| {
            self.conn
                .prepare_cached("INSERT INTO _senders (name, id) VALUES (?1, ?2)")?
                .execute(rusqlite::params![name, id])?;
            Ok(())
        });
        self.guard(r)?;
        self.next_sender += 1;
        self.senders.insert(name.to_owned(), id);
        self.added_sender(name);
        Ok(id)
    }

    /// The stored data offset of resumable session `id` (0 if unknown).
    pub fn session_offset(&mut self, id: &str) -> Result<u64, StoreError> {
        let r = self.read_session_offset(id);
        self.guard(r)
    }

    fn read_session_offset(&self, id: &str) -> Result<u64, StoreError> {
        let exists: bool = self.conn.query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' \
             AND name = '_streamgauge_sessions'",
            [],
            |r| r.get(0),
        )?;
        if !exists {
            return Ok(0);
        }
        let offset: Option<i64> = self
            .conn
            .prepare_cached("SELECT data_offset FROM _streamgauge_sessions WHERE session = ?1")?
            .query_row([id], |r| r.get(0))
            .optional()?;
        Ok(offset.map_or(0, |o| u64::try_from(o).unwrap_or(0)))
    }

    /// Records, in the open transaction, that session `id` is stored up to `offset`.
    pub fn set_session_offset(
        &mut self,
        id: &str,
        sender: i64,
        offset: u64,
    ) -> Result<(), StoreError> {
        let r = self.begin().and_then(|()| {
            self.conn.execute_batch(crate::sql::CREATE_SESSIONS)?;
            self.conn
                .prepare_cached(
                    "INSERT INTO _streamgauge_sessions (session, sender_id, data_offset) \
                     VALUES (?1, ?2, ?3) ON CONFLICT(session) DO UPDATE SET \
                     sender_id = excluded.sender_id, data_offset = excluded.data_offset",
                )?
                .execute(rusqlite::params![id, sender, offset as i64])?;
            Ok(())
        });
        self.guard(r)
    }

    /// Records the server's estimate of a sender's clock offset (see
    /// [`crate::clock`]), in the open transaction.
    pub fn record_clock_estimate(&mut self, e: &ClockEstimate) -> Result<(), StoreError> {
        let r = self.begin().and_then(|()| {
            self.conn.execute_batch(crate::clock::CREATE_CLOCK)?;
            self.conn
                .prepare_cached(crate::clock::UPSERT_ESTIMATE)?
                .execute(rusqlite::params![
                    e.sender,
                    e.name,
                    e.start_time,
                    e.connected_at,
                    e.offset,
                    e.samples
                ])?;
            Ok(())
        });
        self.guard(r)
    }

    /// Records a sender's latest clock report, in the open transaction.
    pub fn record_clock_report(&mut self, r: &ClockReport) -> Result<(), StoreError> {
        let res = self.begin().and_then(|()| {
            self.conn.execute_batch(crate::clock::CREATE_CLOCK)?;
            self.conn
                .prepare_cached(crate::clock::UPSERT_REPORT)?
                .execute(rusqlite::params![
                    r.sender,
                    r.name,
                    r.source,
                    r.daemon,
                    i32::from(r.synchronized),
                    r.offset,
                    r.maxerror,
                    r.esterror,
                    r.reported_at
                ])?;
            Ok(())
        });
        self.guard(res)
    }

    /// The table for `schema`: an existing one of the same definition, or a
    /// new one (renamed `_2`..`_9` if the name holds another definition).
    pub fn register_schema(&mut self, schema: &Schema) -> Result<TableId, StoreError> {
        let r = self
            .begin()
            .and_then(|()| Ok(self.catalog.register(&mut self.conn, schema)?.0));
        self.guard(r)
    }

    /// The schema of a table as stored (its name may carry a `_N` suffix).
    pub fn table_schema(&self, id: TableId) -> Option<&Schema> {
        self.catalog.get(id).map(|t| &t.schema)
    }

    /// The table called `name`, if this database has it.
    pub fn find_table(&self, name: &str) -> Option<TableId> {
        self.catalog.find(name)
    }

    /// Inserts one row (inside the open transaction).
    pub fn insert(&mut self, row: &Row) -> Result<(), StoreError> {
        let mut result = Ok(());
        self.insert_batch(std::slice::from_ref(row), &mut |_, e| result = Err(e))?;
        result
    }

    /// Inserts rows in order (inside the open transaction); each row that
    /// cannot be stored is reported to `failed` and skipped. An error is a
    /// storage failure ([`StoreError::Unavailable`]): the transaction was
    /// rolled back, and nothing since the last commit is stored.
    ///
    /// This is the server's hot path: the INSERT of a table is looked up
    /// once per run of rows for that table (not once per row), and values
    /// are bound straight from the rows ([`values::bind`]).
    pub fn insert_batch(
        &mut self,
        rows: &[Row],
        failed: &mut dyn FnMut(&Row, StoreError),
    ) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        // Nothing can be written without a transaction: whatever stops
        // BEGIN is a storage failure here.
        if let Err(e) = self.begin() {
            return Err(self.abandon(e));
        }
        let mut stored = 0;
        for run in rows.chunk_by(|a, b| a.table == b.table) {
            match self.insert_run(run, failed) {
                Ok(n) => stored += n,
                Err(e) => return Err(self.abandon(e.into())),
            }
        }
        if let Some((_, n)) = &mut self.tx {
            *n += stored;
        }
        Ok(())
    }

    /// Inserts rows that all go to one table; returns how many were
    /// stored, or the storage failure that ended the transaction.
    fn insert_run(
        &self,
        rows: &[Row],
        failed: &mut dyn FnMut(&Row, StoreError),
    ) -> rusqlite::Result<usize> {
        let id = rows[0].table;
        let Some(table) = self.catalog.get(id) else {
            self.fail_all(rows, failed, &format!("unknown table id {}", id.0));
            return Ok(0);
        };
        let mut stmt = match self.conn.prepare_cached(&table.insert_sql) {
            Ok(stmt) => stmt,
            Err(e) if self.is_lost(&e) => return Err(e),
            Err(e) => {
                self.fail_all(rows, failed, &e.to_string());
                return Ok(0);
            }
        };
        let fields = table.schema.fields.len();
        let mut stored = 0;
        let mut rest = rows;
        // Full groups of well-formed rows go in one multi-row INSERT each; a
        // group that fails (the statement is atomic) is retried row by row
        // below, so the failing row is reported and the others are kept.
        while table.multi_rows > 1 && rest.len() >= table.multi_rows {
            let (group, tail) = rest.split_at(table.multi_rows);
            let whole = group.iter().all(|r| r.values.len() == fields);
            match whole.then(|| self.execute_multi(&table.insert_multi_sql, group)) {
                Some(Ok(())) => stored += group.len(),
                // Retrying row by row would write them outside any
                // transaction if SQLite has rolled it back.
                Some(Err(e)) if self.is_lost(&e) => return Err(e),
                _ => stored += self.execute_each(&mut stmt, table, group, failed)?,
            }
            rest = tail;
        }
        Ok(stored + self.execute_each(&mut stmt, table, rest, failed)?)
    }

    /// True if statement error `e` ended the transaction (see [`rollback`]).
    fn is_lost(&self, e: &rusqlite::Error) -> bool {
        rollback::is_storage_failure(e) || self.conn.is_autocommit()
    }

    /// Inserts `group` with one statement.
    fn execute_multi(&self, sql: &str, group: &[Row]) -> rusqlite::Result<()> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        let mut index = 1;
        for row in group {
            index = bind_row(&mut stmt, index, row)?;
        }
        stmt.raw_execute().map(|_| ())
    }

    /// Inserts rows one statement each; returns how many were stored, or
    /// the storage failure that ended the transaction.
    fn execute_each(
        &self,
        stmt: &mut rusqlite::Statement<'_>,
        table: &catalog::Table,
        rows: &[Row],
        failed: &mut dyn FnMut(&Row, StoreError),
    ) -> rusqlite::Result<usize> {
        let fields = table.schema.fields.len();
        let mut stored = 0;
        for row in rows {
            if row.values.len() != fields {
                failed(
                    row,
                    StoreError::RowShape {
                        table: table.schema.name.clone(),
                        expected: fields,
                        found: row.values.len(),
                    },
                );
                continue;
            }
            match bind_row(stmt, 1, row).and_then(|_| stmt.raw_execute()) {
                Ok(_) => stored += 1,
                Err(e) if self.is_lost(&e) => return Err(e),
                Err(e) => failed(row, e.into()),
            }
        }
        Ok(stored)
    }

    /// Reports every row of `rows` to `failed` with the same [`StoreError::Layout`] reason.
    fn fail_all(&self, rows: &[Row], failed: &mut dyn FnMut(&Row, StoreError), reason: &str) {
        for row in rows {
            failed(
                row,
                StoreError::Layout {
                    path: self.path.clone(),
                    reason: reason.to_owned(),
                },
            );
        }
    }

    fn begin(&mut self) -> Result<(), StoreError> {
        if self.tx.is_none() {
            self.conn.execute_batch("BEGIN IMMEDIATE")?;
            self.tx = Some((Instant::now(), 0));
            self.save();
        }
        Ok(())
    }

    /// Rows written in the open transaction (`None` if none is open).
    pub fn pending_rows(&self) -> Option<usize> {
        self.tx.map(|(_, n)| n)
    }

    /// Commits the open transaction, if any.
    pub fn commit(&mut self) -> Result<(), StoreError> {
        if self.tx.is_some() {
            // A failed COMMIT may leave the transaction open (SQLITE_BUSY)
            // or not (SQLITE_FULL): either way it is rolled back here and
            // the caller writes it again (see [`rollback`]).
            if let Err(e) = self.conn.execute_batch("COMMIT") {
                return Err(self.abandon(e.into()));
            }
            self.tx = None;
        }
        Ok(())
    }

    /// Commits if `policy` says so; returns whether it did.
    pub fn commit_if_due(&mut self, policy: &CommitPolicy, idle: bool) -> Result<bool, StoreError> {
        match self.tx {
            Some((started, rows)) if policy.due(rows, started, idle) => {
                self.commit()?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Commits and closes the database.
    pub fn close(mut self) -> Result<(), StoreError> {
        self.commit()
    }
}

/// Binds one row's columns from parameter `first` on; returns the next free parameter.
fn bind_row(
    stmt: &mut rusqlite::Statement<'_>,
    first: usize,
    row: &Row,
) -> rusqlite::Result<usize> {
    stmt.raw_bind_parameter(first, row.sender)?;
    stmt.raw_bind_parameter(first + 1, row.seq)?;
    stmt.raw_bind_parameter(first + 2, finite_or_null(row.ts_client))?;
    stmt.raw_bind_parameter(first + 3, finite_or_null(row.ts_server))?;
    let mut index = first + 4;
    for v in &row.values {
        values::bind(stmt, index, v)?;
        index += 1;
    }
    Ok(index)
}

fn finite_or_null(x: f64) -> Option<f64> {
    (!x.is_nan()).then_some(x)
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        if let Err(e) = self.commit() {
            tracing::error!(db = %self.path.display(), error = %e, "final commit failed");
        }
    }
}
