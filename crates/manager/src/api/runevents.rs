//! `GET /runs/{id}/events`: what the run page draws over its plots — the
//! run's start, pause, resume and stop (from its event log) and its
//! devices going down and coming back (from the monitor's `down`
//! alerts), with each device's state now. Devices are shared, and their
//! up/down state is shown to every user; the alerts' messages are not
//! repeated here.

use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use httpkit::ApiResult;
use serde::Serialize;
use utoipa::ToSchema;

use super::{access, P};
use crate::app::App;
use crate::auth::caller::Me;
use crate::db::runs::RunEvent;
use crate::db::{devices, monitor, runs};
use crate::runs::Action;

/// Events of one action closer than this (seconds) are one event: a run
/// on several devices logs one line per device.
const SAME_ACTION_S: f64 = 2.0;

/// One event of a run, as plots draw it.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct PlotEvent {
    /// When, Unix seconds.
    pub time_unix_s: f64,
    /// `start`, `pause`, `resume`, `stop`, `device_down` or `device_up`.
    pub kind: String,
    /// The device, for `device_down` and `device_up`.
    pub device: Option<i64>,
    /// The log line (run events) or the device's name.
    pub message: String,
}

/// A device of the run and its state now.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeviceState {
    /// Device id.
    pub device: i64,
    /// Its name.
    pub name: String,
    /// `up`, `down` or `unknown` (the monitor's last poll).
    pub status: String,
    /// Since when it is down (its open `down` alert), Unix seconds.
    pub down_since_unix_s: Option<i64>,
}

/// The run's events for plots.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunEvents {
    /// The run's first start, Unix seconds (times relative to the run
    /// count from here); null before it started.
    pub start_unix_s: Option<f64>,
    /// Oldest first.
    pub events: Vec<PlotEvent>,
    /// The run's devices.
    pub devices: Vec<DeviceState>,
}

/// The action a run log line records (`start: device 3 running`).
fn action_of(message: &str) -> Option<Action> {
    let (head, _) = message.split_once(": device ")?;
    Action::parse(head)
}

/// One event per action (the per-device lines of one action merged).
fn run_events(log: &[RunEvent]) -> Vec<PlotEvent> {
    let mut out: Vec<PlotEvent> = Vec::new();
    for e in log {
        let Some(a) = action_of(&e.message) else {
            continue;
        };
        if let Some(last) = out.last_mut() {
            if last.kind == a.as_str() && e.time_unix_s - last.time_unix_s < SAME_ACTION_S {
                last.message = format!("{}; {}", last.message, e.message);
                continue;
            }
        }
        out.push(PlotEvent {
            time_unix_s: e.time_unix_s,
            kind: a.as_str().to_owned(),
            device: None,
            message: e.message.clone(),
        });
    }
    out
}

/// Run events and device down/up times, for the run's plots.
#[utoipa::path(get, path = "/api/v1/runs/{id}/events", responses((status = 200, body = RunEvents)))]
pub async fn events(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
) -> ApiResult<Json<RunEvents>> {
    let (run, _) = access::run(&app, &me, id)?;
    let log = app.db.with(|c| runs::events(c, id))?;
    let mut events = run_events(&log);
    let start_unix_s = events
        .iter()
        .find(|e| e.kind == "start")
        .map(|e| e.time_unix_s);
    let mut states = Vec::new();
    for rd in &run.devices {
        let (d, periods) = app.db.with(|c| {
            Ok((
                devices::get(c, rd.device)?,
                monitor::down_periods(c, rd.device, run.created_unix_s)?,
            ))
        })?;
        let name = d
            .as_ref()
            .map_or_else(|| format!("device {}", rd.device), |d| d.name.clone());
        let mut open = None;
        for (since, cleared) in periods {
            if since >= run.created_unix_s {
                events.push(PlotEvent {
                    time_unix_s: since as f64,
                    kind: "device_down".into(),
                    device: Some(rd.device),
                    message: format!("{name} down"),
                });
            }
            match cleared {
                Some(t) => events.push(PlotEvent {
                    time_unix_s: t as f64,
                    kind: "device_up".into(),
                    device: Some(rd.device),
                    message: format!("{name} up"),
                }),
                None => open = Some(since),
            }
        }
        states.push(DeviceState {
            device: rd.device,
            status: d.map_or_else(|| "unknown".into(), |d| d.status),
            name,
            down_since_unix_s: open,
        });
    }
    events.sort_by(|a, b| a.time_unix_s.total_cmp(&b.time_unix_s));
    Ok(Json(RunEvents {
        start_unix_s,
        events,
        devices: states,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(t: f64, m: &str) -> RunEvent {
        RunEvent {
            time_unix_s: t,
            message: m.into(),
        }
    }

    #[test]
    fn one_event_per_action_whatever_the_devices() {
        let log = [
            ev(1.0, "created by alice with configuration c (version 1)"),
            ev(10.0, "start: device 1 running"),
            ev(10.1, "start: device 2 running"),
            ev(10.1, "run running"),
            ev(20.0, "pause: device 1 paused"),
            ev(30.0, "resume: device 1 failed (resume failed: gone)"),
            ev(40.0, "stop: device 1 stopped"),
            ev(45.0, "stop: device 1 stopped"),
        ];
        let got: Vec<(f64, String)> = run_events(&log)
            .into_iter()
            .map(|e| (e.time_unix_s, e.kind))
            .collect();
        let want = [
            (10.0, "start"),
            (20.0, "pause"),
            (30.0, "resume"),
            (40.0, "stop"),
            (45.0, "stop"),
        ];
        assert_eq!(
            got,
            want.map(|(t, k)| (t, k.to_owned())).to_vec(),
            "{log:?}"
        );
        assert!(run_events(&log)[0].message.contains("device 2"));
    }
}
