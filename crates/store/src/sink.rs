//! What the collection server needs from a database, whatever holds it.
//!
//! The server's writer thread owns one [`Sink`] per open experiment domain
//! and is generic over it, so each back end keeps its own fast path:
//! [`SqliteStore`] inserts rows one by one through cached prepared
//! statements, [`PgStore`](crate::PgStore) buffers them and sends one
//! `COPY … FROM STDIN (FORMAT binary)` per table.

use omsp::Schema;

use crate::clock::{ClockEstimate, ClockReport};
use crate::commit::CommitPolicy;
use crate::error::StoreError;
use crate::row::{Row, TableId};
use crate::sqlite::SqliteStore;

/// One open experiment database in the OML layout.
///
/// Rows are written inside a transaction; they become visible to readers
/// when it is committed ([`commit`](Sink::commit),
/// [`commit_if_due`](Sink::commit_if_due), [`close`](Sink::close)).
///
/// Storage failures are transactions, not surprises: when any method
/// returns an error for which [`StoreError::is_unavailable`] holds (a full
/// disk, a read-only file system, an I/O error), the store has rolled its
/// open transaction back. Nothing written since the last successful commit
/// is stored — rows, session offsets, clock records, new senders, tables
/// and the start time alike — and the caller must write it all again, in
/// the same order (which gives the same ids), once the database takes
/// writes again. Any other error concerns that call only.
pub trait Sink {
    /// Where the database is, for logs (a file path, a PostgreSQL URI).
    fn description(&self) -> String;

    /// The event hook's URI of this database (`file:…`, `postgresql://…`).
    fn uri(&self) -> String;

    /// True if this open created the experiment (no `start_time` was stored).
    fn is_new(&self) -> bool;

    /// Sets the start time if the database has none yet (the first client's
    /// `start-time` wins) and returns the one in force.
    fn ensure_start_time(&mut self, client_start: i64) -> Result<i64, StoreError>;

    /// The id of sender `name` in `_senders`, adding it (max + 1) if new.
    fn sender_id(&mut self, name: &str) -> Result<i64, StoreError>;

    /// The table for `schema`: an existing one of the same definition, or a
    /// new one (renamed `_2`..`_9` if the name holds another definition).
    fn register_schema(&mut self, schema: &Schema) -> Result<TableId, StoreError>;

    /// The stored name of a table (it may carry a `_N` suffix).
    fn table_name(&self, id: TableId) -> Option<&str>;

    /// Writes one row into the open transaction (or queues it for the next
    /// batch write). An error concerns this row only.
    fn insert(&mut self, row: &Row) -> Result<(), StoreError>;

    /// Writes rows in order; each row that cannot be stored is reported to
    /// `failed` and skipped, the others are kept. An error is a storage
    /// failure that ended the transaction (see the trait).
    fn insert_batch(
        &mut self,
        rows: &[Row],
        failed: &mut dyn FnMut(&Row, StoreError),
    ) -> Result<(), StoreError> {
        for row in rows {
            match self.insert(row) {
                Ok(()) => {}
                Err(e) if e.is_unavailable() => return Err(e),
                Err(e) => failed(row, e),
            }
        }
        Ok(())
    }

    /// The data offset up to which resumable session `id` (spec §3.6) has
    /// been stored, counting rows written in the open transaction; 0 for a
    /// session this database has never seen.
    fn session_offset(&mut self, id: &str) -> Result<u64, StoreError>;

    /// Records, in the open transaction (so it commits with the rows it
    /// covers), that session `id` of sender `sender` is stored up to `offset`.
    fn set_session_offset(&mut self, id: &str, sender: i64, offset: u64) -> Result<(), StoreError>;

    /// Records, in the open transaction, the server's estimate of a
    /// sender's clock offset in `_streamgauge_clock` (see [`crate::clock`]),
    /// replacing the previous one.
    fn record_clock_estimate(&mut self, e: &ClockEstimate) -> Result<(), StoreError>;

    /// Records, in the open transaction, a sender's latest clock report in
    /// `_streamgauge_clock`, replacing the previous one.
    fn record_clock_report(&mut self, r: &ClockReport) -> Result<(), StoreError>;

    /// Commits if `policy` says so (`idle`: the caller has nothing queued);
    /// returns whether it did.
    fn commit_if_due(&mut self, policy: &CommitPolicy, idle: bool) -> Result<bool, StoreError>;

    /// Writes what is queued and commits the open transaction, if any.
    fn commit(&mut self) -> Result<(), StoreError>;

    /// Rows that [`insert`](Sink::insert) accepted but the database then
    /// refused at a commit, since the last call (PostgreSQL checks some
    /// values only then). They are not stored.
    fn refused(&mut self) -> u64 {
        0
    }

    /// After a commit (before more inserts): the highest `oml_tuple_id` of
    /// each table that commit wrote to, for live readers to bound their
    /// scans by; `None` if the back end cannot tell (SQLite, whose readers
    /// never see uncommitted rows, does not need to). Tables the commit
    /// did not touch are not listed.
    fn committed_ends(&mut self) -> Option<Vec<(String, i64)>> {
        None
    }

    /// Whether commits keep their rows for [`Sink::committed_rows`]
    /// (PostgreSQL; SQLite readers read new rows cheaply from its file).
    fn keep_committed(&mut self, _on: bool) {}

    /// True if [`Sink::commit_if_due`] would commit now and the commit can
    /// keep its rows for live readers (PostgreSQL): the writer then tells
    /// [`Sink::keep_committed`] whether anyone follows the domain right
    /// before the commit, so a reader who came while the transaction was
    /// open gets its rows too. `false` for stores that keep nothing.
    fn keep_due(&self, _policy: &CommitPolicy, _idle: bool) -> bool {
        false
    }

    /// After [`Sink::committed_ends`]: the rows of that commit whose
    /// `oml_tuple_id`s the store could tell, by table (see
    /// [`crate::postgres::committed`]).
    fn committed_rows(&mut self) -> Vec<crate::postgres::CommittedRows> {
        Vec::new()
    }

    /// Commits and closes the database.
    fn close(self) -> Result<(), StoreError>
    where
        Self: Sized;
}

impl Sink for SqliteStore {
    fn description(&self) -> String {
        self.path().display().to_string()
    }

    fn uri(&self) -> String {
        SqliteStore::uri(self)
    }

    fn is_new(&self) -> bool {
        SqliteStore::is_new(self)
    }

    fn ensure_start_time(&mut self, client_start: i64) -> Result<i64, StoreError> {
        SqliteStore::ensure_start_time(self, client_start)
    }

    fn sender_id(&mut self, name: &str) -> Result<i64, StoreError> {
        SqliteStore::sender_id(self, name)
    }

    fn register_schema(&mut self, schema: &Schema) -> Result<TableId, StoreError> {
        SqliteStore::register_schema(self, schema)
    }

    fn table_name(&self, id: TableId) -> Option<&str> {
        self.table_schema(id).map(|s| s.name.as_str())
    }

    fn insert(&mut self, row: &Row) -> Result<(), StoreError> {
        SqliteStore::insert(self, row)
    }

    fn insert_batch(
        &mut self,
        rows: &[Row],
        failed: &mut dyn FnMut(&Row, StoreError),
    ) -> Result<(), StoreError> {
        SqliteStore::insert_batch(self, rows, failed)
    }

    fn session_offset(&mut self, id: &str) -> Result<u64, StoreError> {
        SqliteStore::session_offset(self, id)
    }

    fn set_session_offset(&mut self, id: &str, sender: i64, offset: u64) -> Result<(), StoreError> {
        SqliteStore::set_session_offset(self, id, sender, offset)
    }

    fn record_clock_estimate(&mut self, e: &ClockEstimate) -> Result<(), StoreError> {
        SqliteStore::record_clock_estimate(self, e)
    }

    fn record_clock_report(&mut self, r: &ClockReport) -> Result<(), StoreError> {
        SqliteStore::record_clock_report(self, r)
    }

    fn commit_if_due(&mut self, policy: &CommitPolicy, idle: bool) -> Result<bool, StoreError> {
        SqliteStore::commit_if_due(self, policy, idle)
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        SqliteStore::commit(self)
    }

    fn close(self) -> Result<(), StoreError> {
        SqliteStore::close(self)
    }
}
