//! The cap on live tails open at once.
//!
//! Every tail holds a database connection of its own (to catch up), a
//! task, and a shared reader with its own connection unless another client
//! follows the same request. Without a cap, a few hundred tails with
//! distinct filters exhaust the process's descriptors and memory, and with
//! them ingestion. Beyond the cap a tail is refused with 503 and
//! `Retry-After` before anything is opened; a tail's slot is given back
//! when its client goes away (noticed within about two heartbeats).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::auth::ApiError;

/// Seconds a refused client is asked to wait: about as long as an
/// abandoned tail takes to be noticed and freed.
const RETRY_AFTER_SECS: u64 = 2;

/// Tails open now, counted against [`crate::QueryState::max_tails`].
#[derive(Default)]
pub struct Slots {
    /// Slots held.
    held: AtomicUsize,
}

/// One open tail's slot; given back when dropped (when the tail's task
/// ends, however it ends).
pub struct Slot(Arc<Slots>);

impl Slots {
    /// A slot if fewer than `max` are held.
    pub fn admit(self: &Arc<Self>, max: usize) -> Option<Slot> {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()?;
        Some(Slot(Arc::clone(self)))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.held.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The answer beyond the cap: 503 `too_many_tails` with `Retry-After`.
pub fn refused(max: usize) -> Response {
    let mut r = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "too_many_tails",
        format!(
            "{max} live tails are open, the most this server allows: retry in \
             {RETRY_AFTER_SECS} s, close tails you no longer read, share one request \
             between viewers, or raise the server's limit"
        ),
    )
    .with_details(json!({ "max_tails": max }))
    .into_response();
    r.headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_capped_and_given_back_on_drop() {
        let s = Arc::new(Slots::default());
        let a = s.admit(2).unwrap();
        let _b = s.admit(2).unwrap();
        assert!(s.admit(2).is_none());
        drop(a);
        let _c = s.admit(2).unwrap();
        assert!(s.admit(2).is_none());
        assert!(s.admit(0).is_none());
    }
}
