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
//! A storage failure (disk full, read-only, I/O error) does not lose the
//! open transaction: it is written again until it commits (see [`redo`]).

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

mod redo;
use redo::{Entry, Journal, Lost};

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
    /// Offset covered by rows written (committed, in the open transaction,
    /// or in the journal of a lost one that is being written again).
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
        // SQLite's writer keeps each transaction's work to redo it after
        // a storage failure; PgStore keeps and redoes its own (see `redo`).
        Backend::Sqlite => SqliteStore::open(&setup.dir, &setup.domain, setup.sqlite)
            .map(|db| serve(Metered::new(db, counters), &setup, &mut rx, true)),
        Backend::Postgres(opts) => PgStore::open(opts, &setup.domain)
            .map(|db| serve(Metered::new(db, counters), &setup, &mut rx, false)),
    };
    if let Err(e) = opened {
        tracing::error!(domain = %setup.domain, error = %e, "cannot open database");
        refuse_all(&mut rx, &e.to_string());
    }
}

fn serve<S: Sink>(mut db: S, setup: &WriterSetup, rx: &mut mpsc::Receiver<Command>, redo: bool) {
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
    let mut w = Writer {
        db,
        setup,
        domain,
        sessions: HashMap::new(),
        journal: Journal::new(redo),
    };
    loop {
        let cmd = match rx.try_recv() {
            Ok(cmd) => cmd,
            Err(mpsc::error::TryRecvError::Empty) => {
                w.commit(true);
                match rx.blocking_recv() {
                    Some(cmd) => cmd,
                    None => break,
                }
            }
            Err(mpsc::error::TryRecvError::Disconnected) => break,
        };
        w.execute(cmd);
        w.commit(false);
    }
    // The last rows are committed and published like every commit, so
    // live readers take them from here too; then the database is closed.
    let watched = setup.commits.watched(domain);
    w.db.keep_committed(watched);
    match w.db.commit() {
        Ok(()) => w.committed(),
        Err(e) if e.is_unavailable() => w.recover(&e),
        Err(e) => tracing::error!(domain, error = %e, "final commit failed"),
    }
    if let Err(e) = w.db.close() {
        tracing::error!(domain, error = %e, "final commit failed");
    }
    setup.commits.closed(domain);
    tracing::info!(domain, "database closed");
    setup.hook.event(HookEvent::DbClosed, &uri);
}

/// One writer thread's state.
struct Writer<'a, S> {
    /// The store.
    db: S,
    /// Settings, hook, metrics, commit feed.
    setup: &'a WriterSetup,
    /// The domain, for logs.
    domain: &'a str,
    /// Resumable sessions seen by this writer.
    sessions: HashMap<Arc<str>, Tracked>,
    /// The open transaction's work, written again after a storage failure.
    journal: Journal,
}

impl<S: Sink> Writer<'_, S> {
    /// Runs `cmd`; after a storage failure, redoes the lost transaction
    /// (holding everything else) and then the command if it has to answer.
    fn execute(&mut self, cmd: Command) {
        let mut next = Some(cmd);
        while let Some(cmd) = next.take() {
            if let Err(lost) = self.apply(cmd) {
                self.recover(&lost.cause);
                next = lost.retry;
            }
        }
    }

    fn apply(&mut self, cmd: Command) -> Result<(), Box<Lost>> {
        let db = &mut self.db;
        let domain = self.domain;
        match cmd {
            Command::Attach {
                start_time,
                sender,
                reply,
            } => match attach(db, start_time, &sender) {
                Err(cause) if cause.is_unavailable() => {
                    return Err(Box::new(Lost {
                        cause,
                        retry: Some(Command::Attach {
                            start_time,
                            sender,
                            reply,
                        }),
                    }))
                }
                res => {
                    if res.is_ok() {
                        self.journal.record(Entry::Attach { start_time, sender });
                    }
                    let _ = reply.send(res.map_err(|e| e.to_string()));
                }
            },
            Command::Register { schema, reply } => match db.register_schema(&schema) {
                Err(cause) if cause.is_unavailable() => {
                    return Err(Box::new(Lost {
                        cause,
                        retry: Some(Command::Register { schema, reply }),
                    }))
                }
                res => {
                    if res.is_ok() {
                        self.journal.record(Entry::Register(schema));
                    }
                    let _ = reply.send(res.map_err(|e| e.to_string()));
                }
            },
            Command::Rows(rows, progress, _budget) => {
                // One line per batch, with the count and the first reason, not
                // one per row (a broken stream would flood the log).
                let mut failed = 0u64;
                let mut first = None;
                let res = db.insert_batch(&rows, &mut |row, e| {
                    failed += 1;
                    first.get_or_insert((row.table, row.seq, e));
                });
                if let Some((table, seq, e)) = first {
                    let table = db.table_name(table);
                    tracing::error!(domain, table, failed, first_seq = seq, error = %e,
                        "rows not stored");
                }
                self.journal.record(Entry::Rows(rows));
                // After a failure the store is not touched until the lost
                // work is redone: the offset goes only into the journal.
                let write = res.is_ok();
                let res = match progress {
                    Some(p) => res.and(self.advance(p, write)),
                    None => res,
                };
                res.map_err(|cause| Box::new(Lost { cause, retry: None }))?;
            }
            Command::Resume { session, reply } => {
                match resume(db, &mut self.sessions, Arc::clone(&session)) {
                    Err(cause) if cause.is_unavailable() => {
                        return Err(Box::new(Lost {
                            cause,
                            retry: Some(Command::Resume { session, reply }),
                        }))
                    }
                    res => {
                        let _ = reply.send(res.map_err(|e| e.to_string()));
                    }
                }
            }
            // Losing one only loses clock information: logged, not fatal.
            Command::ClockEstimate(e) => {
                let res = db.record_clock_estimate(&e);
                let name = e.name.clone();
                self.kept(
                    res,
                    Entry::ClockEstimate(e),
                    &name,
                    "clock estimate not stored",
                )?;
            }
            Command::ClockReport(r) => {
                let res = db.record_clock_report(&r);
                let name = r.name.clone();
                self.kept(res, Entry::ClockReport(r), &name, "clock report not stored")?;
            }
        }
        Ok(())
    }

    /// After a record was written: keeps it for a redo (also when a
    /// storage failure lost it), or logs why it was refused.
    fn kept(
        &mut self,
        res: Result<(), StoreError>,
        entry: Entry,
        sender: &str,
        what: &'static str,
    ) -> Result<(), Box<Lost>> {
        match res {
            Ok(()) => self.journal.record(entry),
            Err(cause) if cause.is_unavailable() => {
                self.journal.record(entry);
                return Err(Box::new(Lost { cause, retry: None }));
            }
            Err(err) => tracing::error!(domain = self.domain, sender, error = %err, "{what}"),
        }
        Ok(())
    }

    /// Records a session's progress in the open transaction (`write`), or
    /// only in the journal (the transaction was just lost).
    fn advance(&mut self, p: Progress, write: bool) -> Result<(), StoreError> {
        let stored = self.sessions.get(&p.session).map(|t| t.stored);
        if stored.is_some_and(|s| p.offset <= s) {
            return Ok(());
        }
        let res = match write {
            true => self.db.set_session_offset(&p.session, p.sender, p.offset),
            false => Ok(()),
        };
        match &res {
            Err(e) if !e.is_unavailable() => {
                // The rows are in; only the resume point lags, so a resumed
                // sender may send them again. Logged loudly: that would
                // duplicate rows.
                tracing::error!(domain = self.domain, session = %p.session, error = %e,
                    "cannot record the session's offset");
                return Ok(());
            }
            _ => {}
        }
        if let Some(t) = self.sessions.get_mut(&p.session) {
            t.stored = p.offset;
        }
        self.journal.record(Entry::Offset {
            session: p.session,
            sender: p.sender,
            offset: p.offset,
        });
        res
    }

    /// Commits if due. Right before a commit that can keep its rows for
    /// live readers, the store is told whether anyone follows the domain
    /// now (asking takes a lock the readers take too, so only then, not
    /// per command).
    fn commit(&mut self, idle: bool) {
        let policy = &self.setup.commit;
        if self.db.keep_due(policy, idle) {
            self.db
                .keep_committed(self.setup.commits.watched(self.domain));
        }
        match self.db.commit_if_due(policy, idle) {
            Ok(true) => self.committed(),
            Ok(false) => {}
            Err(e) if e.is_unavailable() => self.recover(&e),
            // Refused for good (PostgreSQL): its rows are not stored.
            Err(e) => {
                tracing::error!(domain = self.domain, error = %e, "commit refused");
                self.journal.clear();
            }
        }
    }

    /// Writes the lost transaction again until it commits (see [`redo`]).
    fn recover(&mut self, cause: &StoreError) {
        redo::recover(&mut self.db, &self.journal, self.domain, cause);
        self.committed();
    }

    /// After a commit: acknowledgements and live readers.
    fn committed(&mut self) {
        self.journal.clear();
        acknowledge(&mut self.sessions);
        publish(&mut self.db, self.setup, self.domain);
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
