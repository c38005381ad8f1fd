//! One writer thread per open database: it owns the store (a [`Sink`]:
//! SQLite file or PostgreSQL database) and executes the commands of every
//! client of that database, in order.
//!
//! Both stores are synchronous, so the writer is a plain thread fed by a
//! bounded tokio channel. When the channel is full, connections wait to
//! send, stop reading their sockets, and TCP pushes back on the clients. The
//! writer commits whenever it runs out of queued work, and at least every
//! [`CommitPolicy::max_delay`] while work keeps coming. It ends when the last
//! sender is dropped: everything queued is written, committed and closed.
//! The loop is generic over the store, so each keeps its own insert path.

use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;

use omsp::Schema;
use store::{CommitPolicy, PgStore, Row, Sink, SqliteOptions, SqliteStore, StoreError, TableId};
use tokio::sync::{mpsc, oneshot};

use crate::config::Backend;
use crate::hook::{Hook, HookEvent};
use crate::metrics::Metered;

/// What a client learns when it joins a database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attached {
    /// Its `oml_sender_id`.
    pub sender_id: i64,
    /// The database's start time (Unix seconds), for rebasing timestamps.
    pub db_start: i64,
}

/// A request to a database writer.
#[derive(Debug)]
pub enum Command {
    /// A client joins: set the start time if the database is new, look up
    /// or add the sender.
    Attach {
        /// The client's `start-time`.
        start_time: i64,
        /// The client's `sender-id`.
        sender: String,
        /// Where the answer goes.
        reply: oneshot::Sender<Result<Attached, String>>,
    },
    /// Find or create the table of a schema.
    Register {
        /// The schema as the client declared it.
        schema: Schema,
        /// Where the table id (or why there is none) goes.
        reply: oneshot::Sender<Result<TableId, String>>,
    },
    /// Rows to insert.
    Rows(Vec<Row>),
}

/// Everything a writer thread needs to open its database.
#[derive(Debug, Clone)]
pub struct WriterSetup {
    /// Where the database lives.
    pub backend: Backend,
    /// Data directory (SQLite).
    pub dir: PathBuf,
    /// Domain (already validated by the caller; the store checks again).
    pub domain: String,
    /// Connection settings.
    pub sqlite: SqliteOptions,
    /// Commit thresholds.
    pub commit: CommitPolicy,
    /// Lifecycle events go here.
    pub hook: Arc<Hook>,
    /// Self-measurement counters (the writer counts rows and commits).
    pub metrics: Arc<crate::metrics::Metrics>,
}

/// Starts the writer thread. `previous` is the thread of an earlier opening
/// of the same database, which is still finishing: it is joined first, so
/// one file never has two writers.
pub fn spawn(
    setup: WriterSetup,
    rx: mpsc::Receiver<Command>,
    previous: Option<JoinHandle<()>>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("db-{}", setup.domain))
        .spawn(move || {
            if let Some(p) = previous {
                let _ = p.join();
            }
            run(setup, rx);
        })
}

fn run(setup: WriterSetup, mut rx: mpsc::Receiver<Command>) {
    let counters = setup.metrics.domain(&setup.domain);
    let opened = match &setup.backend {
        Backend::Sqlite => SqliteStore::open(&setup.dir, &setup.domain, setup.sqlite)
            .map(|db| serve(Metered::new(db, counters), &setup, &mut rx)),
        Backend::Postgres(opts) => PgStore::open(opts, &setup.domain)
            .map(|db| serve(Metered::new(db, counters), &setup, &mut rx)),
    };
    if let Err(e) = opened {
        tracing::error!(domain = %setup.domain, error = %e, "cannot open database");
        refuse_all(&mut rx, &e.to_string());
    }
}

fn serve<S: Sink>(mut db: S, setup: &WriterSetup, rx: &mut mpsc::Receiver<Command>) {
    let domain = setup.domain.as_str();
    let uri = db.uri();
    let event = if db.is_new() {
        HookEvent::DbCreated
    } else {
        HookEvent::DbOpened
    };
    tracing::info!(domain, db = %db.description(), new = db.is_new(), "database open");
    setup.hook.event(event, &uri);
    loop {
        let cmd = match rx.try_recv() {
            Ok(cmd) => cmd,
            Err(mpsc::error::TryRecvError::Empty) => {
                commit(&mut db, &setup.commit, true, domain);
                match rx.blocking_recv() {
                    Some(cmd) => cmd,
                    None => break,
                }
            }
            Err(mpsc::error::TryRecvError::Disconnected) => break,
        };
        execute(&mut db, cmd, domain);
        commit(&mut db, &setup.commit, false, domain);
    }
    if let Err(e) = db.close() {
        tracing::error!(domain, error = %e, "final commit failed");
    }
    tracing::info!(domain, "database closed");
    setup.hook.event(HookEvent::DbClosed, &uri);
}

fn execute<S: Sink>(db: &mut S, cmd: Command, domain: &str) {
    match cmd {
        Command::Attach {
            start_time,
            sender,
            reply,
        } => {
            let res = attach(db, start_time, &sender).map_err(|e| e.to_string());
            let _ = reply.send(res);
        }
        Command::Register { schema, reply } => {
            let res = db.register_schema(&schema).map_err(|e| e.to_string());
            let _ = reply.send(res);
        }
        Command::Rows(rows) => {
            let mut failed = Vec::new();
            db.insert_batch(&rows, &mut |row, e| failed.push((row.table, row.seq, e)));
            for (table, seq, e) in failed {
                let table = db.table_name(table);
                tracing::error!(domain, table, seq, error = %e, "row not stored");
            }
        }
    }
}

fn attach<S: Sink>(db: &mut S, start_time: i64, sender: &str) -> Result<Attached, StoreError> {
    let db_start = db.ensure_start_time(start_time)?;
    let sender_id = db.sender_id(sender)?;
    Ok(Attached {
        sender_id,
        db_start,
    })
}

fn commit<S: Sink>(db: &mut S, policy: &CommitPolicy, idle: bool, domain: &str) {
    if let Err(e) = db.commit_if_due(policy, idle) {
        tracing::error!(domain, error = %e, "commit failed; will retry");
    }
}

/// The database could not be opened: answer every request with the reason
/// until the last client has gone.
fn refuse_all(rx: &mut mpsc::Receiver<Command>, reason: &str) {
    while let Some(cmd) = rx.blocking_recv() {
        match cmd {
            Command::Attach { reply, .. } => {
                let _ = reply.send(Err(reason.to_owned()));
            }
            Command::Register { reply, .. } => {
                let _ = reply.send(Err(reason.to_owned()));
            }
            Command::Rows(_) => {}
        }
    }
}
