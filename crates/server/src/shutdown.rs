//! Shutdown signalling: one sender, many listeners.

use tokio::sync::watch;

/// Tells tasks that the server is shutting down.
#[derive(Debug, Clone)]
pub struct Shutdown {
    /// Flips to `true` once, at shutdown.
    rx: watch::Receiver<bool>,
}

impl Shutdown {
    /// A trigger and its first listener.
    pub fn new() -> (watch::Sender<bool>, Shutdown) {
        let (tx, rx) = watch::channel(false);
        (tx, Shutdown { rx })
    }

    /// True once shutdown has been requested.
    pub fn is_requested(&self) -> bool {
        *self.rx.borrow()
    }

    /// Waits until shutdown is requested (or its trigger is gone).
    pub async fn requested(&mut self) {
        let _ = self.rx.wait_for(|&v| v).await;
    }
}
