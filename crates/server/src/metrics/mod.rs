//! The server's own state, as named counters (self-measurement).
//!
//! Like vector's internal events, every counter has one name, one meaning
//! and one place where it changes. They are read by the Prometheus endpoint
//! (`crate::http`, `--metrics`/`--http`) and by the self-reporting stream writer
//! ([`report`], `--self-domain NAME`).
//!
//! | name | type | labels | counts |
//! |---|---|---|---|
//! | `streamgauge_connections_accepted_total` | counter | | TCP connections accepted |
//! | `streamgauge_connections_open` | gauge | | connections being served now |
//! | `streamgauge_connections_refused_total` | counter | `reason` | connections closed unread because a limit was reached: `total` (`--max-connections`), `per_source` (`--max-connections-per-source`) |
//! | `streamgauge_connections_closed_total` | counter | `reason` | ended connections: `closed` (by the client), `idle` (idle timeout), `shutdown`, `error` (protocol or storage error) |
//! | `streamgauge_received_bytes_total` | counter | | bytes read from client sockets |
//! | `streamgauge_decode_errors_total` | counter | `code` | input errors, by [`omsp::ErrorKind::code`] (fatal ones included) |
//! | `streamgauge_reject_log_lines_suppressed_total` | counter | `reason` | log lines about rejected input not written, over the server's budget ([`rejects`]) |
//! | `streamgauge_tuples_received_total` | counter | `domain` | tuples decoded and handed to the domain's writer |
//! | `streamgauge_tuples_stored_total` | counter | `domain` | rows the writer inserted |
//! | `streamgauge_tuples_rejected_total` | counter | `domain`, `stage` | tuples lost: `decode` (a bad line or packet after the header), `store` (the insert failed) |
//! | `streamgauge_writer_queue_depth` | gauge | `domain` | batches waiting in the writer's queue |
//! | `streamgauge_writer_backlog_rows` | gauge | `domain` | rows handed to the writer and not yet inserted |
//! | `streamgauge_commits_total` | counter | `domain` | transactions committed |
//! | `streamgauge_commit_rows` | histogram | `domain` | rows per committed transaction |

mod metered;
pub mod rejects;
pub mod report;
mod text;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::admission::Refused;

pub use metered::Metered;
pub use rejects::{ConnRejects, RejectLog};
pub use report::ClientEvent;
pub use text::{render, CONTENT_TYPE};

/// Upper bounds of the `streamgauge_commit_rows` histogram buckets.
pub const COMMIT_ROWS_BUCKETS: [u64; 7] = [1, 10, 100, 1_000, 10_000, 50_000, 100_000];

/// Why a connection ended (the `reason` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The client closed the connection.
    Closed,
    /// Nothing came for the idle timeout.
    Idle,
    /// The server shut down.
    Shutdown,
    /// A protocol or storage error ended the session.
    Error,
}

impl CloseReason {
    /// All reasons, in label order.
    pub const ALL: [CloseReason; 4] = [
        CloseReason::Closed,
        CloseReason::Idle,
        CloseReason::Shutdown,
        CloseReason::Error,
    ];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            CloseReason::Closed => "closed",
            CloseReason::Idle => "idle",
            CloseReason::Shutdown => "shutdown",
            CloseReason::Error => "error",
        }
    }
}

/// Server-wide counters.
#[derive(Debug, Default)]
pub struct Metrics {
    /// `streamgauge_connections_accepted_total`.
    pub connections_accepted: AtomicU64,
    /// Connections that ended, indexed like [`CloseReason::ALL`]; open =
    /// accepted − sum of these.
    closed: [AtomicU64; 4],
    /// `streamgauge_connections_refused_total`, indexed like [`Refused::ALL`].
    refused: [AtomicU64; 2],
    /// `streamgauge_received_bytes_total`.
    pub bytes_received: AtomicU64,
    /// `streamgauge_decode_errors_total`, by code (errors are rare: a lock is fine).
    decode_errors: Mutex<BTreeMap<&'static str, u64>>,
    /// The budget of log lines about rejected input, and what it suppressed.
    pub rejects: Arc<RejectLog>,
    /// Per-domain counters, created on first use.
    domains: Mutex<BTreeMap<String, Arc<DomainMetrics>>>,
    /// Connection events for the self-reporting stream, if it runs.
    events: std::sync::OnceLock<tokio::sync::mpsc::Sender<ClientEvent>>,
}

/// Counters of one domain (database).
#[derive(Debug, Default)]
pub struct DomainMetrics {
    /// `streamgauge_tuples_received_total`.
    pub received: AtomicU64,
    /// `streamgauge_tuples_stored_total`.
    pub stored: AtomicU64,
    /// `streamgauge_tuples_rejected_total{stage="decode"}`.
    pub rejected_decode: AtomicU64,
    /// `streamgauge_tuples_rejected_total{stage="store"}`.
    pub rejected_store: AtomicU64,
    /// The writer's queue, to read `streamgauge_writer_queue_depth` at
    /// scrape time (weak: it must not keep the writer alive).
    queue: Mutex<Option<tokio::sync::mpsc::WeakSender<crate::writer::Command>>>,
    /// `streamgauge_commits_total`.
    pub commits: AtomicU64,
    /// Sum of `streamgauge_commit_rows`.
    pub committed_rows: AtomicU64,
    /// `streamgauge_commit_rows` buckets (non-cumulative; `+Inf` last).
    pub commit_buckets: [AtomicU64; COMMIT_ROWS_BUCKETS.len() + 1],
}

impl DomainMetrics {
    /// Rows handed to the writer and not yet inserted or rejected by it.
    pub fn backlog(&self) -> u64 {
        let done =
            self.stored.load(Ordering::Relaxed) + self.rejected_store.load(Ordering::Relaxed);
        self.received.load(Ordering::Relaxed).saturating_sub(done)
    }

    /// Watches the queue of the domain's (new) writer.
    pub(crate) fn set_queue(&self, tx: &tokio::sync::mpsc::Sender<crate::writer::Command>) {
        *lock(&self.queue) = Some(tx.downgrade());
    }

    /// Batches waiting in the writer's queue now (0 if the database is closed).
    pub fn queue_depth(&self) -> u64 {
        lock(&self.queue)
            .as_ref()
            .and_then(|w| w.upgrade())
            .map_or(0, |tx| (tx.max_capacity() - tx.capacity()) as u64)
    }

    /// Records one commit of `rows` rows.
    pub fn commit(&self, rows: u64) {
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.committed_rows.fetch_add(rows, Ordering::Relaxed);
        let bucket = COMMIT_ROWS_BUCKETS
            .iter()
            .position(|&b| rows <= b)
            .unwrap_or(COMMIT_ROWS_BUCKETS.len());
        self.commit_buckets[bucket].fetch_add(1, Ordering::Relaxed);
    }
}

/// Totals over domains, as the `server_stats` stream reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Connections accepted.
    pub connections_accepted: u64,
    /// Connections open.
    pub connections_open: u64,
    /// Bytes received.
    pub bytes_received: u64,
    /// Tuples received.
    pub tuples_received: u64,
    /// Rows stored.
    pub tuples_stored: u64,
    /// Tuples rejected (decode and store).
    pub tuples_rejected: u64,
    /// Decode errors.
    pub decode_errors: u64,
    /// Log lines about rejected input suppressed.
    pub reject_log_lines_suppressed: u64,
    /// Commits.
    pub commits: u64,
    /// Writer backlog (rows).
    pub writer_backlog: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Metrics {
    /// Fresh counters.
    pub fn new() -> Arc<Metrics> {
        Arc::new(Metrics::default())
    }

    /// The counters of `domain`.
    pub fn domain(&self, domain: &str) -> Arc<DomainMetrics> {
        let mut domains = lock(&self.domains);
        if let Some(d) = domains.get(domain) {
            return Arc::clone(d);
        }
        let d = Arc::new(DomainMetrics::default());
        domains.insert(domain.to_owned(), Arc::clone(&d));
        d
    }

    /// Every domain's counters, by name.
    pub fn domains(&self) -> Vec<(String, Arc<DomainMetrics>)> {
        lock(&self.domains)
            .iter()
            .map(|(k, v)| (k.clone(), Arc::clone(v)))
            .collect()
    }

    /// Counts one ended connection.
    pub fn closed(&self, reason: CloseReason) {
        self.closed[reason as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a connection refused for `reason`.
    pub fn refused(&self, reason: Refused) {
        self.refused[reason as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Connections refused for `reason`.
    pub fn refused_count(&self, reason: Refused) -> u64 {
        self.refused[reason as usize].load(Ordering::Relaxed)
    }

    /// Ended connections for `reason`.
    pub fn closed_count(&self, reason: CloseReason) -> u64 {
        self.closed[reason as usize].load(Ordering::Relaxed)
    }

    /// Connections being served now.
    pub fn open(&self) -> u64 {
        let closed: u64 = CloseReason::ALL.iter().map(|&r| self.closed_count(r)).sum();
        self.connections_accepted
            .load(Ordering::Relaxed)
            .saturating_sub(closed)
    }

    /// Counts one input error.
    pub fn decode_error(&self, code: &'static str) {
        *lock(&self.decode_errors).entry(code).or_insert(0) += 1;
    }

    /// Input errors by code.
    pub fn decode_errors(&self) -> Vec<(&'static str, u64)> {
        lock(&self.decode_errors)
            .iter()
            .map(|(k, v)| (*k, *v))
            .collect()
    }

    /// Sends connection events to `tx` from now on (the self-reporting stream).
    pub fn set_event_sink(&self, tx: tokio::sync::mpsc::Sender<ClientEvent>) {
        let _ = self.events.set(tx);
    }

    /// Reports a connection event, if anyone listens. Never blocks: when the
    /// reporter falls behind, events are dropped (and logged).
    pub fn event(&self, event: impl FnOnce() -> ClientEvent) {
        if let Some(tx) = self.events.get() {
            if tx.try_send(event()).is_err() {
                tracing::debug!("self-report queue full; connection event dropped");
            }
        }
    }

    /// Totals over every domain except `skip` (the self-reporting domain).
    pub fn totals(&self, skip: Option<&str>) -> Totals {
        let mut t = Totals {
            connections_accepted: self.connections_accepted.load(Ordering::Relaxed),
            connections_open: self.open(),
            bytes_received: self.bytes_received.load(Ordering::Relaxed),
            decode_errors: self.decode_errors().iter().map(|(_, n)| n).sum(),
            reject_log_lines_suppressed: self.rejects.suppressed().iter().map(|(_, n)| n).sum(),
            ..Totals::default()
        };
        for (name, d) in self.domains() {
            if Some(name.as_str()) == skip {
                continue;
            }
            t.tuples_received += d.received.load(Ordering::Relaxed);
            t.tuples_stored += d.stored.load(Ordering::Relaxed);
            t.tuples_rejected += d.rejected_decode.load(Ordering::Relaxed)
                + d.rejected_store.load(Ordering::Relaxed);
            t.commits += d.commits.load(Ordering::Relaxed);
            t.writer_backlog += d.backlog();
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_is_accepted_minus_closed() {
        let m = Metrics::new();
        m.connections_accepted.fetch_add(3, Ordering::Relaxed);
        m.closed(CloseReason::Idle);
        assert_eq!(m.open(), 2);
    }

    #[test]
    fn commits_fall_into_buckets() {
        let d = DomainMetrics::default();
        d.commit(1);
        d.commit(1024);
        d.commit(1_000_000);
        let b: Vec<u64> = d
            .commit_buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        assert_eq!(b, [1, 0, 0, 0, 1, 0, 0, 1]);
        assert_eq!(d.committed_rows.load(Ordering::Relaxed), 1_001_025);
    }
}
