//! Retry logging per target and per outage.
//!
//! When a target goes down, every queued file fails and retries; a line per
//! file and retry grows with the backlog (16 lines/s after 10 s, as measured)
//! and hides what happened. Instead each target logs one line when its
//! first attempt fails (the start of an outage, with the reason) and one
//! when an attempt succeeds again (the end, with how long and how many
//! attempts failed meanwhile); the attempts in between are logged at debug.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// An outage in progress on one target.
struct Outage {
    /// When the first attempt failed.
    since: Instant,
    /// Failed attempts since then.
    failed: u64,
    /// Reason of the latest failure, shown when the outage ends.
    last_error: String,
}

/// Outages by target name.
#[derive(Default)]
pub(crate) struct Outages(Mutex<HashMap<String, Outage>>);

impl Outages {
    /// Records a failed attempt; logs only when it starts an outage.
    pub(crate) fn failed(&self, target: &str, error: &str, retry_in: Duration) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match map.get_mut(target) {
            Some(o) => {
                o.failed += 1;
                o.last_error = error.to_string();
                tracing::debug!(target = %target, %error, failed = o.failed, "archive attempt failed (outage continues)");
            }
            None => {
                tracing::warn!(target = %target, %error, retry_in_ms = retry_in.as_millis() as u64,
                    "archive target failing: uploads are retried with back-off; one line is logged when it recovers");
                map.insert(
                    target.to_string(),
                    Outage {
                        since: Instant::now(),
                        failed: 1,
                        last_error: error.to_string(),
                    },
                );
            }
        }
    }

    /// Records a successful attempt; logs the end of an outage.
    pub(crate) fn succeeded(&self, target: &str) {
        let ended = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(target);
        if let Some(o) = ended {
            tracing::info!(target = %target, failed_attempts = o.failed,
                outage_secs = o.since.elapsed().as_secs_f64(), last_error = %o.last_error,
                "archive target back: uploads resume");
        }
    }

    /// Failed attempts of the outage in progress on `target` (0 if none).
    #[cfg(test)]
    fn failed_attempts(&self, target: &str) -> u64 {
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.get(target).map_or(0, |o| o.failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_outage_per_target_counts_its_failures() {
        let o = Outages::default();
        for _ in 0..5 {
            o.failed("s3", "connection refused", Duration::from_secs(1));
        }
        o.failed("sftp", "timeout", Duration::from_secs(1));
        assert_eq!((o.failed_attempts("s3"), o.failed_attempts("sftp")), (5, 1));
        o.succeeded("s3");
        assert_eq!((o.failed_attempts("s3"), o.failed_attempts("sftp")), (0, 1));
        o.failed("s3", "refused", Duration::from_secs(1));
        assert_eq!(o.failed_attempts("s3"), 1, "a new outage");
    }
}
