//! The monitor: every `--monitor-interval` it polls every device
//! (capabilities, and a capture daemon's sessions with their counters),
//! stores a snapshot, sets the device's status, and raises or clears
//! alerts:
//!
//! - `down`: the device did not answer; cleared when it answers again;
//! - `dropping`: a running session's `dropped_kernel` or `dropped_by_us`
//!   grew since the previous poll; cleared at the first poll where none
//!   grew.
//!
//! With `--monitor-collect` each snapshot is also a row of the
//! measurement stream `manager_monitor` ([`stream`]).

pub mod stream;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::app::App;
use crate::db::devices::{self, Device};
use crate::db::monitor::{self as store, Snapshot};
use crate::devices::{probe, Probe};

/// Ends the monitor task.
pub struct MonitorHandle {
    /// Tells the loop to stop.
    stop: tokio::sync::watch::Sender<bool>,
    /// The loop.
    task: tokio::task::JoinHandle<()>,
}

impl MonitorHandle {
    /// Stops polling and flushes the monitoring stream.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// What the monitor remembers between polls.
#[derive(Default)]
pub struct MonitorState {
    /// Drops (`dropped_kernel + dropped_by_us`) per (device, session) at
    /// the previous poll.
    drops: HashMap<(i64, String), (u64, u64)>,
    /// The `manager_monitor` stream, when configured.
    stream: Option<stream::MonitorStream>,
}

/// Starts the polling loop.
pub fn spawn(app: Arc<App>) -> MonitorHandle {
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(async move {
        let mut state = MonitorState {
            stream: app
                .config
                .monitor_collect
                .as_deref()
                .and_then(|c| stream::MonitorStream::new(c, &app.config.monitor_domain)),
            ..MonitorState::default()
        };
        loop {
            poll_all(&app, &mut state).await;
            tokio::select! {
                _ = tokio::time::sleep(app.config.monitor_interval) => {}
                _ = stopped.changed() => break,
            }
        }
        if let Some(s) = state.stream.take() {
            let _ = tokio::task::spawn_blocking(move || s.close()).await;
        }
    });
    MonitorHandle { stop, task }
}

/// Polls every device once (concurrently) and records what it found.
pub async fn poll_all(app: &Arc<App>, state: &mut MonitorState) {
    let _ = app.db.with(crate::auth::sessions::purge);
    let list = match app.db.with(devices::list) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e.message, "monitor: devices not listed");
            return;
        }
    };
    let mut tasks = tokio::task::JoinSet::new();
    for d in list {
        let app = Arc::clone(app);
        tasks.spawn(async move {
            let r = probe(&app, &d).await;
            (d, r)
        });
    }
    while let Some(Ok((d, r))) = tasks.join_next().await {
        record(app, state, &d, r);
    }
}

fn record(
    app: &App,
    state: &mut MonitorState,
    d: &Device,
    r: Result<Probe, crate::devices::DeviceError>,
) {
    let now = crate::now_s();
    let (snap, sessions, drops) = match r {
        Ok(p) => {
            let _ = app
                .db
                .with(|c| devices::set_seen(c, d.id, "up", Some(&p.capabilities)));
            let _ = app.db.with(|c| store::clear(c, d.id, "down"));
            let sessions = p.sessions.clone().unwrap_or(Value::Array(vec![]));
            let drops = dropping(app, state, d, &sessions);
            let summary: Vec<Value> = sessions
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|s| json!({"id": s["id"], "experiment": s["experiment"], "state": s["state"], "counters": s["counters"]}))
                        .collect()
                })
                .unwrap_or_default();
            let snap = Snapshot {
                device: d.id,
                time_unix_s: now,
                status: "up".into(),
                latency_ms: Some(p.latency_ms),
                data: json!({ "sessions": summary }),
            };
            (snap, summary.len() as u64, drops)
        }
        Err(e) => {
            let _ = app.db.with(|c| devices::set_seen(c, d.id, "down", None));
            let msg = format!("device {} does not answer: {e}", d.name);
            if let Ok(true) = app.db.with(|c| store::raise(c, d.id, "down", &msg)) {
                tracing::warn!(device = %d.name, error = %e, "device down");
            }
            let snap = Snapshot {
                device: d.id,
                time_unix_s: now,
                status: "down".into(),
                latency_ms: None,
                data: json!({ "error": e.to_string() }),
            };
            (snap, 0, (0, 0))
        }
    };
    let _ = app.db.with(|c| store::insert(c, &snap));
    if let Some(s) = &state.stream {
        s.send(stream::Row {
            device: d.name.clone(),
            kind: d.kind.as_str().into(),
            status: snap.status.clone(),
            latency_ms: snap.latency_ms.unwrap_or(f64::NAN),
            sessions,
            dropped_kernel: drops.0,
            dropped_by_us: drops.1,
        });
    }
}

/// Raises or clears the device's `dropping` alert from its sessions'
/// drop counters. Returns the device's total drops.
fn dropping(app: &App, state: &mut MonitorState, d: &Device, sessions: &Value) -> (u64, u64) {
    let (grew, total) = drops_grown(&mut state.drops, d.id, sessions);
    if grew.is_empty() {
        let _ = app.db.with(|c| store::clear(c, d.id, "dropping"));
    } else {
        let msg = format!("device {} is dropping packets: {}", d.name, grew.join("; "));
        let _ = app.db.with(|c| store::raise(c, d.id, "dropping", &msg));
    }
    total
}

/// Updates the remembered drop counters of a device's sessions; returns
/// what grew on running sessions since the previous poll, and the totals.
fn drops_grown(
    drops: &mut HashMap<(i64, String), (u64, u64)>,
    device: i64,
    sessions: &Value,
) -> (Vec<String>, (u64, u64)) {
    let mut grew = Vec::new();
    let mut total = (0, 0);
    for s in sessions.as_array().into_iter().flatten() {
        let id = s["id"].as_str().unwrap_or_default().to_owned();
        let k = s["counters"]["dropped_kernel"].as_u64().unwrap_or(0);
        let u = s["counters"]["dropped_by_us"].as_u64().unwrap_or(0);
        total = (total.0 + k, total.1 + u);
        let before = drops.insert((device, id.clone()), (k, u));
        if s["state"] == "running" {
            if let Some((k0, u0)) = before {
                if k > k0 || u > u0 {
                    grew.push(format!(
                        "session {id}: dropped_kernel +{}, dropped_by_us +{}",
                        k.saturating_sub(k0),
                        u.saturating_sub(u0)
                    ));
                }
            }
        }
    }
    (grew, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn poll(state: &str, k: u64, u: u64) -> Value {
        json!([{"id": "s1", "state": state, "counters": {"dropped_kernel": k, "dropped_by_us": u}}])
    }

    #[test]
    fn dropping_is_growth_on_running_sessions() {
        let mut m = HashMap::new();
        assert!(
            drops_grown(&mut m, 1, &poll("running", 5, 0)).0.is_empty(),
            "first poll: no baseline"
        );
        assert!(
            drops_grown(&mut m, 1, &poll("running", 5, 0)).0.is_empty(),
            "no growth"
        );
        let (grew, total) = drops_grown(&mut m, 1, &poll("running", 9, 2));
        assert_eq!(grew, ["session s1: dropped_kernel +4, dropped_by_us +2"]);
        assert_eq!(total, (9, 2));
        assert!(
            drops_grown(&mut m, 1, &poll("stopped", 12, 2)).0.is_empty(),
            "not running"
        );
        assert!(
            drops_grown(&mut m, 2, &poll("running", 100, 0))
                .0
                .is_empty(),
            "another device"
        );
    }
}
