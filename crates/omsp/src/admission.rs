//! Admission of connections for any OMSP receiver (the collection server,
//! the proxy): how many it serves at once, in total and per source
//! address, so that one host (or a flood of half-open clients) cannot take
//! every descriptor and every connection's buffers.
//!
//! The caller closes a refused connection at once, before reading
//! anything, and counts it by [`Refused`] reason. Logging one line per
//! refused connection would let a flood fill the disk, so a refusal carries
//! a [`Report`] at most once per [`LOG_EVERY`], with the number refused
//! since the last one; the caller logs that.
//!
//! ```
//! use omsp::admission::{Admission, Refused};
//!
//! let limits = Admission::new(10, 1);
//! let ip = "192.0.2.1".parse().unwrap();
//! let first = limits.admit(ip).unwrap();
//! let refusal = limits.admit(ip).unwrap_err();
//! assert_eq!(refusal.reason, Refused::PerSource);
//! assert!(refusal.report.is_some()); // the first refusal is reported
//! drop(first); // frees its place
//! assert!(limits.admit(ip).is_ok());
//! ```
//!
//! No I/O: the caller owns the sockets and the clock of the log only.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Shortest interval between two reports about refused connections.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// Why a connection was refused (the `reason` label of the refusal counter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// `--max-connections` connections are open.
    Total,
    /// `--max-connections-per-source` connections from this address are open.
    PerSource,
}

impl Refused {
    /// Every reason, in label order.
    pub const ALL: [Refused; 2] = [Refused::Total, Refused::PerSource];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            Refused::Total => "total",
            Refused::PerSource => "per_source",
        }
    }
}

/// A refused connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Which limit was reached.
    pub reason: Refused,
    /// Set when a log line is due (at most once per [`LOG_EVERY`]).
    pub report: Option<Report>,
}

/// What a log line about refused connections says. Its `Display` is the
/// message, naming the flags that raise the limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Connections refused since the last report, this one included.
    pub refused: u64,
    /// Connections open now.
    pub open: usize,
    /// The total limit.
    pub max_total: usize,
    /// The per-address limit.
    pub max_per_source: usize,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} connections refused: limit reached ({} open, --max-connections {}, \
             --max-connections-per-source {}; raise them if these clients are legitimate)",
            self.refused, self.open, self.max_total, self.max_per_source
        )
    }
}

#[derive(Debug, Default)]
struct State {
    open: usize,
    per_source: HashMap<IpAddr, usize>,
    /// Refusals not yet reported, and when the last report was made.
    unlogged: u64,
    logged_at: Option<Instant>,
}

/// Connection counts and their limits.
#[derive(Debug)]
pub struct Admission {
    max_total: usize,
    max_per_source: usize,
    state: Mutex<State>,
}

/// An admitted connection; dropping it frees its place.
#[derive(Debug)]
pub struct Admitted {
    admission: Arc<Admission>,
    ip: IpAddr,
}

impl Admission {
    /// Limits of `max_total` connections, `max_per_source` per address
    /// (each at least 1).
    pub fn new(max_total: usize, max_per_source: usize) -> Arc<Admission> {
        Arc::new(Admission {
            max_total: max_total.max(1),
            max_per_source: max_per_source.max(1),
            state: Mutex::new(State::default()),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits a connection from `ip`, or says why not.
    pub fn admit(self: &Arc<Admission>, ip: IpAddr) -> Result<Admitted, Refusal> {
        let mut s = self.state();
        let refused = if s.open >= self.max_total {
            Some(Refused::Total)
        } else if s.per_source.get(&ip).copied().unwrap_or(0) >= self.max_per_source {
            Some(Refused::PerSource)
        } else {
            None
        };
        if let Some(reason) = refused {
            s.unlogged += 1;
            let due = s.logged_at.is_none_or(|t| t.elapsed() >= LOG_EVERY);
            let report = due.then(|| Report {
                refused: s.unlogged,
                open: s.open,
                max_total: self.max_total,
                max_per_source: self.max_per_source,
            });
            if due {
                s.unlogged = 0;
                s.logged_at = Some(Instant::now());
            }
            return Err(Refusal { reason, report });
        }
        s.open += 1;
        *s.per_source.entry(ip).or_default() += 1;
        Ok(Admitted {
            admission: Arc::clone(self),
            ip,
        })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.state().open
    }

    /// The total limit.
    pub fn max_total(&self) -> usize {
        self.max_total
    }

    /// The per-address limit.
    pub fn max_per_source(&self) -> usize {
        self.max_per_source
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut s = self.admission.state();
        s.open = s.open.saturating_sub(1);
        if let Some(n) = s.per_source.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                s.per_source.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_total_and_per_source_and_frees_on_drop() {
        let a = Admission::new(3, 2);
        let x: IpAddr = "10.0.0.1".parse().unwrap();
        let y: IpAddr = "10.0.0.2".parse().unwrap();
        let x1 = a.admit(x).unwrap();
        let _x2 = a.admit(x).unwrap();
        assert_eq!(a.admit(x).unwrap_err().reason, Refused::PerSource);
        let _y1 = a.admit(y).unwrap();
        assert_eq!(a.admit(y).unwrap_err().reason, Refused::Total);
        drop(x1);
        assert_eq!(a.open(), 2);
        let _x3 = a.admit(x).unwrap();
        assert_eq!(a.admit(y).unwrap_err().reason, Refused::Total);
    }

    #[test]
    fn reports_once_per_interval_with_the_count_since_the_last() {
        let a = Admission::new(1, 1);
        let x: IpAddr = "10.0.0.1".parse().unwrap();
        let _held = a.admit(x).unwrap();
        let first = a.admit(x).unwrap_err().report.unwrap();
        assert_eq!(first.refused, 1);
        assert_eq!(first.open, 1);
        for _ in 0..5 {
            assert_eq!(a.admit(x).unwrap_err().report, None);
        }
        a.state().logged_at = Some(Instant::now() - LOG_EVERY);
        assert_eq!(a.admit(x).unwrap_err().report.unwrap().refused, 6);
        assert!(first.to_string().contains("--max-connections-per-source 1"));
    }
}
