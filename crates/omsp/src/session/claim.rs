//! One live connection per session (feature `claim`): a reconnecting
//! sender's new connection asks the old one to stop, waits until it has
//! handed over what it decoded, and only then serves the session. The
//! server keeps one [`Slot`] per (domain, session id), the proxy one per
//! journal.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Mutex, OwnedMutexGuard};

/// How long a new connection waits for the previous one to finish.
pub const TAKEOVER: Duration = Duration::from_secs(10);

/// A session's slot, held by the connection that serves it.
#[derive(Debug)]
pub struct Slot {
    /// Held for the lifetime of the serving connection.
    busy: Arc<Mutex<()>>,
    /// Bumped by every connection that claims the slot; the holder stops
    /// when the counter moves past its own number (no wake-up can be
    /// missed, however late the holder looks).
    generation: watch::Sender<u64>,
}

impl Default for Slot {
    fn default() -> Slot {
        Slot {
            busy: Arc::default(),
            generation: watch::Sender::new(0),
        }
    }
}

/// Proof that a connection serves its session; released when dropped.
#[derive(Debug)]
pub struct Claim {
    _guard: OwnedMutexGuard<()>,
    /// The slot's generation counter.
    generation: watch::Receiver<u64>,
    /// This connection's number.
    mine: u64,
}

/// The previous connection did not let go within [`TAKEOVER`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the previous connection of this session did not finish within {TAKEOVER:?}")]
pub struct TakeoverTimeout;

impl Slot {
    /// Claims the slot: tells the connection holding it to stop (see
    /// [`Claim::superseded`]) and waits up to [`TAKEOVER`] for it to let go.
    pub async fn claim(&self) -> Result<Claim, TakeoverTimeout> {
        self.claim_within(TAKEOVER).await
    }

    /// [`Slot::claim`] with another wait.
    pub async fn claim_within(&self, wait: Duration) -> Result<Claim, TakeoverTimeout> {
        let mut mine = 0;
        self.generation.send_modify(|g| {
            *g += 1;
            mine = *g;
        });
        let generation = self.generation.subscribe();
        let guard = tokio::time::timeout(wait, Arc::clone(&self.busy).lock_owned())
            .await
            .map_err(|_| TakeoverTimeout)?;
        Ok(Claim {
            _guard: guard,
            generation,
            mine,
        })
    }
}

impl Claim {
    /// Resolves when a newer connection of the same session has claimed it.
    pub async fn superseded(&self) {
        let mut rx = self.generation.clone();
        let mine = self.mine;
        let _ = rx.wait_for(|g| *g != mine).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_newer_claim_supersedes_and_waits_for_the_holder() {
        let slot = Arc::new(Slot::default());
        let first = slot.claim().await.unwrap();
        let s = Arc::clone(&slot);
        let second = tokio::spawn(async move { s.claim().await.map(|_| ()) });
        // The holder learns it is superseded, then lets go.
        first.superseded().await;
        drop(first);
        assert_eq!(second.await.unwrap(), Ok(()));
    }

    #[tokio::test]
    async fn a_holder_that_never_lets_go_times_the_claim_out() {
        let slot = Slot::default();
        let _held = slot.claim().await.unwrap();
        let r = slot.claim_within(Duration::from_millis(50)).await;
        assert_eq!(r.err(), Some(TakeoverTimeout));
    }
}
