//! Feedback points (spec §3.7): the server steers senders that accept
//! control messages, by hand (`POST /control/…` on the `--metrics`
//! endpoint) or through rules (`--feedback-rules`).
//!
//! A connection whose header carries `x-streamgauge-backchannel: 1` and
//! `x-streamgauge-feedback: 1` registers as a [`Peer`]; its back-channel
//! task writes the control lines queued here. The [`engine`] evaluates the
//! rules twice a second over every peer.

pub mod engine;
pub mod rules;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use serde_json::{json, Value as Json};
use tokio::sync::mpsc;

use crate::metrics::DomainMetrics;
pub use rules::{Condition, Rule};

/// Control lines queued per connection before sends fail (a sender that
/// stops reading its back-channel must not make the server buffer).
const QUEUE: usize = 64;

/// One connection that accepts control messages.
#[derive(Debug)]
pub struct Peer {
    /// Its domain.
    pub domain: String,
    /// Its `sender-id`.
    pub sender: String,
    /// Lines for its back-channel task.
    tx: mpsc::Sender<String>,
    /// Id of the next control message (increasing per connection).
    next_id: AtomicU64,
    /// Rows it has delivered (the connection counts them).
    pub rows: AtomicU64,
    /// Last values of watched fields: (stream, field) → value.
    fields: Mutex<HashMap<(String, String), f64>>,
    /// Its domain's counters (backlog).
    pub metrics: Arc<DomainMetrics>,
}

impl Peer {
    /// Queues one control message; returns its id.
    pub fn send(&self, message: &Json) -> Result<u64, String> {
        rules::check_message(message)?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let line = omsp::session::Line::Control {
            id,
            json: message.to_string(),
        }
        .to_string();
        self.tx.try_send(line).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => {
                "the sender is not reading its control messages".to_owned()
            }
            mpsc::error::TrySendError::Closed(_) => "the sender has gone".to_owned(),
        })?;
        tracing::info!(domain = %self.domain, sender = %self.sender, id, %message,
            "control message sent");
        Ok(id)
    }

    /// Records the value of a watched field.
    pub fn observe(&self, stream: &str, field: &str, value: f64) {
        let mut fields = self.fields.lock().unwrap_or_else(|p| p.into_inner());
        fields.insert((stream.to_owned(), field.to_owned()), value);
    }

    /// The last value of a watched field.
    pub fn field(&self, stream: &str, field: &str) -> Option<f64> {
        let fields = self.fields.lock().unwrap_or_else(|p| p.into_inner());
        fields.get(&(stream.to_owned(), field.to_owned())).copied()
    }
}

/// Every feedback-capable connection and the rules in force.
#[derive(Debug, Default)]
pub struct Feedback {
    rules: RwLock<Arc<Vec<Rule>>>,
    /// Whether any rule watches a field (connections look at values only then).
    watch_fields: AtomicBool,
    peers: Mutex<HashMap<u64, Arc<Peer>>>,
    next_peer: AtomicU64,
}

/// A connection's registration; dropping it unregisters.
#[derive(Debug)]
pub struct Registration {
    hub: Arc<Feedback>,
    id: u64,
    /// The peer.
    pub peer: Arc<Peer>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.hub.peers().remove(&self.id);
    }
}

impl Feedback {
    /// A hub with `rules`.
    pub fn new(rules: Vec<Rule>) -> Arc<Feedback> {
        let hub = Arc::new(Feedback::default());
        hub.set_rules(rules);
        hub
    }

    fn peers(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Peer>>> {
        self.peers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Replaces the rules (SIGHUP).
    pub fn set_rules(&self, rules: Vec<Rule>) {
        let fields = rules
            .iter()
            .any(|r| matches!(r.when, Condition::Field { .. }));
        self.watch_fields.store(fields, Ordering::Relaxed);
        *self.rules.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(rules);
    }

    /// The rules in force.
    pub fn rules(&self) -> Arc<Vec<Rule>> {
        Arc::clone(&self.rules.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Fields some rule watches, as (stream, field) pairs (empty: none).
    pub fn watched_fields(&self) -> Vec<(String, String)> {
        if !self.watch_fields.load(Ordering::Relaxed) {
            return Vec::new();
        }
        self.rules()
            .iter()
            .filter_map(|r| match &r.when {
                Condition::Field { stream, field } => Some((stream.clone(), field.clone())),
                _ => None,
            })
            .collect()
    }

    /// Registers a connection; its back-channel task reads the receiver.
    pub fn register(
        self: &Arc<Self>,
        domain: &str,
        sender: &str,
        metrics: Arc<DomainMetrics>,
    ) -> (Registration, mpsc::Receiver<String>) {
        let (tx, rx) = mpsc::channel(QUEUE);
        let peer = Arc::new(Peer {
            domain: domain.to_owned(),
            sender: sender.to_owned(),
            tx,
            next_id: AtomicU64::new(0),
            rows: AtomicU64::new(0),
            fields: Mutex::new(HashMap::new()),
            metrics,
        });
        let id = self.next_peer.fetch_add(1, Ordering::Relaxed);
        self.peers().insert(id, Arc::clone(&peer));
        let reg = Registration {
            hub: Arc::clone(self),
            id,
            peer,
        };
        (reg, rx)
    }

    /// Every registered connection, with its registration number.
    pub fn snapshot(&self) -> Vec<(u64, Arc<Peer>)> {
        let mut v: Vec<_> = self
            .peers()
            .iter()
            .map(|(id, p)| (*id, Arc::clone(p)))
            .collect();
        v.sort_by_key(|(id, _)| *id);
        v
    }

    /// Sends `message` to every connection of `sender` in `domain`; returns
    /// the message ids, or why none was sent.
    pub fn send(&self, domain: &str, sender: &str, message: &Json) -> Result<Vec<u64>, String> {
        rules::check_message(message)?;
        let peers: Vec<_> = self
            .snapshot()
            .into_iter()
            .filter(|(_, p)| p.domain == domain && p.sender == sender)
            .collect();
        if peers.is_empty() {
            return Err(format!(
                "no connected sender {sender:?} in domain {domain:?} accepts control messages"
            ));
        }
        peers.iter().map(|(_, p)| p.send(message)).collect()
    }

    /// `GET /feedback`: connected peers and the rules.
    pub fn status(&self) -> Json {
        let peers: Vec<Json> = self
            .snapshot()
            .iter()
            .map(|(_, p)| {
                json!({
                    "domain": p.domain,
                    "sender": p.sender,
                    "rows": p.rows.load(Ordering::Relaxed),
                    "messages_sent": p.next_id.load(Ordering::Relaxed),
                })
            })
            .collect();
        let rules: Vec<Json> = self
            .rules()
            .iter()
            .map(|r| json!({"name": r.name, "action": r.action, "restore": r.restore}))
            .collect();
        json!({"peers": peers, "rules": rules})
    }
}
