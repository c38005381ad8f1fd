//! The connection to PostgreSQL going away (a restart, a crash, a network
//! cut) and coming back.
//!
//! A lost connection is not the database refusing something: nothing is
//! dropped. The writer thread reconnects with back-off, holding its clients
//! meanwhile (its queue fills, connections stop reading, TCP pushes back),
//! then redoes the interrupted work (see [`super::PgStore`]). One line when
//! the outage starts, one per minute while it lasts, one when it ends.

use omsp::backoff::Backoff;
use std::time::{Duration, Instant};

use ::postgres::Client;

use super::PgOptions;
use crate::error::StoreError;

/// First pause between reconnection attempts; doubled up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(100);

/// Longest pause between reconnection attempts.
const MAX_PAUSE: Duration = Duration::from_secs(2);

/// How often a long outage is reported.
const REPORT_EVERY: Duration = Duration::from_secs(60);

/// True if `e` means the connection is gone (so the work must be redone on
/// a new one), false if PostgreSQL refused the statement itself.
pub fn is_lost(e: &StoreError, client: Option<&Client>) -> bool {
    if client.is_some_and(Client::is_closed) {
        return true;
    }
    match e.sqlstate() {
        // connection_exception, operator_intervention (admin or crash
        // shutdown, cannot connect now), too_many_connections.
        Some(code) => code.starts_with("08") || code.starts_with("57P") || code == "53300",
        // No SQLSTATE: lost if the socket failed or closed (not for the
        // client library's own errors, such as a row count or a type).
        None => match e {
            StoreError::Postgres(pe) => {
                pe.is_closed()
                    || std::error::Error::source(pe).is_some_and(|s| s.is::<std::io::Error>())
                    || pe.to_string().contains("timeout")
            }
            // A COPY stream that could not be written or finished.
            StoreError::Io(_) => true,
            _ => false,
        },
    }
}

/// True if PostgreSQL is there but cannot store anything now: a full disk
/// (53100), out of memory (53200) or other resources (53000), an I/O error
/// (58030, 58000), or a read-only server or transaction (25006). Like a
/// lost connection, the work is kept and done again later, never dropped
/// as refused.
pub fn is_unavailable(e: &StoreError) -> bool {
    matches!(
        e.sqlstate(),
        Some("53000" | "53100" | "53200" | "58000" | "58030" | "25006")
    )
}

/// True if `e` means the work must be done again later, whole ([`is_lost`]
/// or [`is_unavailable`]), not that PostgreSQL refused part of it.
pub fn is_transient(e: &StoreError, client: Option<&Client>) -> bool {
    is_unavailable(e) || is_lost(e, client)
}

/// A storage outage on a live connection: one line when it starts, one
/// when it ends, and a pause (0.1 s doubling to 2 s) before each retry.
#[derive(Debug)]
pub struct Outage {
    /// When the first failure came.
    started: Instant,
    /// Pause before the next attempt.
    pause: Backoff,
    /// Attempts so far.
    attempts: u64,
}

impl Outage {
    /// Logs the start of an outage caused by `cause`.
    pub fn start(db: &str, cause: &StoreError) -> Outage {
        tracing::error!(db, error = %cause,
            "PostgreSQL cannot store data now; holding this database's clients and \
             sending the transaction again until it commits");
        Outage {
            started: Instant::now(),
            pause: Backoff::new(FIRST_PAUSE, MAX_PAUSE),
            attempts: 0,
        }
    }

    /// Waits before the next attempt.
    pub fn pause(&mut self) {
        std::thread::sleep(self.pause.next_wait());
        self.attempts += 1;
    }

    /// Logs the end of the outage.
    pub fn end(self, db: &str) {
        tracing::warn!(
            db,
            attempts = self.attempts,
            seconds = self.started.elapsed().as_secs_f64(),
            "PostgreSQL stores data again"
        );
    }
}

/// Connects to `dbname`, trying until it works. `cause` is the error that
/// ended the previous connection (logged once, with its SQLSTATE).
pub fn reconnect(opts: &PgOptions, dbname: &str, db: &str, cause: &StoreError) -> Client {
    let started = Instant::now();
    tracing::error!(db, error = %cause,
        "lost the connection to PostgreSQL; holding this database's clients and reconnecting");
    let mut backoff = Backoff::new(FIRST_PAUSE, MAX_PAUSE);
    let mut attempts = 0u64;
    let mut reported = Instant::now();
    loop {
        attempts += 1;
        match opts.connect(dbname) {
            Ok(client) => {
                tracing::warn!(
                    db,
                    attempts,
                    seconds = started.elapsed().as_secs_f64(),
                    "reconnected to PostgreSQL; redoing the interrupted work"
                );
                return client;
            }
            Err(e) => {
                if reported.elapsed() >= REPORT_EVERY {
                    tracing::warn!(db, attempts, seconds = started.elapsed().as_secs(),
                        error = %e, "PostgreSQL still unreachable; still reconnecting");
                    reported = Instant::now();
                }
            }
        }
        std::thread::sleep(backoff.next_wait());
    }
}

/// Runs `f` until it succeeds or fails for a reason other than a lost
/// connection, reconnecting (see [`reconnect`]) after each loss. Used where
/// no client exists yet (opening a database).
pub fn persist<T>(
    opts: &PgOptions,
    db: &str,
    mut f: impl FnMut() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    loop {
        match f() {
            Err(e) if is_lost(&e, None) => {
                // Wait until the server answers again, then try once more.
                drop(reconnect(opts, "postgres", db, &e));
            }
            other => return other,
        }
    }
}
