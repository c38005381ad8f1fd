//! The commit transaction: every pending row (one binary COPY per table),
//! the sessions' offsets and the clock records, then COMMIT.
//!
//! Each round trip to PostgreSQL is a wait for the writer thread, and
//! PostgreSQL ingestion here is bound by those waits rather than by CPU, so
//! the usual case takes as few as it can: `BEGIN` with `txid_current()` in
//! one, a COPY per table, a statement per session or clock record, and
//! `COMMIT` (four for one table, where savepoints around each statement
//! made it seven). Only if PostgreSQL refuses one of those statements is
//! the transaction rolled back and sent again *guarded*: each statement
//! under a savepoint, a refused COPY retried row by row, so that only the
//! refused rows are dropped. Nothing is cleared before the commit ends, so
//! the second attempt sends exactly what the first did.
//!
//! It may run more than once for the same work: after a lost connection
//! [`PgStore`](super::PgStore) reconnects and calls it again. Before
//! sending anything it asks whether the previous attempt's COMMIT, whose
//! answer was lost, went through (`txid_status`); if so the work is done
//! and sending it again would store every row twice.

use std::io::Write;

use ::postgres::{Client, SimpleQueryMessage};

use super::catalog::Table;
use super::{ClockRecord, PgStore};
use crate::error::StoreError;

/// How statements of the commit transaction are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Care {
    /// Plainly: any refusal aborts the transaction.
    Fast,
    /// Each under a savepoint, so a refusal drops only what was refused.
    Guarded,
}

/// One attempt at committing what `store` has pending.
pub(super) fn commit_once(store: &mut PgStore) -> Result<(), StoreError> {
    if let Some(xid) = store.in_doubt {
        let status: Option<String> = store
            .client
            .query_one("SELECT txid_status($1)", &[&xid])?
            .get(0);
        store.in_doubt = None;
        if status.as_deref() == Some("committed") {
            tracing::warn!(db = %store.uri, xid,
                "the commit whose answer was lost had gone through; not sending it again");
            return Ok(());
        }
    }
    let mut xid = begin(&mut store.client)?;
    let refused = match send_all(store, Care::Fast) {
        Ok(refused) => refused,
        Err(e) if super::link::is_lost(&e, Some(&store.client)) => return Err(e),
        Err(e) => {
            tracing::debug!(db = %store.uri, error = %e,
                "a statement of the commit was refused; sending it again guarded");
            store.client.batch_execute("ROLLBACK")?;
            xid = begin(&mut store.client)?;
            send_all(store, Care::Guarded)?
        }
    };
    store.in_doubt = Some(xid);
    match store.client.batch_execute("COMMIT") {
        Ok(()) => {
            store.in_doubt = None;
            store.refused += refused;
            Ok(())
        }
        Err(e) => {
            let e = StoreError::from(e);
            if !super::link::is_lost(&e, Some(&store.client)) {
                // Refused at COMMIT (not lost): the transaction is gone, and
                // the caller counts its rows as refused.
                store.in_doubt = None;
            }
            Err(e)
        }
    }
}

/// Opens the transaction and returns its id, in one round trip.
fn begin(client: &mut Client) -> Result<i64, StoreError> {
    let answer = client.simple_query("BEGIN; SELECT txid_current()")?;
    answer
        .iter()
        .find_map(|m| match m {
            SimpleQueryMessage::Row(r) => r.get(0).and_then(|v| v.parse().ok()),
            _ => None,
        })
        .ok_or_else(|| StoreError::Unstorable {
            table: "(transaction)".into(),
            reason: "txid_current() gave no transaction id".into(),
        })
}

/// Sends every pending row and record into the open transaction; returns
/// how many rows PostgreSQL refused (always 0 when [`Care::Fast`], where a
/// refusal is an error instead).
fn send_all(store: &mut PgStore, care: Care) -> Result<u64, StoreError> {
    let client = &mut store.client;
    let db = store.uri.as_str();
    let mut refused = 0;
    for table in store.catalog.tables_mut() {
        if table.pending.is_empty() {
            continue;
        }
        match care {
            Care::Fast => send(client, &table.copy_sql, &table.pending.stream())?,
            Care::Guarded => refused += copy_table(client, table, db)?,
        }
    }
    for (name, &(sender, offset)) in &store.deferred.sessions {
        let record = |c: &mut Client| session(c, name, sender, offset);
        match care {
            Care::Fast => record(client).map(|_| ())?,
            Care::Guarded => guarded(client, db, "session offset not recorded", record)?,
        }
    }
    for entry in &store.deferred.clock {
        let record = |c: &mut Client| clock(c, entry);
        match care {
            Care::Fast => record(client).map(|_| ())?,
            Care::Guarded => guarded(client, db, "clock record not stored", record)?,
        }
    }
    Ok(refused)
}

fn session(c: &mut Client, name: &str, sender: i32, offset: i64) -> Result<u64, ::postgres::Error> {
    c.execute(
        "INSERT INTO _streamgauge_sessions (session, sender_id, data_offset) \
         VALUES ($1, $2, $3) ON CONFLICT (session) DO UPDATE SET \
         sender_id = excluded.sender_id, data_offset = excluded.data_offset",
        &[&name, &sender, &offset],
    )
}

fn clock(c: &mut Client, record: &ClockRecord) -> Result<u64, ::postgres::Error> {
    use crate::clock::{pg, UPSERT_ESTIMATE, UPSERT_REPORT};
    match record {
        ClockRecord::Estimate(e) => c.execute(
            &pg(UPSERT_ESTIMATE),
            &[
                &i32::try_from(e.sender).unwrap_or(i32::MAX),
                &e.name,
                &e.start_time,
                &e.connected_at,
                &e.offset,
                &i32::try_from(e.samples).unwrap_or(i32::MAX),
            ],
        ),
        ClockRecord::Report(r) => c.execute(
            &pg(UPSERT_REPORT),
            &[
                &i32::try_from(r.sender).unwrap_or(i32::MAX),
                &r.name,
                &r.source,
                &r.daemon,
                &i32::from(r.synchronized),
                &r.offset,
                &r.maxerror,
                &r.esterror,
                &r.reported_at,
            ],
        ),
    }
}

/// Runs one statement under a savepoint: if PostgreSQL refuses it, it is
/// logged and skipped, the transaction goes on. A lost connection is
/// returned.
fn guarded(
    client: &mut Client,
    db: &str,
    what: &str,
    f: impl FnOnce(&mut Client) -> Result<u64, ::postgres::Error>,
) -> Result<(), StoreError> {
    client.batch_execute("SAVEPOINT sg_write")?;
    match f(client) {
        Ok(_) => Ok(client.batch_execute("RELEASE SAVEPOINT sg_write")?),
        Err(e) => {
            let e = StoreError::from(e);
            if super::link::is_lost(&e, Some(client)) {
                return Err(e);
            }
            tracing::error!(db, error = %e, "{what}");
            Ok(client
                .batch_execute("ROLLBACK TO SAVEPOINT sg_write; RELEASE SAVEPOINT sg_write")?)
        }
    }
}

/// One COPY of a table's pending rows under a savepoint; if PostgreSQL
/// refuses it, the rows are sent one by one and only the refused ones are
/// dropped. Returns how many were; logs one line per table with the count
/// and the first refusal (not one line per row). A lost connection is
/// returned as an error.
fn copy_table(client: &mut Client, table: &Table, db: &str) -> Result<u64, StoreError> {
    client.batch_execute("SAVEPOINT sg_copy")?;
    let err = match send(client, &table.copy_sql, &table.pending.stream()) {
        Ok(()) => {
            client.batch_execute("RELEASE SAVEPOINT sg_copy")?;
            return Ok(0);
        }
        Err(e) => e,
    };
    if super::link::is_lost(&err, Some(client)) {
        return Err(err);
    }
    client.batch_execute("ROLLBACK TO SAVEPOINT sg_copy")?;
    let name = table.schema.name.as_str();
    tracing::warn!(db, table = name, error = %err, "COPY refused; retrying row by row");
    let mut refused = 0u64;
    let mut first = None;
    for (seq, parts) in table.pending.each_row() {
        match send(client, &table.copy_sql, &parts) {
            Ok(()) => client.batch_execute("RELEASE SAVEPOINT sg_copy; SAVEPOINT sg_copy")?,
            Err(e) if super::link::is_lost(&e, Some(client)) => return Err(e),
            Err(e) => {
                client.batch_execute("ROLLBACK TO SAVEPOINT sg_copy")?;
                refused += 1;
                first.get_or_insert((seq, e));
            }
        }
    }
    client.batch_execute("RELEASE SAVEPOINT sg_copy")?;
    if let Some((seq, e)) = first {
        tracing::error!(db, table = name, refused, first_seq = seq, error = %e,
            "rows refused by PostgreSQL, not stored");
    }
    Ok(refused)
}

fn send(client: &mut Client, sql: &str, parts: &[&[u8]]) -> Result<(), StoreError> {
    let mut w = client.copy_in(sql)?;
    for p in parts {
        w.write_all(p)?;
    }
    w.finish()?;
    Ok(())
}
