//! Login rate limiting: after [`MAX_FAILURES`] failed logins for one user
//! name or from one client address within [`WINDOW`], logins are refused
//! (429, even with the right password) until the oldest failure leaves
//! the window. Kept in memory: a restart forgives, which an attacker
//! cannot trigger.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures tolerated per key within the window.
pub const MAX_FAILURES: usize = 5;
/// The window.
pub const WINDOW: Duration = Duration::from_secs(300);

/// Failure times per key (`user:<name>`, `addr:<ip>`).
#[derive(Debug, Default)]
pub struct LoginLimiter {
    /// Recent failures, oldest first.
    failures: Mutex<HashMap<String, VecDeque<Instant>>>,
}

fn keys(username: &str, addr: Option<IpAddr>) -> Vec<String> {
    let mut k = vec![format!("user:{username}")];
    if let Some(a) = addr {
        k.push(format!("addr:{a}"));
    }
    k
}

impl LoginLimiter {
    /// `Err(seconds to wait)` when either key is over the limit.
    pub fn check(&self, username: &str, addr: Option<IpAddr>) -> Result<(), u64> {
        let now = Instant::now();
        let mut map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let mut wait = 0;
        for k in keys(username, addr) {
            if let Some(q) = map.get_mut(&k) {
                while q.front().is_some_and(|t| now.duration_since(*t) >= WINDOW) {
                    q.pop_front();
                }
                if q.len() >= MAX_FAILURES {
                    let oldest = q[q.len() - MAX_FAILURES];
                    let left = WINDOW.saturating_sub(now.duration_since(oldest));
                    wait = wait.max(left.as_secs() + 1);
                }
            }
        }
        if wait > 0 {
            Err(wait)
        } else {
            Ok(())
        }
    }

    /// Records a failed login.
    pub fn failed(&self, username: &str, addr: Option<IpAddr>) {
        let now = Instant::now();
        let mut map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() > 100_000 {
            // Bounded memory under a flood of distinct names: drop the stale.
            map.retain(|_, q| q.back().is_some_and(|t| now.duration_since(*t) < WINDOW));
        }
        for k in keys(username, addr) {
            map.entry(k).or_default().push_back(now);
        }
    }

    /// A successful login forgives that user name's failures.
    pub fn succeeded(&self, username: &str) {
        let mut map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(&format!("user:{username}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_failures_lock_the_name_and_the_address() {
        let l = LoginLimiter::default();
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        for _ in 0..MAX_FAILURES {
            assert!(l.check("alice", Some(a)).is_ok());
            l.failed("alice", Some(a));
        }
        let wait = l.check("alice", None).unwrap_err();
        assert!(wait > 0 && wait <= 301, "{wait}");
        assert!(l.check("bob", Some(a)).is_err(), "same address");
        assert!(l.check("bob", None).is_ok());
    }
}
