//! Commit notifications per domain, for readers that follow a stream live
//! (the query API's tail): each writer bumps its domain's counter after
//! every commit, and a reader waits on a change instead of polling.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::watch;

/// Commit counters by domain.
#[derive(Debug, Default)]
pub struct Commits {
    /// Domain → number of commits seen since the server started. Entries
    /// stay for the server's life (one per domain ever opened or watched).
    domains: Mutex<HashMap<String, watch::Sender<u64>>>,
}

impl Commits {
    /// Called by a writer after a commit of `domain`.
    pub fn bump(&self, domain: &str) {
        let mut map = self.domains.lock().unwrap_or_else(|p| p.into_inner());
        match map.get(domain) {
            Some(tx) => {
                tx.send_modify(|n| *n += 1);
            }
            None => {
                map.insert(domain.to_owned(), watch::Sender::new(1));
            }
        }
    }

    /// A receiver that changes after each commit of `domain`.
    pub fn subscribe(&self, domain: &str) -> watch::Receiver<u64> {
        let mut map = self.domains.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(domain.to_owned())
            .or_insert_with(|| watch::Sender::new(0))
            .subscribe()
    }
}

impl query::CommitFeed for Commits {
    fn subscribe(&self, domain: &str) -> watch::Receiver<u64> {
        Commits::subscribe(self, domain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn subscribers_see_later_commits() {
        let c = Commits::default();
        let mut rx = c.subscribe("d");
        c.bump("d");
        rx.changed().await.unwrap();
        assert_eq!(*rx.borrow_and_update(), 1);
        c.bump("other");
        c.bump("d");
        rx.changed().await.unwrap();
        assert_eq!(*rx.borrow(), 2);
    }
}
