//! The connection to PostgreSQL going away (a restart, a crash, a network
//! cut) and coming back.
//!
//! A lost connection is not the database refusing something: nothing is
//! dropped. The writer thread reconnects with back-off, holding its clients
//! meanwhile (its queue fills, connections stop reading, TCP pushes back),
//! then redoes the interrupted work (see [`super::PgStore`]). One line when
//! the outage starts, one per minute while it lasts, one when it ends.

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

/// Connects to `dbname`, trying until it works. `cause` is the error that
/// ended the previous connection (logged once, with its SQLSTATE).
pub fn reconnect(opts: &PgOptions, dbname: &str, db: &str, cause: &StoreError) -> Client {
    let started = Instant::now();
    tracing::error!(db, error = %cause,
        "lost the connection to PostgreSQL; holding this database's clients and reconnecting");
    let mut pause = FIRST_PAUSE;
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
        std::thread::sleep(pause);
        pause = (pause * 2).min(MAX_PAUSE);
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
