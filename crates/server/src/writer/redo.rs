//! Storage failures — a full disk or quota, a read-only file system, an
//! I/O error — are transactions, not surprises. The writer keeps the work
//! of the open transaction (a [`Journal`]) until it commits. When the store
//! reports that the transaction is lost ([`StoreError::is_unavailable`]:
//! it has rolled it back), [`recover`] writes it all again, in the same
//! order (so tables and senders get the same ids), with back-off, until it
//! commits. Meanwhile the writer reads no commands: its queue fills,
//! connections stop reading their sockets, and TCP holds the clients.
//! Session offsets, and so acknowledgements and resume points, never move
//! past what committed. One log line when an outage begins, one when it
//! ends.
//!
//! PostgreSQL keeps its transaction's rows and redoes it by itself after a
//! lost connection (`store::postgres`), so its writer keeps no journal.

use omsp::backoff::Backoff;
use std::sync::Arc;
use std::time::{Duration, Instant};

use omsp::Schema;
use store::{ClockEstimate, ClockReport, Row, Sink, StoreError};

/// First pause before writing the lost work again; doubled up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(100);

/// Longest pause between attempts (how late the data goes in once the
/// disk has space again).
const MAX_PAUSE: Duration = Duration::from_secs(2);

/// A command that met a storage failure: the store rolled back.
pub(super) struct Lost {
    /// The failure.
    pub(super) cause: StoreError,
    /// The command to run again once the lost work is committed (one that
    /// answers a client, which has not been answered yet).
    pub(super) retry: Option<super::Command>,
}

/// One step of the open transaction, as the store was asked to do it.
#[derive(Debug)]
pub(super) enum Entry {
    /// A client joined: start time and sender.
    Attach {
        /// The client's `start-time`.
        start_time: i64,
        /// Its `sender-id`.
        sender: String,
    },
    /// A schema was registered.
    Register(Schema),
    /// Rows were inserted (rows the store refused are refused again).
    Rows(Vec<Row>),
    /// A resumable session's offset was recorded.
    Offset {
        /// Session id.
        session: Arc<str>,
        /// Its sender.
        sender: i64,
        /// Its new offset.
        offset: u64,
    },
    /// A clock estimate was recorded.
    ClockEstimate(ClockEstimate),
    /// A clock report was recorded.
    ClockReport(ClockReport),
}

/// The work of the open transaction, kept until it commits.
#[derive(Debug)]
pub(super) struct Journal {
    /// False for stores that redo their own transactions (PostgreSQL).
    on: bool,
    /// Steps since the last commit, in order.
    entries: Vec<Entry>,
}

impl Journal {
    /// A journal that keeps entries if `on`.
    pub(super) fn new(on: bool) -> Journal {
        Journal {
            on,
            entries: Vec::new(),
        }
    }

    /// Keeps `entry` until the next commit.
    pub(super) fn record(&mut self, entry: Entry) {
        if self.on {
            self.entries.push(entry);
        }
    }

    /// The transaction committed: nothing to redo.
    pub(super) fn clear(&mut self) {
        self.entries.clear();
    }

    /// Rows kept.
    fn rows(&self) -> usize {
        self.entries
            .iter()
            .map(|e| match e {
                Entry::Rows(rows) => rows.len(),
                _ => 0,
            })
            .sum()
    }

    /// Writes every step again into a new transaction and commits it.
    /// Errors other than a storage failure are those the steps met the
    /// first time (a refused row, a schema conflict): already answered.
    fn redo<S: Sink>(&self, db: &mut S) -> Result<(), StoreError> {
        for entry in &self.entries {
            let r = match entry {
                Entry::Attach { start_time, sender } => db
                    .ensure_start_time(*start_time)
                    .and_then(|_| db.sender_id(sender).map(drop)),
                Entry::Register(schema) => db.register_schema(schema).map(drop),
                Entry::Rows(rows) => db.insert_batch(rows, &mut |_, _| {}),
                Entry::Offset {
                    session,
                    sender,
                    offset,
                } => db.set_session_offset(session, *sender, *offset),
                Entry::ClockEstimate(e) => db.record_clock_estimate(e),
                Entry::ClockReport(r) => db.record_clock_report(r),
            };
            match r {
                Err(e) if e.is_unavailable() => return Err(e),
                _ => {}
            }
        }
        db.commit()
    }
}

/// After the store lost its open transaction to `cause`: writes the
/// journal again, with back-off, until it commits.
pub(super) fn recover<S: Sink>(db: &mut S, journal: &Journal, domain: &str, cause: &StoreError) {
    let started = Instant::now();
    tracing::error!(domain, error = %cause, rows = journal.rows(),
        "storage failed; holding this database's clients and writing the uncommitted \
         data again until it commits");
    let mut backoff = Backoff::new(FIRST_PAUSE, MAX_PAUSE);
    let mut attempts = 0u64;
    loop {
        std::thread::sleep(backoff.next_wait());
        attempts += 1;
        match journal.redo(db) {
            Ok(()) => {
                tracing::warn!(
                    domain,
                    attempts,
                    seconds = started.elapsed().as_secs_f64(),
                    "storage works again; the held data is committed"
                );
                return;
            }
            Err(e) if e.is_unavailable() => {}
            Err(e) => {
                tracing::error!(domain, error = %e, "commit refused after a storage failure");
                return;
            }
        }
    }
}
