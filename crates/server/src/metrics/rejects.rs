//! Rate-limited logging of rejected input: a hostile sender
//! must not turn each bad tuple or each bad connection into a log line
//! (2 MB of garbage after a header made 188 MB of log in 2.6 s).
//!
//! Two levels, both counted in `/metrics` and `server_stats`:
//!
//! - **Per connection** ([`ConnRejects`]): the first reject of each reason
//!   is logged in full; later ones are counted, and summarised in one line
//!   (reason and count) every [`SUMMARY_PERIOD`] and when the connection
//!   ends.
//! - **Server-wide** ([`RejectLog`]): whatever the number of connections,
//!   at most [`LINES_PER_PERIOD`] lines per reason are written per
//!   [`SUMMARY_PERIOD`]; the others are suppressed, counted
//!   (`streamgauge_reject_log_lines_suppressed_total{reason}`), and
//!   summarised in one line per reason when the period ends.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::lock;

/// How often repeated rejects are summarised, per connection and server-wide.
pub const SUMMARY_PERIOD: Duration = Duration::from_secs(10);

/// Lines per reason and period that the server writes before it suppresses.
pub const LINES_PER_PERIOD: u64 = 10;

/// The server-wide budget of reject log lines.
#[derive(Debug, Default)]
pub struct RejectLog {
    /// The current period.
    window: Mutex<Window>,
    /// `streamgauge_reject_log_lines_suppressed_total`, by reason.
    suppressed: Mutex<BTreeMap<&'static str, u64>>,
    /// A task will write the summary at the end of the current period (so
    /// that it comes even when the rejects stop).
    flush_pending: AtomicBool,
}

/// Lines written and suppressed in one period.
#[derive(Debug, Default)]
struct Window {
    /// Start of the period; `None` before the first line.
    start: Option<Instant>,
    /// Per reason: (lines written, lines suppressed).
    lines: BTreeMap<&'static str, (u64, u64)>,
}

impl RejectLog {
    /// May a line about `reason` be written now? Either way it is counted;
    /// a period that has ended is summarised first.
    pub fn admit(self: &Arc<Self>, reason: &'static str) -> bool {
        let now = Instant::now();
        let mut w = lock(&self.window);
        let start = *w.start.get_or_insert(now);
        if now.duration_since(start) >= SUMMARY_PERIOD {
            summarise(&mut w, now);
        }
        let (written, suppressed) = w.lines.entry(reason).or_default();
        if *written < LINES_PER_PERIOD {
            *written += 1;
            return true;
        }
        *suppressed += 1;
        *lock(&self.suppressed).entry(reason).or_insert(0) += 1;
        let end = w.start.unwrap_or(now) + SUMMARY_PERIOD;
        drop(w);
        self.flush_at(end);
        false
    }

    /// Summarises the current period if it has ended.
    pub fn tick(&self) {
        let now = Instant::now();
        let mut w = lock(&self.window);
        if w.start
            .is_some_and(|s| now.duration_since(s) >= SUMMARY_PERIOD)
        {
            summarise(&mut w, now);
        }
    }

    /// Lines suppressed so far, by reason.
    pub fn suppressed(&self) -> Vec<(&'static str, u64)> {
        lock(&self.suppressed)
            .iter()
            .map(|(k, v)| (*k, *v))
            .collect()
    }

    /// Makes sure a summary is written at `end`, even if nothing else
    /// happens by then (outside a runtime, the next line writes it).
    fn flush_at(self: &Arc<Self>, end: Instant) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.flush_pending.swap(true, Ordering::AcqRel) {
            return;
        }
        let this = Arc::clone(self);
        rt.spawn(async move {
            tokio::time::sleep_until(end.into()).await;
            this.flush_pending.store(false, Ordering::Release);
            this.tick();
        });
    }
}

/// Writes one line per reason that had lines suppressed, and starts a new
/// period at `now`.
fn summarise(w: &mut Window, now: Instant) {
    for (reason, (written, suppressed)) in std::mem::take(&mut w.lines) {
        if suppressed > 0 {
            tracing::warn!(reason, written, suppressed, period_s = SUMMARY_PERIOD.as_secs(),
                "rejected input: log lines suppressed in the last period (counts in /metrics: streamgauge_decode_errors_total, streamgauge_reject_log_lines_suppressed_total)");
        }
    }
    w.start = Some(now);
}

/// The rejects of one connection.
#[derive(Debug)]
pub struct ConnRejects {
    /// Rejects per reason since the last summary line.
    pending: BTreeMap<&'static str, u64>,
    /// Rejects per reason over the connection.
    total: BTreeMap<&'static str, u64>,
    /// When the last summary was written (or the connection started).
    last_summary: Instant,
}

impl Default for ConnRejects {
    fn default() -> ConnRejects {
        ConnRejects {
            pending: BTreeMap::new(),
            total: BTreeMap::new(),
            last_summary: Instant::now(),
        }
    }
}

impl ConnRejects {
    /// Counts one reject; true if it is to be logged in full (the first of
    /// its reason on this connection, within the server's budget).
    pub fn reject(&mut self, reason: &'static str, log: &Arc<RejectLog>) -> bool {
        let total = self.total.entry(reason).or_insert(0);
        *total += 1;
        if *total == 1 {
            return log.admit(reason);
        }
        *self.pending.entry(reason).or_insert(0) += 1;
        false
    }

    /// When the rejects counted since the last summary line are due to be
    /// summarised (one [`SUMMARY_PERIOD`] after that line); `None` while
    /// none are pending. The connection waits for this alongside its
    /// socket, so the line comes even when the client goes quiet.
    pub fn next_summary(&self) -> Option<Instant> {
        (!self.pending.is_empty()).then(|| self.last_summary + SUMMARY_PERIOD)
    }

    /// The counts to summarise now, once per [`SUMMARY_PERIOD`] (all of
    /// them when `last`, at the end of the connection), each with the
    /// connection's total; only those the server's budget admits.
    pub fn summary(&mut self, last: bool, log: &Arc<RejectLog>) -> Vec<(&'static str, u64, u64)> {
        let now = Instant::now();
        if self.pending.is_empty()
            || !last && now.duration_since(self.last_summary) < SUMMARY_PERIOD
        {
            return Vec::new();
        }
        self.last_summary = now;
        std::mem::take(&mut self.pending)
            .into_iter()
            .filter(|(reason, _)| log.admit(reason))
            .map(|(reason, n)| (reason, n, self.total.get(reason).copied().unwrap_or(n)))
            .collect()
    }
}

/// Longest error text a reject line carries: an error may quote the
/// input (a header line of up to a megabyte), which must not reach the
/// log whole.
pub const MAX_LOGGED_ERROR: usize = 256;

/// `text` cut to [`MAX_LOGGED_ERROR`] bytes (at a character boundary),
/// with the number of bytes left out.
pub fn clip(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_LOGGED_ERROR {
        return text.into();
    }
    let end = (0..=MAX_LOGGED_ERROR)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    format!("{}… ({} more bytes)", &text[..end], text.len() - end).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_per_reason_then_suppressed_and_counted() {
        let log = Arc::new(RejectLog::default());
        let admitted = (0..1000).filter(|_| log.admit("header")).count();
        assert_eq!(admitted as u64, LINES_PER_PERIOD);
        assert!(log.admit("garbage"), "another reason has its own budget");
        assert_eq!(log.suppressed(), vec![("header", 1000 - LINES_PER_PERIOD)]);
    }

    #[test]
    fn a_connection_logs_each_reason_once_then_counts() {
        let log = Arc::new(RejectLog::default());
        let mut c = ConnRejects::default();
        let logged = (0..500)
            .filter(|i| c.reject(if i % 2 == 0 { "garbage" } else { "bad_value" }, &log))
            .count();
        assert_eq!(logged, 2);
        assert!(c.summary(false, &log).is_empty(), "not before the period");
        let due = c.next_summary().expect("rejects are pending");
        assert!(due > Instant::now() && due <= Instant::now() + SUMMARY_PERIOD);
        assert_eq!(
            c.summary(true, &log),
            vec![("bad_value", 249, 250), ("garbage", 249, 250)]
        );
        assert!(
            c.summary(true, &log).is_empty(),
            "each count summarised once"
        );
        assert_eq!(c.next_summary(), None, "nothing pending, nothing due");
    }

    #[test]
    fn long_errors_are_clipped_at_a_character_boundary() {
        assert_eq!(clip("short"), "short");
        let long = "é".repeat(1000);
        let c = clip(&long);
        assert!(c.len() < MAX_LOGGED_ERROR + 40, "{c}");
        assert!(c.ends_with("(1744 more bytes)"), "{c}");
    }
}
