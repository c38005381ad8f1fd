//! Storage failures in SQLite: a full disk (`ENOSPC`, `EDQUOT`), a
//! read-only file system, an I/O error. SQLite may roll the open
//! transaction back by itself when one happens (`SQLITE_FULL`,
//! `SQLITE_IOERR`, `SQLITE_NOMEM`), after which every further statement
//! would run on its own, committed at once, and a later `COMMIT` fails
//! with "no transaction is active". So any such failure ends the
//! transaction here, explicitly: it is rolled back, the store's memory of
//! tables, senders and start time goes back to what was committed, and the
//! caller gets [`StoreError::Unavailable`]: nothing since the last commit
//! is stored, and all of it must be written again (the server's writer
//! keeps that work and redoes it once the database takes writes again).

use rusqlite::ErrorCode;

use super::SqliteStore;
use crate::error::StoreError;

/// What the store's caches held when the open transaction began: what it
/// goes back to when that transaction is rolled back.
#[derive(Debug, Default)]
pub(super) struct Saved {
    /// Tables known (ids `0..tables`).
    tables: usize,
    /// Id the next new sender gets.
    next_sender: i64,
    /// The start time.
    start_time: Option<i64>,
    /// Senders added in the open transaction.
    senders: Vec<String>,
}

/// True if `e` says the database cannot store anything now, as opposed to
/// refusing one statement (a constraint, a value too big).
pub(super) fn is_storage_failure(e: &rusqlite::Error) -> bool {
    use ErrorCode::*;
    matches!(
        e.sqlite_error_code(),
        Some(
            DiskFull
                | SystemIoFailure
                | ReadOnly
                | CannotOpen
                | DatabaseBusy
                | DatabaseLocked
                | OutOfMemory
                | DatabaseCorrupt
                | NotADatabase
                | PermissionDenied
                | OperationInterrupted
                | FileLockingProtocolFailed
                | NoLargeFileSupport
        )
    )
}

impl SqliteStore {
    /// Remembers the caches as committed (a transaction begins).
    pub(super) fn save(&mut self) {
        self.saved = Saved {
            tables: self.catalog.len(),
            next_sender: self.next_sender,
            start_time: self.start_time,
            senders: Vec::new(),
        };
    }

    /// Notes a sender added in the open transaction.
    pub(super) fn added_sender(&mut self, name: &str) {
        self.saved.senders.push(name.to_owned());
    }

    /// True if `e` ended the open transaction (or will: see the module).
    pub(super) fn ends_transaction(&self, e: &StoreError) -> bool {
        let gone = self.tx.is_some() && self.conn.is_autocommit();
        match e {
            StoreError::Unavailable { .. } => true,
            StoreError::Sqlite(s) => gone || is_storage_failure(s),
            _ => gone,
        }
    }

    /// Passes `r` on, first ending the transaction if its error says so.
    pub(super) fn guard<T>(&mut self, r: Result<T, StoreError>) -> Result<T, StoreError> {
        match r {
            Err(e) if self.ends_transaction(&e) => Err(self.abandon(e)),
            r => r,
        }
    }

    /// Rolls the open transaction back (if SQLite has not already), forgets
    /// what it added to the caches, and says why nothing is stored.
    pub(super) fn abandon(&mut self, cause: StoreError) -> StoreError {
        if matches!(cause, StoreError::Unavailable { .. }) {
            return cause;
        }
        if !self.conn.is_autocommit() {
            if let Err(e) = self.conn.execute_batch("ROLLBACK") {
                tracing::warn!(db = %self.path.display(), error = %e, "rollback failed");
            }
        }
        if self.tx.take().is_some() {
            let saved = std::mem::take(&mut self.saved);
            self.catalog.truncate(saved.tables);
            for name in &saved.senders {
                self.senders.remove(name);
            }
            self.next_sender = saved.next_sender;
            self.start_time = saved.start_time;
        }
        StoreError::Unavailable {
            db: self.path.display().to_string(),
            source: Box::new(cause),
        }
    }
}
