//! Admission of connections: how many the server serves at once, in total
//! and per source address, so that one host (or a flood of half-open
//! clients) cannot take every descriptor and every connection's buffers.
//!
//! A refused connection is closed at once, before anything is read from it,
//! counted in `streamgauge_connections_refused_total{reason}` and logged at
//! most once per [`LOG_EVERY`] with the number refused since the last line.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Shortest interval between two log lines about refused connections.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// Why a connection was refused (the `reason` label).
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

#[derive(Debug, Default)]
struct State {
    open: usize,
    per_source: HashMap<IpAddr, usize>,
    /// Refusals not yet logged, and when the last line was written.
    unlogged: u64,
    logged_at: Option<Instant>,
}

/// The server's connection counts and their limits.
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
    /// Limits of `max_total` connections, `max_per_source` per address.
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
    pub fn admit(self: &Arc<Admission>, ip: IpAddr) -> Result<Admitted, Refused> {
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
            if due {
                tracing::warn!(client = %ip, reason = reason.label(), refused = s.unlogged,
                    open = s.open, max_connections = self.max_total,
                    max_per_source = self.max_per_source,
                    "connections refused: limit reached (raise --max-connections or --max-connections-per-source if these clients are legitimate)");
                s.unlogged = 0;
                s.logged_at = Some(Instant::now());
            }
            return Err(reason);
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
        assert_eq!(a.admit(x).unwrap_err(), Refused::PerSource);
        let _y1 = a.admit(y).unwrap();
        assert_eq!(a.admit(y).unwrap_err(), Refused::Total);
        drop(x1);
        assert_eq!(a.open(), 2);
        let _x3 = a.admit(x).unwrap();
        assert_eq!(a.admit(y).unwrap_err(), Refused::Total);
    }
}
