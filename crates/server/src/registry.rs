//! Open databases, shared by their clients: opened by the first client of a
//! domain, closed when the last one leaves.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use tokio::sync::{mpsc, Semaphore};

use crate::writer::{self, Command, QueueBytes, WriterSetup};

/// One open database.
#[derive(Debug)]
struct Entry {
    /// The writer's queue; dropped with the entry, so the writer ends once
    /// the clients' clones are gone too.
    tx: mpsc::Sender<Command>,
    /// Connected clients.
    clients: usize,
    /// Bytes of rows queued to the writer and not yet inserted.
    budget: Arc<Semaphore>,
    /// The writer thread.
    thread: JoinHandle<()>,
}

#[derive(Debug, Default)]
struct State {
    /// Open databases by domain.
    open: HashMap<String, Entry>,
    /// Writers of closed databases, possibly still finishing.
    closing: HashMap<String, JoinHandle<()>>,
}

/// The server's open databases.
#[derive(Debug)]
pub struct Registry {
    /// Settings every writer gets (the domain is filled in per database).
    template: WriterSetup,
    /// Queue length of each writer.
    queue: usize,
    /// Most databases open at once.
    max_open: usize,
    /// Bytes of queued rows each database may hold.
    queue_bytes: usize,
    /// Shared state.
    state: Mutex<State>,
}

impl Registry {
    /// A registry whose writers are built from `template`, with at most
    /// `max_open` databases open at once.
    pub fn new(
        template: WriterSetup,
        queue: usize,
        max_open: usize,
        queue_bytes: usize,
    ) -> Arc<Registry> {
        Arc::new(Registry {
            template,
            queue: queue.max(1),
            max_open: max_open.max(1),
            queue_bytes: queue_bytes.clamp(1, Semaphore::MAX_PERMITS),
            state: Mutex::new(State::default()),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Joins the database of `domain`, opening it if no client has it open.
    pub fn join(self: &Arc<Registry>, domain: &str) -> std::io::Result<DbClient> {
        let mut state = self.state();
        let (tx, budget) = match state.open.get_mut(domain) {
            Some(entry) => {
                entry.clients += 1;
                (entry.tx.clone(), Arc::clone(&entry.budget))
            }
            None => {
                // Writers that have finished are joined now, so that a server
                // seeing many short-lived domains keeps no handle per domain.
                state.closing.retain(|_, t| !t.is_finished());
                if state.open.len() >= self.max_open {
                    return Err(std::io::Error::other(format!(
                        "{} databases are open, the most this server keeps (--max-domains); try again when a domain's clients have left",
                        self.max_open
                    )));
                }
                let (tx, rx) = mpsc::channel(self.queue);
                self.template.metrics.domain(domain).set_queue(&tx);
                let setup = WriterSetup {
                    domain: domain.to_owned(),
                    ..self.template.clone()
                };
                let previous = state.closing.remove(domain);
                let thread = writer::spawn(setup, rx, previous)?;
                let budget = Arc::new(Semaphore::new(self.queue_bytes));
                state.open.insert(
                    domain.to_owned(),
                    Entry {
                        tx: tx.clone(),
                        clients: 1,
                        budget: Arc::clone(&budget),
                        thread,
                    },
                );
                (tx, budget)
            }
        };
        Ok(DbClient {
            registry: Arc::clone(self),
            domain: domain.to_owned(),
            tx: Some(tx),
            budget,
        })
    }

    fn leave(&self, domain: &str) {
        let mut state = self.state();
        let last = match state.open.get_mut(domain) {
            Some(entry) => {
                entry.clients -= 1;
                entry.clients == 0
            }
            None => false,
        };
        if last {
            if let Some(entry) = state.open.remove(domain) {
                state.closing.insert(domain.to_owned(), entry.thread);
            }
        }
    }

    /// Writer threads running now (open databases and closing ones).
    pub fn writer_threads(&self) -> usize {
        let state = self.state();
        state.open.len() + state.closing.values().filter(|t| !t.is_finished()).count()
    }

    /// Waits (blocking) for every writer whose database has been closed.
    /// Call after all clients have left, at shutdown.
    pub fn join_closed(&self) {
        let threads: Vec<_> = self.state().closing.drain().map(|(_, t)| t).collect();
        for t in threads {
            let _ = t.join();
        }
    }
}

/// A client's membership of one database: its queue to the writer. Dropping
/// it leaves the database (closing it if this was the last client).
#[derive(Debug)]
pub struct DbClient {
    /// To update the client count.
    registry: Arc<Registry>,
    /// Which database.
    domain: String,
    /// The writer's queue (dropped before leaving).
    tx: Option<mpsc::Sender<Command>>,
    /// The database's queue budget in bytes.
    budget: Arc<Semaphore>,
}

impl DbClient {
    /// The domain.
    pub fn domain(&self) -> &str {
        &self.domain
    }

    /// Takes `bytes` of the database's queue budget (all of it for a batch
    /// larger than the whole budget), waiting while other batches hold it.
    pub async fn reserve(&self, bytes: usize) -> QueueBytes {
        let cap = u32::try_from(bytes.clamp(1, self.registry.queue_bytes)).unwrap_or(u32::MAX);
        Arc::clone(&self.budget)
            .acquire_many_owned(cap)
            .await
            .expect("the budget semaphore is never closed")
    }

    /// Queues a command; waits while the writer's queue is full. Fails only
    /// if the writer is gone.
    pub async fn send(&self, cmd: Command) -> Result<(), ()> {
        match &self.tx {
            Some(tx) => tx.send(cmd).await.map_err(|_| ()),
            None => Err(()),
        }
    }
}

impl Drop for DbClient {
    fn drop(&mut self) {
        self.tx = None;
        self.registry.leave(&self.domain);
    }
}
