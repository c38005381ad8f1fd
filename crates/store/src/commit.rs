//! When a store commits: often enough that rows are visible within a
//! fraction of a second, rarely enough that inserts run in large transactions.

use std::time::{Duration, Instant};

/// Commit thresholds; a writer commits when either is reached, and also
/// whenever it runs out of work (so an idle stream's rows never wait).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitPolicy {
    /// Most rows in one transaction.
    pub max_rows: usize,
    /// Longest time a transaction stays open while rows keep coming.
    pub max_delay: Duration,
}

impl Default for CommitPolicy {
    fn default() -> CommitPolicy {
        CommitPolicy {
            max_rows: 50_000,
            max_delay: Duration::from_millis(100),
        }
    }
}

impl CommitPolicy {
    /// True if a transaction begun at `started` holding `rows` rows should
    /// be committed now; `idle` says the writer has nothing else queued.
    pub fn due(&self, rows: usize, started: Instant, idle: bool) -> bool {
        idle || rows >= self.max_rows || started.elapsed() >= self.max_delay
    }
}
