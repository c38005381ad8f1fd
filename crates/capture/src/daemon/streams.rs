//! Counters and flows as measurement streams: every counter snapshot of a
//! session is injected into the table `capture_counters`, and every flow
//! record of its IPFIX outputs into `capture_flow`, of the session's
//! experiment domain on the collection server (`collect = "HOST:PORT"`),
//! through the project's own client library — the daemon measures itself
//! the way it asks experimenters to measure.
//!
//! One [`client::Client`] per experiment (the domain is per client),
//! created when the experiment's first row is sent, closed at shutdown.
//! The queue to the streams thread is bounded: when it is full, rows are
//! dropped and counted ([`CounterStreams::dropped`], `/metrics`), so the
//! packet threads never wait.

use super::flowrow::{self, RowText, FLOW_COLUMNS};
use crate::counters::Counters;
use crate::session::FlowBatch;
use client::spec::{Backchannel, ClientSpec, DestinationSpec, Encoding, OverloadPolicy, Uri};
use client::{Client, Mp};
use omsp::{OmlType, ValueRef};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::Mutex;
use std::thread::JoinHandle;

/// Columns of `capture_counters` (after `session` and `interface`).
pub const COUNTER_COLUMNS: [&str; 10] = [
    "seen",
    "matched",
    "sampled_out",
    "stored",
    "bytes",
    "written",
    "dropped_by_us",
    "dropped_kernel",
    "flows_exported",
    "archived",
];

/// The counter values in [`COUNTER_COLUMNS`] order; `archived` counts the
/// files handed to the archive uploader.
pub fn counter_values(c: &Counters, archived: u64) -> [u64; 10] {
    [
        c.seen,
        c.matched,
        c.sampled_out,
        c.stored,
        c.bytes,
        c.written,
        c.dropped_by_us,
        c.kernel_drops,
        c.flows_exported,
        archived,
    ]
}

/// A snapshot on its way to the streams thread.
enum Msg {
    /// One counter snapshot.
    Snapshot {
        /// Experiment domain.
        experiment: String,
        /// Session id.
        session: String,
        /// Interface.
        interface: String,
        /// The counters.
        counters: Counters,
        /// Files handed to the archive uploader.
        archived: u64,
    },
    /// Flow records of one session.
    Flows {
        /// Experiment domain.
        experiment: String,
        /// Interface.
        interface: String,
        /// The records.
        batch: FlowBatch,
    },
    /// Flush and close every client, then end.
    Close,
}

/// Messages the queue to the streams thread holds before rows are dropped.
const QUEUE: usize = 16 * 1024;

/// Sends counter snapshots to one collection server.
///
/// The clients live in a thread of their own, started with the daemon:
/// packet threads may sit in another network namespace (threads inherit
/// it), and must never wait for a client to be created.
pub struct CounterStreams {
    /// Rows to the streams thread (bounded).
    tx: Mutex<SyncSender<Msg>>,
    /// Messages dropped because the queue was full.
    dropped: AtomicU64,
    /// A drop was logged already.
    warned: AtomicBool,
    /// The streams thread.
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Where they go, for messages.
    target: String,
}

impl std::fmt::Debug for CounterStreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CounterStreams({})", self.target)
    }
}

/// The streams thread's state.
struct Clients {
    /// Server host.
    host: String,
    /// Server port.
    port: u16,
    /// Sender id of this node.
    node: String,
    /// Open clients by experiment, with their counters and flow points.
    open: HashMap<String, (Client, Mp, Mp)>,
}

impl Clients {
    fn open(&self, experiment: &str) -> Result<(Client, Mp, Mp), client::ClientError> {
        let spec = ClientSpec {
            app: "capture".into(),
            id: Some(self.node.clone()),
            domain: Some(experiment.to_string()),
            destinations: vec![DestinationSpec {
                uri: Uri::Tcp {
                    host: self.host.clone(),
                    port: self.port,
                },
                encoding: Encoding::Binary,
                // A dead server must never slow the daemon: drop the oldest.
                policy: OverloadPolicy::DropOldest,
                bufsize: 1 << 20,
                streams: None,
                instrumentation: false,
                backchannel: Backchannel::default(),
            }],
            ..ClientSpec::default()
        };
        let c = Client::new(spec)?;
        let mut fields = vec![("session", OmlType::String), ("interface", OmlType::String)];
        fields.extend(COUNTER_COLUMNS.iter().map(|n| (*n, OmlType::UInt64)));
        let mp = c.add_mp("counters", &fields)?;
        // Cumulative since the session started: declared, so the query
        // API can give their rates (`derive=rate`) and charts plot those.
        for name in COUNTER_COLUMNS {
            mp.inject_metadata("kind", "counter", Some(name))?;
        }
        let flows = c.add_mp("flow", &FLOW_COLUMNS)?;
        c.start()?;
        Ok((c, mp, flows))
    }

    /// The client of `experiment`, opened on first use.
    fn client(&mut self, experiment: &str) -> Option<&(Client, Mp, Mp)> {
        if !self.open.contains_key(experiment) {
            match self.open(experiment) {
                Ok(cm) => {
                    self.open.insert(experiment.to_string(), cm);
                }
                Err(e) => {
                    tracing::warn!(experiment, error = %e, "capture stream not opened");
                    return None;
                }
            }
        }
        self.open.get(experiment)
    }

    fn send_flows(&mut self, experiment: &str, interface: &str, b: &FlowBatch) {
        let Some((_, _, mp)) = self.client(experiment) else {
            return;
        };
        for r in &b.records {
            let t = RowText::of(r);
            if let Err(e) = mp.inject(&flowrow::row(&b.session, interface, b.domain, r, &t)) {
                tracing::warn!(session = %b.session, error = %e, "flow record not injected");
            }
        }
    }

    fn send(
        &mut self,
        experiment: &str,
        session: &str,
        interface: &str,
        c: &Counters,
        archived: u64,
    ) {
        let Some((_, mp, _)) = self.client(experiment) else {
            return;
        };
        let mut row = vec![ValueRef::String(session), ValueRef::String(interface)];
        row.extend(
            counter_values(c, archived)
                .iter()
                .map(|v| ValueRef::UInt64(*v)),
        );
        if let Err(e) = mp.inject(&row) {
            tracing::warn!(session, error = %e, "counter snapshot not injected");
        }
    }

    fn close(&mut self) {
        for (exp, (c, _, _)) in self.open.drain() {
            if let Err(e) = c.close() {
                tracing::warn!(experiment = %exp, error = %e, "counter stream close failed");
            }
        }
    }
}

impl CounterStreams {
    /// Streams to `host:port` (validated by the daemon configuration);
    /// starts the streams thread in the caller's network namespace.
    pub fn new(collect: &str, node: &str) -> Option<CounterStreams> {
        let (h, p) = collect.rsplit_once(':')?;
        let mut clients = Clients {
            host: h.trim_start_matches('[').trim_end_matches(']').to_string(),
            port: p.parse().ok()?,
            node: node.to_string(),
            open: HashMap::new(),
        };
        let (tx, rx) = mpsc::sync_channel::<Msg>(QUEUE);
        let thread = std::thread::Builder::new()
            .name("capture-counters".into())
            .spawn(move || {
                while let Ok(m) = rx.recv() {
                    match m {
                        Msg::Snapshot {
                            experiment,
                            session,
                            interface,
                            counters,
                            archived,
                        } => clients.send(&experiment, &session, &interface, &counters, archived),
                        Msg::Flows {
                            experiment,
                            interface,
                            batch,
                        } => clients.send_flows(&experiment, &interface, &batch),
                        Msg::Close => break,
                    }
                }
                clients.close();
            })
            .ok()?;
        Some(CounterStreams {
            tx: Mutex::new(tx),
            dropped: AtomicU64::new(0),
            warned: AtomicBool::new(false),
            thread: Mutex::new(Some(thread)),
            target: collect.to_string(),
        })
    }

    /// Queues one snapshot of `session` (on `interface`) for `experiment`.
    pub fn send(
        &self,
        experiment: &str,
        session: &str,
        interface: &str,
        c: &Counters,
        archived: u64,
    ) {
        self.queue(Msg::Snapshot {
            experiment: experiment.into(),
            session: session.into(),
            interface: interface.into(),
            counters: *c,
            archived,
        });
    }

    /// Queues the flow records of a session (on `interface`) for `experiment`.
    pub fn send_flows(&self, experiment: &str, interface: &str, batch: FlowBatch) {
        self.queue(Msg::Flows {
            experiment: experiment.into(),
            interface: interface.into(),
            batch,
        });
    }

    /// Queues without waiting; a full queue drops the message (counted).
    fn queue(&self, m: Msg) {
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(TrySendError::Full(_)) = tx.try_send(m) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            if !self.warned.swap(true, Ordering::Relaxed) {
                tracing::warn!(target = %self.target, "stream queue full: rows dropped (counted in capture_streams_dropped_total)");
            }
        }
    }

    /// Messages (counter snapshots, flow batches) dropped because the
    /// streams thread could not keep up.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Sends what is queued, flushes and closes every client (waits for
    /// the server to take the rows).
    pub fn close(&self) {
        let _ = self
            .tx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(Msg::Close);
        if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
    }
}
