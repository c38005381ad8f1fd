//! Evaluates the feedback rules over every peer, twice a second, and sends
//! a rule's `action` when its condition starts holding (after `for`
//! seconds) and its `restore` when it stops (below `below`: hysteresis).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Condition, Feedback, Peer, Rule};
use crate::shutdown::Shutdown;

/// Evaluation period.
pub const TICK: Duration = Duration::from_millis(500);

/// One rule's state for one peer.
#[derive(Debug, Default)]
struct State {
    /// The action was sent and the restore not yet.
    active: bool,
    /// Since when the condition holds (not yet acted on).
    since: Option<Instant>,
}

/// Rows seen at the previous tick, for rates.
#[derive(Debug)]
struct Rate {
    rows: u64,
    at: Instant,
    per_s: f64,
}

/// Runs until shutdown.
pub async fn run(hub: Arc<Feedback>, mut shutdown: Shutdown) {
    let mut states: HashMap<(usize, u64), State> = HashMap::new();
    let mut rates: HashMap<u64, Rate> = HashMap::new();
    let mut rules = hub.rules();
    let mut ticker = tokio::time::interval(TICK);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            () = shutdown.requested() => return,
        }
        let now = Instant::now();
        let current = hub.rules();
        if !Arc::ptr_eq(&current, &rules) {
            rules = current;
            states.clear();
        }
        let peers = hub.snapshot();
        rates.retain(|id, _| peers.iter().any(|(p, _)| p == id));
        states.retain(|(_, id), _| peers.iter().any(|(p, _)| p == id));
        for (id, peer) in &peers {
            let rows = peer.rows.load(Ordering::Relaxed);
            let rate = rates.entry(*id).or_insert(Rate {
                rows,
                at: now,
                per_s: 0.0,
            });
            let dt = now.duration_since(rate.at).as_secs_f64();
            if dt > 0.0 {
                rate.per_s = rows.saturating_sub(rate.rows) as f64 / dt;
                rate.rows = rows;
                rate.at = now;
            }
            for (r, rule) in rules.iter().enumerate() {
                if !applies(rule, peer) {
                    continue;
                }
                let value = measure(rule, peer, rate.per_s);
                let state = states.entry((r, *id)).or_default();
                step(rule, peer, state, value, now);
            }
        }
    }
}

fn applies(rule: &Rule, peer: &Peer) -> bool {
    rule.domain.as_ref().is_none_or(|d| *d == peer.domain)
        && rule.sender.as_ref().is_none_or(|s| *s == peer.sender)
}

fn measure(rule: &Rule, peer: &Peer, rate: f64) -> Option<f64> {
    match &rule.when {
        Condition::SenderRate => Some(rate),
        Condition::Backlog => Some(peer.metrics.backlog() as f64),
        Condition::Field { stream, field } => peer.field(stream, field),
    }
}

/// One evaluation of one rule for one peer.
fn step(rule: &Rule, peer: &Peer, state: &mut State, value: Option<f64>, now: Instant) {
    let Some(value) = value else { return };
    if !state.active {
        if value > rule.above {
            let since = *state.since.get_or_insert(now);
            if now.duration_since(since).as_secs_f64() >= rule.hold {
                tracing::info!(rule = %rule.name, domain = %peer.domain, sender = %peer.sender,
                    value, "feedback rule holds");
                match peer.send(&rule.action) {
                    Ok(_) => {
                        state.active = true;
                        state.since = None;
                    }
                    Err(e) => {
                        tracing::warn!(rule = %rule.name, error = %e, "feedback action not sent")
                    }
                }
            }
        } else {
            state.since = None;
        }
    } else if value < rule.below {
        tracing::info!(rule = %rule.name, domain = %peer.domain, sender = %peer.sender,
            value, "feedback rule no longer holds");
        state.active = false;
        if let Some(restore) = &rule.restore {
            if let Err(e) = peer.send(restore) {
                tracing::warn!(rule = %rule.name, error = %e, "feedback restore not sent");
            }
        }
    }
}
