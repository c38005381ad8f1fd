//! Open databases, shared by their clients: opened by the first client of a
//! domain, closed when the last one leaves.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use tokio::sync::mpsc;

use crate::writer::{self, Command, WriterSetup};

/// One open database.
#[derive(Debug)]
struct Entry {
    /// The writer's queue; dropped with the entry, so the writer ends once
    /// the clients' clones are gone too.
    tx: mpsc::Sender<Command>,
    /// Connected clients.
    clients: usize,
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
    /// Shared state.
    state: Mutex<State>,
}

impl Registry {
    /// A registry whose writers are built from `template`.
    pub fn new(template: WriterSetup, queue: usize) -> Arc<Registry> {
        Arc::new(Registry {
            template,
            queue: queue.max(1),
            state: Mutex::new(State::default()),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Joins the database of `domain`, opening it if no client has it open.
    pub fn join(self: &Arc<Registry>, domain: &str) -> std::io::Result<DbClient> {
        let mut state = self.state();
        let tx = match state.open.get_mut(domain) {
            Some(entry) => {
                entry.clients += 1;
                entry.tx.clone()
            }
            None => {
                let (tx, rx) = mpsc::channel(self.queue);
                self.template.metrics.domain(domain).set_queue(&tx);
                let setup = WriterSetup {
                    domain: domain.to_owned(),
                    ..self.template.clone()
                };
                let previous = state.closing.remove(domain);
                let thread = writer::spawn(setup, rx, previous)?;
                state.open.insert(
                    domain.to_owned(),
                    Entry {
                        tx: tx.clone(),
                        clients: 1,
                        thread,
                    },
                );
                tx
            }
        };
        Ok(DbClient {
            registry: Arc::clone(self),
            domain: domain.to_owned(),
            tx: Some(tx),
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
}

impl DbClient {
    /// The domain.
    pub fn domain(&self) -> &str {
        &self.domain
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
