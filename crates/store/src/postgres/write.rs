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
    if let Some(done) = commit_streamed(store) {
        return done;
    }
    if let Some(xid) = store.in_doubt {
        let status: Option<String> = match store.client.query_one("SELECT txid_status($1)", &[&xid])
        {
            Ok(row) => row.get(0),
            // After a crash (`pg_ctl stop -m immediate`), an id whose
            // transaction never reached the WAL is "in the future"
            // (SQLSTATE 22023): it did not commit, so it is sent again.
            // Taking this for a refusal dropped the whole commit.
            Err(e) if e.code() == Some(&::postgres::error::SqlState::INVALID_PARAMETER_VALUE) => {
                None
            }
            Err(e) => return Err(e.into()),
        };
        store.in_doubt = None;
        if status.as_deref() == Some("committed") {
            tracing::warn!(db = %store.uri, xid,
                "the commit whose answer was lost had gone through; not sending it again");
            return Ok(());
        }
    }
    let (probe, names) = store.probe();
    let (mut xid, ends) = begin(&mut store.client, &names)?;
    store.begun = probe.iter().copied().zip(ends).collect();
    let PgStore {
        client,
        catalog,
        deferred,
        uri,
        begun,
        ..
    } = store;
    let refused = match send_all(client, catalog.tables_mut(), deferred, uri, Care::Fast) {
        Ok(refused) => refused,
        Err(e) if super::link::is_transient(&e, Some(client)) => return Err(e),
        Err(e) => {
            tracing::debug!(db = %uri, error = %e,
                "a statement of the commit was refused; sending it again guarded");
            client.batch_execute("ROLLBACK")?;
            let (x, ends) = begin(client, &names)?;
            xid = x;
            *begun = probe.iter().copied().zip(ends).collect();
            send_all(client, catalog.tables_mut(), deferred, uri, Care::Guarded)?
        }
    };
    store.in_doubt = Some(xid);
    let committed = store.client.batch_execute("COMMIT");
    finish_commit(store, committed, refused, None)
}

/// After a COMMIT sent on `client` (the store's own connection if `None`):
/// counts what was refused, or records the transaction as in doubt if the
/// answer was lost.
fn finish_commit(
    store: &mut PgStore,
    committed: Result<(), ::postgres::Error>,
    refused: u64,
    client: Option<&Client>,
) -> Result<(), StoreError> {
    match committed {
        Ok(()) => {
            store.in_doubt = None;
            store.refused += refused;
            Ok(())
        }
        Err(e) => {
            let e = StoreError::from(e);
            if !super::link::is_lost(&e, Some(client.unwrap_or(&store.client))) {
                // Refused at COMMIT (not lost): the transaction is gone, and
                // the caller counts its rows as refused.
                store.in_doubt = None;
            }
            Err(e)
        }
    }
}

/// The commit of a transaction whose largest table was streamed by the
/// pump: ends its COPY, sends the rest on the pump's connection and
/// commits there. `None` if nothing was streamed, or if the streamed
/// transaction failed before its COMMIT (it is then abandoned, and the
/// caller sends everything again on the store's own connection). A COMMIT
/// whose answer was lost leaves the transaction in doubt for the caller's
/// next attempt, as on the store's own connection.
fn commit_streamed(store: &mut PgStore) -> Option<Result<(), StoreError>> {
    let (id, sent) = store.streaming.take()?;
    let pump = store.pump.as_ref()?;
    let Some(table) = store.catalog.get(id) else {
        // The pump's transaction holds the domain's write lock: end it,
        // or the commit sent again on the store's own connection waits
        // for it forever.
        if let (Some(mut client), _) = pump.finish() {
            if client.batch_execute("ROLLBACK").is_ok() {
                store.data = Some(client);
            }
        }
        return None;
    };
    let mut rest = table.pending.encoded()[sent..].to_vec();
    rest.extend_from_slice(super::copy::TRAILER);
    pump.data(rest);
    let streamed = table.schema.name.clone();
    let (client, copied) = pump.finish();
    let mut client = client?;
    let xid = match copied {
        Ok((xid, ends)) => {
            store.begun = std::mem::take(&mut store.probing)
                .into_iter()
                .zip(ends)
                .collect();
            xid
        }
        Err(e) => {
            tracing::debug!(db = %store.uri, error = %e,
                "the streamed COPY was refused; sending the commit again at once");
            if client.batch_execute("ROLLBACK").is_ok() {
                store.data = Some(client);
            }
            return None;
        }
    };
    let rest = store
        .catalog
        .tables_mut()
        .filter(|t| t.schema.name != streamed);
    if let Err(e) = send_all(&mut client, rest, &store.deferred, &store.uri, Care::Fast) {
        tracing::debug!(db = %store.uri, error = %e,
            "a statement of a streamed commit was refused; sending the commit again at once");
        if !super::link::is_lost(&e, Some(&client)) && client.batch_execute("ROLLBACK").is_ok() {
            store.data = Some(client);
        }
        return None;
    }
    store.in_doubt = Some(xid);
    let committed = client.batch_execute("COMMIT");
    let done = finish_commit(store, committed, 0, Some(&client));
    match &done {
        Err(e) if store.in_doubt.is_some() => {
            // The answer was lost: the caller asks whether it committed,
            // on its own connection, before sending anything again.
            tracing::warn!(db = %store.uri, error = %e,
                "lost the streaming connection at COMMIT; checking whether it went through");
            return None;
        }
        _ => store.data = Some(client),
    }
    Some(done)
}

/// Opens the transaction under the domain's write lock and returns its
/// id, in one round trip, with each of the `probe` tables' highest
/// committed `oml_tuple_id` at that moment (0 for an empty table; `None`
/// if unreadable). Those are read before the transaction takes any id, so
/// every row it stores lies above them: what [`super::committed`] needs to
/// tell the ids of a commit's rows, even the first commit after a live
/// reader came.
///
/// The write lock ([`super::lock::WRITES_KEY`]) is held until the
/// transaction ends. Another server writing the same domain waits for it
/// here, before its first `nextval`, so the domain's ids are taken and
/// committed one transaction after the other: every id below a visible
/// one is committed or will never be (a refused row, a rolled-back
/// attempt), and a live tail that moves past an id never misses a row
/// committed later. A commit's transaction releases the lock only once it
/// is visible (PostgreSQL ends a transaction's visibility before its
/// locks), and under `READ COMMITTED` each statement after the lock sees
/// what the previous holder committed, the ends read here included. With
/// one server per domain the lock is never contended: one more statement
/// in the `BEGIN`'s round trip.
pub(super) fn begin(
    client: &mut Client,
    probe: &[String],
) -> Result<(i64, Vec<Option<i64>>), StoreError> {
    let mut sql = format!(
        "BEGIN; SELECT pg_advisory_xact_lock({}); SELECT txid_current()",
        super::lock::WRITES_KEY
    );
    for table in probe {
        sql.push_str(", (SELECT CAST(coalesce(max(oml_tuple_id), 0) AS int8) FROM ");
        sql.push_str(&crate::sql::quote(table));
        sql.push(')');
    }
    let answer = client.simple_query(&sql)?;
    // The last row: the lock's statement answers one too (void).
    let row = answer
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(r),
            _ => None,
        })
        .last();
    let field = |i: usize| row.and_then(|r| r.get(i)).and_then(|v| v.parse().ok());
    let xid = field(0).ok_or_else(|| StoreError::Unstorable {
        table: "(transaction)".into(),
        reason: "txid_current() gave no transaction id".into(),
    })?;
    Ok((xid, (1..=probe.len()).map(field).collect()))
}

/// Sends every pending row and record into the open transaction; returns
/// how many rows PostgreSQL refused (always 0 when [`Care::Fast`], where a
/// refusal is an error instead).
fn send_all<'t>(
    client: &mut Client,
    tables: impl Iterator<Item = &'t mut Table>,
    deferred: &super::Deferred,
    db: &str,
    care: Care,
) -> Result<u64, StoreError> {
    let mut refused = 0;
    for table in tables {
        if table.pending.is_empty() {
            continue;
        }
        match care {
            Care::Fast => send(client, &table.copy_sql, &table.pending.stream())?,
            Care::Guarded => refused += copy_table(client, table, db)?,
        }
    }
    for (name, &(sender, offset)) in &deferred.sessions {
        let record = |c: &mut Client| session(c, name, sender, offset);
        match care {
            Care::Fast => record(client).map(|_| ())?,
            Care::Guarded => guarded(client, db, "session offset not recorded", record)?,
        }
    }
    for entry in &deferred.clock {
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
            if super::link::is_transient(&e, Some(client)) {
                return Err(e);
            }
            tracing::error!(db, error = %e, "{what}");
            Ok(client
                .batch_execute("ROLLBACK TO SAVEPOINT sg_write; RELEASE SAVEPOINT sg_write")?)
        }
    }
}

/// One COPY of a table's pending rows under a savepoint; if PostgreSQL
/// refuses it, each half is sent the same way, down to single rows, so
/// that only the refused rows are dropped at a cost of a few COPYs per
/// refused row (not one per row of the table). Returns how many were;
/// logs one line per table with the count and the first refusal (not one
/// line per row). A lost connection is returned as an error.
fn copy_table(client: &mut Client, table: &Table, db: &str) -> Result<u64, StoreError> {
    let mut refusals = Refusals::default();
    copy_rows(client, table, 0, table.pending.len(), &mut refusals)?;
    if let Some((seq, e)) = refusals.first {
        let name = table.schema.name.as_str();
        tracing::error!(db, table = name, refused = refusals.count, first_seq = seq, error = %e,
            "rows refused by PostgreSQL, not stored");
    }
    Ok(refusals.count)
}

/// Rows refused so far, and the first refusal.
#[derive(Default)]
struct Refusals {
    count: u64,
    first: Option<(i64, StoreError)>,
}

/// Sends rows `a..b` of `table` under a savepoint, halving on refusal.
fn copy_rows(
    client: &mut Client,
    table: &Table,
    a: usize,
    b: usize,
    refusals: &mut Refusals,
) -> Result<(), StoreError> {
    let (parts, seq) = table.pending.rows(a, b);
    client.batch_execute("SAVEPOINT sg_copy")?;
    let err = match send(client, &table.copy_sql, &parts) {
        Ok(()) => return Ok(client.batch_execute("RELEASE SAVEPOINT sg_copy")?),
        Err(e) if super::link::is_transient(&e, Some(client)) => return Err(e),
        Err(e) => e,
    };
    client.batch_execute("ROLLBACK TO SAVEPOINT sg_copy; RELEASE SAVEPOINT sg_copy")?;
    if b - a == 1 {
        refusals.count += 1;
        refusals.first.get_or_insert((seq, err));
        return Ok(());
    }
    let mid = a + (b - a) / 2;
    copy_rows(client, table, a, mid, refusals)?;
    copy_rows(client, table, mid, b, refusals)
}

fn send(client: &mut Client, sql: &str, parts: &[&[u8]]) -> Result<(), StoreError> {
    let mut w = client.copy_in(sql)?;
    for p in parts {
        w.write_all(p)?;
    }
    w.finish()?;
    Ok(())
}
