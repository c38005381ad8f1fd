//! Counters as measurement streams: every counter snapshot of a session is
//! injected into the table `capture_counters` of the session's experiment
//! domain on the collection server (`collect = "HOST:PORT"`), through the
//! project's own client library — the daemon measures itself the way it
//! asks experimenters to measure.
//!
//! One [`client::Client`] per experiment (the domain is per client),
//! created when the experiment's first snapshot is sent, closed at shutdown.

use crate::counters::Counters;
use client::spec::{Backchannel, ClientSpec, DestinationSpec, Encoding, OverloadPolicy, Uri};
use client::{Client, Mp};
use omsp::{OmlType, ValueRef};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// Columns of `capture_counters` (after `session` and `interface`).
pub const COUNTER_COLUMNS: [&str; 9] = [
    "seen",
    "matched",
    "sampled_out",
    "stored",
    "bytes",
    "written",
    "dropped_by_us",
    "dropped_kernel",
    "flows_exported",
];

/// The counter values in [`COUNTER_COLUMNS`] order.
pub fn counter_values(c: &Counters) -> [u64; 9] {
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
    ]
}

/// Sends counter snapshots to one collection server.
pub struct CounterStreams {
    /// Server host.
    host: String,
    /// Server port.
    port: u16,
    /// Sender id of this node.
    node: String,
    /// Open clients by experiment.
    clients: Mutex<HashMap<String, (Client, Mp)>>,
}

impl std::fmt::Debug for CounterStreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CounterStreams({}:{})", self.host, self.port)
    }
}

impl CounterStreams {
    /// Streams to `host:port` (validated by the daemon configuration).
    pub fn new(collect: &str, node: &str) -> Option<CounterStreams> {
        let (h, p) = collect.rsplit_once(':')?;
        Some(CounterStreams {
            host: h.trim_start_matches('[').trim_end_matches(']').to_string(),
            port: p.parse().ok()?,
            node: node.to_string(),
            clients: Mutex::new(HashMap::new()),
        })
    }

    fn open(&self, experiment: &str) -> Result<(Client, Mp), client::ClientError> {
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
                // A dead server must never slow the packet path: drop the oldest.
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
        c.start()?;
        Ok((c, mp))
    }

    /// Injects one snapshot of `session` (on `interface`) into `experiment`.
    pub fn send(&self, experiment: &str, session: &str, interface: &str, c: &Counters) {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if !clients.contains_key(experiment) {
            match self.open(experiment) {
                Ok(cm) => {
                    clients.insert(experiment.to_string(), cm);
                }
                Err(e) => {
                    tracing::warn!(experiment, error = %e, "counter stream not opened");
                    return;
                }
            }
        }
        let Some((_, mp)) = clients.get(experiment) else {
            return;
        };
        let mut row = vec![ValueRef::String(session), ValueRef::String(interface)];
        row.extend(counter_values(c).iter().map(|v| ValueRef::UInt64(*v)));
        if let Err(e) = mp.inject(&row) {
            tracing::warn!(session, error = %e, "counter snapshot not injected");
        }
    }

    /// Flushes and closes every client (waits for the server to take the rows).
    pub fn close(&self) {
        let clients: Vec<_> = self
            .clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .collect();
        for (exp, (c, _)) in clients {
            if let Err(e) = c.close() {
                tracing::warn!(experiment = %exp, error = %e, "counter stream close failed");
            }
        }
        // Let the sender threads' last bytes reach the server's socket.
        std::thread::sleep(Duration::from_millis(10));
    }
}
