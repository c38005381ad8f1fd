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
use std::collections::HashMap;
use store::{CommitPolicy, PgStore, Row, Sink, SqliteOptions, SqliteStore, StoreError, TableId};

use tokio::sync::{mpsc, oneshot, watch, OwnedSemaphorePermit};

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

/// A share of a domain's queue budget in bytes (`--max-domain-queue-bytes`):
/// held by a batch of rows from the moment it is queued until the writer
/// has inserted it, so that everything waiting for one database holds at
/// most that many bytes, however large its rows.
pub type QueueBytes = OwnedSemaphorePermit;

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
    /// Rows to insert, how far they take a resumable session, and the
    /// bytes they hold of the domain's queue budget (released once inserted).
    Rows(Vec<Row>, Option<Progress>, Option<QueueBytes>),
    /// A resumable session (spec §3.6) starts a connection: where it resumes,
    /// and a feed of its committed offset for the acknowledgements.
    Resume {
        /// Session id.
        session: Arc<str>,
        /// Where the answer goes: the stored offset and the ack feed.
        reply: oneshot::Sender<Result<(u64, watch::Receiver<u64>), String>>,
    },
    /// The server's estimate of a sender's clock offset (`_streamgauge_clock`).
    ClockEstimate(store::ClockEstimate),
    /// A sender's report of its clock's state (`_streamgauge_clock`).
    ClockReport(store::ClockReport),
}

/// How far a batch of rows takes a resumable session.
#[derive(Debug, Clone)]
pub struct Progress {
    /// Session id.
    pub session: Arc<str>,
    /// The session's sender (`oml_sender_id`).
    pub sender: i64,
    /// Data offset just after the batch's last tuple.
    pub offset: u64,
}

/// A resumable session as its writer tracks it.
#[derive(Debug)]
struct Tracked {
    /// Offset covered by rows written (committed or in the open transaction).
    stored: u64,
    /// Offset covered by committed rows; connections turn changes into acks.
    committed: watch::Sender<u64>,
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
    /// Told after every commit (live readers wait on it).
    pub commits: Arc<crate::commits::Commits>,
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
    // Someone may follow the domain already (a dashboard open before the
    // experiment's clients connect): the first transaction then reads its
    // tables' ends at BEGIN, and its commit is handed over like the rest.
    db.keep_committed(setup.commits.watched(domain));
    let mut sessions: HashMap<Arc<str>, Tracked> = HashMap::new();
    loop {
        let cmd = match rx.try_recv() {
            Ok(cmd) => cmd,
            Err(mpsc::error::TryRecvError::Empty) => {
                if commit(&mut db, setup, true, domain) {
                    acknowledge(&mut sessions);
                    publish(&mut db, setup, domain);
                }
                match rx.blocking_recv() {
                    Some(cmd) => cmd,
                    None => break,
                }
            }
            Err(mpsc::error::TryRecvError::Disconnected) => break,
        };
        execute(&mut db, cmd, domain, &mut sessions);
        if commit(&mut db, setup, false, domain) {
            acknowledge(&mut sessions);
            publish(&mut db, setup, domain);
        }
    }
    // The last rows are committed and published like every commit, so
    // live readers take them from here too; then the database is closed.
    let watched = setup.commits.watched(domain);
    db.keep_committed(watched);
    match db.commit() {
        Ok(()) => publish(&mut db, setup, domain),
        Err(e) => tracing::error!(domain, error = %e, "final commit failed"),
    }
    if let Err(e) = db.close() {
        tracing::error!(domain, error = %e, "final commit failed");
    }
    setup.commits.closed(domain);
    tracing::info!(domain, "database closed");
    setup.hook.event(HookEvent::DbClosed, &uri);
}

fn execute<S: Sink>(
    db: &mut S,
    cmd: Command,
    domain: &str,
    sessions: &mut HashMap<Arc<str>, Tracked>,
) {
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
        Command::Rows(rows, progress, _budget) => {
            // One line per batch, with the count and the first reason, not
            // one per row (a broken stream would flood the log).
            let mut failed = 0u64;
            let mut first = None;
            db.insert_batch(&rows, &mut |row, e| {
                failed += 1;
                first.get_or_insert((row.table, row.seq, e));
            });
            if let Some((table, seq, e)) = first {
                let table = db.table_name(table);
                tracing::error!(domain, table, failed, first_seq = seq, error = %e,
                    "rows not stored");
            }
            if let Some(p) = progress {
                advance(db, domain, sessions, p);
            }
        }
        Command::Resume { session, reply } => {
            let _ = reply.send(resume(db, sessions, session).map_err(|e| e.to_string()));
        }
        // Losing one only loses clock information: logged, not fatal.
        Command::ClockEstimate(e) => {
            if let Err(err) = db.record_clock_estimate(&e) {
                tracing::error!(domain, sender = %e.name, error = %err, "clock estimate not stored");
            }
        }
        Command::ClockReport(r) => {
            if let Err(err) = db.record_clock_report(&r) {
                tracing::error!(domain, sender = %r.name, error = %err, "clock report not stored");
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

/// Tells live readers about a commit, with the tables' committed ends when
/// someone listens (reading them costs a round trip on PostgreSQL).
///
/// While watched, commits keep their rows, and those whose ids the store
/// can tell are handed to the readers with the ends.
fn publish<S: Sink>(db: &mut S, setup: &WriterSetup, domain: &str) {
    let watched = setup.commits.watched(domain);
    let (ends, rows) = if watched {
        (db.committed_ends(), db.committed_rows())
    } else {
        (None, Vec::new())
    };
    db.keep_committed(watched);
    setup.commits.bump(domain, ends, rows);
}

/// Commits if due; true if a commit happened. Right before a commit that
/// can keep its rows for live readers, the store is told whether anyone
/// follows the domain now (asking takes a lock the readers take too, so
/// only then, not per command).
fn commit<S: Sink>(db: &mut S, setup: &WriterSetup, idle: bool, domain: &str) -> bool {
    let policy = &setup.commit;
    if db.keep_due(policy, idle) {
        db.keep_committed(setup.commits.watched(domain));
    }
    match db.commit_if_due(policy, idle) {
        Ok(done) => done,
        Err(e) => {
            tracing::error!(domain, error = %e, "commit failed; will retry");
            false
        }
    }
}

/// Where `session` resumes: the offset its rows were written up to.
fn resume<S: Sink>(
    db: &mut S,
    sessions: &mut HashMap<Arc<str>, Tracked>,
    session: Arc<str>,
) -> Result<(u64, watch::Receiver<u64>), StoreError> {
    // Asked of the database every time, not only for a session new here:
    // behind a load balancer, another server may have stored more of it
    // since this writer last saw it.
    let stored = db.session_offset(&session)?;
    if let Some(t) = sessions.get_mut(&session) {
        t.stored = t.stored.max(stored);
        return Ok((t.stored, t.committed.subscribe()));
    }
    let (committed, rx) = watch::channel(stored);
    sessions.insert(session, Tracked { stored, committed });
    Ok((stored, rx))
}

/// Records a session's progress in the open transaction.
fn advance<S: Sink>(
    db: &mut S,
    domain: &str,
    sessions: &mut HashMap<Arc<str>, Tracked>,
    p: Progress,
) {
    let stored = sessions.get(&p.session).map(|t| t.stored);
    if stored.is_some_and(|s| p.offset <= s) {
        return;
    }
    match db.set_session_offset(&p.session, p.sender, p.offset) {
        Ok(()) => {
            if let Some(t) = sessions.get_mut(&p.session) {
                t.stored = p.offset;
            }
        }
        // The rows are in; only the resume point lags, so a resumed sender
        // may send them again. Logged loudly: that would duplicate rows.
        Err(e) => tracing::error!(domain, session = %p.session, error = %e,
            "cannot record the session's offset"),
    }
}

/// After a commit: everything written is now durable.
fn acknowledge(sessions: &mut HashMap<Arc<str>, Tracked>) {
    for t in sessions.values() {
        t.committed.send_if_modified(|c| {
            let moved = *c < t.stored;
            *c = t.stored;
            moved
        });
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
            Command::Rows(..) | Command::ClockEstimate(_) | Command::ClockReport(_) => {}
            Command::Resume { reply, .. } => {
                let _ = reply.send(Err(reason.to_owned()));
            }
        }
    }
}
