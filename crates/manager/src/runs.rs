//! Runs: a saved configuration applied to one or more capture daemons,
//! or to in-line agents.
//!
//! Each capture device of a run goes through the capture session life
//! cycle on that device (created → running ⇄ paused → stopped, or
//! failed). An in-line agent goes through the same states by its
//! settings ([`crate::devices::inline`]): `start` applies the
//! configuration's settings and switches instrumentation on. The
//! manager records a device as `running` only when the device answered
//! that its session runs. A device that does not answer is retried
//! ([`ATTEMPTS`] attempts, waits doubling from the configured back-off)
//! and then marked `failed` with the reason; the others go on, and the
//! run becomes `partial`.

use std::sync::Arc;
use std::time::Duration;

use httpkit::{ApiError, ApiResult};
use serde_json::{json, Value};

use crate::app::App;
use crate::db::configs::Config;
use crate::db::devices::Kind;
use crate::db::experiments::Experiment;
use crate::db::runs::{self, Run, RunDevice};
use crate::db::{devices, Db};
use crate::devices::{blocking, capture, inline, DeviceError};

/// Attempts per device request before it is marked failed.
pub const ATTEMPTS: u32 = 3;

/// A transition asked of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Create the sessions on the devices and start them.
    Start,
    /// Pause running sessions.
    Pause,
    /// Resume paused sessions.
    Resume,
    /// Stop every session.
    Stop,
}

impl Action {
    /// Parses the path segment.
    pub fn parse(s: &str) -> Option<Action> {
        Some(match s {
            "start" => Action::Start,
            "pause" => Action::Pause,
            "resume" => Action::Resume,
            "stop" => Action::Stop,
            _ => return None,
        })
    }

    /// The path segment.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Start => "start",
            Action::Pause => "pause",
            Action::Resume => "resume",
            Action::Stop => "stop",
        }
    }

    /// Whether a device in `state` takes part.
    fn applies_to(self, state: &str) -> bool {
        match self {
            Action::Start => state == "created",
            Action::Pause => state == "running",
            Action::Resume => state == "paused",
            Action::Stop => matches!(state, "created" | "running" | "paused"),
        }
    }
}

/// The session name of a run: `<domain>-<config>-<run>`, reduced to the
/// daemon's alphabet and to 64 characters (the run id is always kept).
pub fn session_name(domain: &str, config: &str, run: i64) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "_.-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let suffix = format!("-{run}");
    let mut head = format!("{}-{}", clean(domain), clean(config));
    head.truncate(64 - suffix.len());
    let name = format!("{}{suffix}", head.trim_start_matches('.'));
    if name.starts_with('-') {
        format!("r{name}")
    } else {
        name
    }
}

/// The run's state from its devices' states.
pub fn overall(devices: &[RunDevice]) -> &'static str {
    let n = devices.len();
    let count = |s: &str| devices.iter().filter(|d| d.state == s).count();
    let failed = count("failed");
    if n == 0 || failed == n {
        return "failed";
    }
    if failed > 0 {
        return "partial";
    }
    if count("running") > 0 {
        "running"
    } else if count("paused") > 0 {
        "paused"
    } else if count("created") == n {
        "created"
    } else {
        "stopped"
    }
}

/// Calls `f` up to [`ATTEMPTS`] times while the device is unreachable.
fn retrying<T>(
    backoff: Duration,
    mut f: impl FnMut() -> Result<T, DeviceError>,
) -> Result<T, DeviceError> {
    // Doubling without a cap: ATTEMPTS keeps it short.
    let mut wait = omsp::backoff::Backoff::new(backoff, Duration::MAX);
    let mut attempt = 1;
    loop {
        match f() {
            Err(DeviceError::Unreachable(why)) if attempt < ATTEMPTS => {
                tracing::info!(attempt, reason = %why, "device unreachable, retrying");
                std::thread::sleep(wait.next_wait());
                attempt += 1;
            }
            Err(DeviceError::Unreachable(why)) => {
                return Err(DeviceError::Unreachable(format!(
                    "{why} ({ATTEMPTS} attempts)"
                )))
            }
            other => return other,
        }
    }
}

/// What happened to one device.
struct Outcome {
    device: i64,
    state: String,
    reason: Option<String>,
    created: bool,
}

/// Applies `action` to every device of the run it concerns; returns the
/// run as stored afterwards.
pub async fn act(
    app: &Arc<App>,
    run: &Run,
    exp: &Experiment,
    config: &Config,
    action: Action,
) -> ApiResult<Run> {
    let mut tasks = tokio::task::JoinSet::new();
    for rd in run.devices.iter().filter(|d| action.applies_to(&d.state)) {
        let device = app.db.with(|c| devices::get(c, rd.device))?;
        let Some(device) = device else {
            tasks.spawn(std::future::ready(Outcome {
                device: rd.device,
                state: "failed".into(),
                reason: Some("the device was deleted".into()),
                created: rd.created_on_device,
            }));
            continue;
        };
        let rd = rd.clone();
        let backoff = app.config.retry_backoff;
        if device.kind == Kind::Inline {
            let client = crate::devices::client(app, &device);
            let settings = config.session.clone();
            let was = rd.created_on_device;
            tasks.spawn(async move {
                if action == Action::Stop && !was {
                    let never = Ok(json!({"state": "stopped", "reason": "never started"}));
                    return outcome(rd.device, &rd.state, action, never, false);
                }
                let answer = blocking(move || {
                    let client = client?;
                    retrying(backoff, || match action {
                        Action::Start => inline::start(&client, &settings),
                        other => inline::action(&client, other.as_str()),
                    })
                })
                .await;
                let applied = was || (action == Action::Start && answer.is_ok());
                outcome(rd.device, &rd.state, action, answer, applied)
            });
            continue;
        }
        let ctl = capture::ctl(app, &device);
        let before = rd.state.clone();
        let domain = exp.domain.clone();
        let archive = config
            .storage
            .target
            .clone()
            .filter(|_| config.storage.kind != "local");
        let session = crate::validate::named_session(&config.session, &rd.session);
        tasks.spawn(async move {
            let (device, created0) = (rd.device, rd.created_on_device);
            let mut created = created0;
            let result = blocking(move || {
                let ctl = ctl?;
                let mut created = created0;
                let answer = retrying(backoff, || {
                    if action == Action::Start && !created {
                        capture::create_or_find(&ctl, &domain, archive.as_deref(), &session)?;
                        created = true;
                    }
                    if action == Action::Stop && !created {
                        return Ok(json!({"state": "stopped", "reason": "never started"}));
                    }
                    capture::action(&ctl, &rd.session, action.as_str())
                });
                Ok((answer, created))
            })
            .await;
            let (answer, was_created) = match result {
                Ok(x) => x,
                Err(e) => (Err(e), created),
            };
            created = was_created;
            outcome(device, &before, action, answer, created)
        });
    }
    let mut outcomes = Vec::new();
    while let Some(o) = tasks.join_next().await {
        outcomes.push(o.map_err(|e| ApiError::internal(format!("device task: {e}")))?);
    }
    record(&app.db, run.id, action.as_str(), &outcomes)
}

/// The outcome of `action` on `device` (in state `before`) from the
/// device's answer. A stop that failed on a device where the session
/// exists (unreachable, or refused other than with 404) keeps the state
/// it had, with the reason: the session may still run there, so it stays
/// something to stop (and experiment deletion does not forget it).
fn outcome(
    device: i64,
    before: &str,
    action: Action,
    answer: Result<Value, DeviceError>,
    created: bool,
) -> Outcome {
    match answer {
        Err(e)
            if action == Action::Stop
                && created
                && !matches!(e, DeviceError::Refused { status: 404, .. }) =>
        {
            Outcome {
                device,
                state: before.to_owned(),
                reason: Some(format!(
                    "stop failed: {e}; the session may still be running on the device"
                )),
                created,
            }
        }
        Ok(v) => Outcome {
            device,
            state: v["state"].as_str().unwrap_or("failed").to_owned(),
            reason: v["reason"].as_str().map(str::to_owned),
            created,
        },
        Err(e) => Outcome {
            device,
            state: "failed".into(),
            reason: Some(format!("{} failed: {e}", action.as_str())),
            created,
        },
    }
}

fn record(db: &Db, run: i64, what: &str, outcomes: &[Outcome]) -> ApiResult<Run> {
    db.tx(|c| {
        for o in outcomes {
            runs::set_device(c, run, o.device, &o.state, o.reason.as_deref(), o.created)?;
            let msg = match &o.reason {
                Some(r) => format!("{what}: device {} {} ({r})", o.device, o.state),
                None => format!("{what}: device {} {}", o.device, o.state),
            };
            runs::event(c, run, &msg)?;
        }
        let now = runs::get(c, run)?.ok_or(crate::db::Error::NoRows)?;
        let state = overall(&now.devices);
        if state != now.state {
            runs::set_state(c, run, state)?;
            runs::event(c, run, &format!("run {state}"))?;
        }
        runs::get(c, run)?.ok_or(crate::db::Error::NoRows)
    })
}

/// Reads every device's session status; states the devices report
/// (e.g. a session that failed on its own) are written back.
pub async fn status(app: &Arc<App>, run: &Run) -> ApiResult<(Run, Vec<Value>)> {
    let mut tasks = tokio::task::JoinSet::new();
    for rd in run.devices.clone() {
        let device = app.db.with(|c| devices::get(c, rd.device))?;
        let app2 = Arc::clone(app);
        tasks.spawn(async move {
            let Some(d) = device.filter(|_| rd.created_on_device) else {
                return (rd.clone(), None, None);
            };
            if d.kind == Kind::Inline {
                // The agent's counters; its state stays the run's (a run
                // that stopped leaves the agent paused).
                let client = crate::devices::client(&app2, &d);
                return match blocking(move || inline::status(&client?)).await {
                    Ok(v) => {
                        let view = json!({"state": rd.state, "reason": rd.reason,
                                          "counters": inline::as_session(&v)[0]["counters"]});
                        (rd, Some(view), None)
                    }
                    Err(e) => (rd, None, Some(e.to_string())),
                };
            }
            let ctl = capture::ctl(&app2, &d);
            let session = rd.session.clone();
            let r = blocking(move || capture::read(&ctl?, &session, "status")).await;
            match r {
                Ok(v) => (rd, Some(v), None),
                Err(e) => (rd, None, Some(e.to_string())),
            }
        });
    }
    let mut rows = Vec::new();
    let mut changed = Vec::new();
    while let Some(j) = tasks.join_next().await {
        let (rd, answer, error) = j.map_err(|e| ApiError::internal(format!("device task: {e}")))?;
        let state = answer
            .as_ref()
            .and_then(|v| v["state"].as_str())
            .unwrap_or(&rd.state)
            .to_owned();
        if answer.is_some() && state != rd.state {
            changed.push(Outcome {
                device: rd.device,
                state: state.clone(),
                reason: answer
                    .as_ref()
                    .and_then(|v| v["reason"].as_str())
                    .map(str::to_owned),
                created: rd.created_on_device,
            });
        }
        rows.push(json!({
            "device": rd.device,
            "session": rd.session,
            "state": state,
            "reason": answer.as_ref().map(|v| v["reason"].clone()).unwrap_or(json!(rd.reason)),
            "counters": answer.as_ref().map(|v| v["counters"].clone()).unwrap_or(Value::Null),
            "error": error,
        }));
    }
    rows.sort_by_key(|r| r["device"].as_i64());
    let run = if changed.is_empty() {
        run.clone()
    } else {
        record(&app.db, run.id, "device reported", &changed)?
    };
    Ok((run, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rd(state: &str) -> RunDevice {
        RunDevice {
            device: 1,
            session: "s".into(),
            state: state.into(),
            reason: None,
            created_on_device: true,
        }
    }

    #[test]
    fn states_and_names() {
        assert_eq!(overall(&[rd("running"), rd("failed")]), "partial");
        assert_eq!(overall(&[rd("failed"), rd("failed")]), "failed");
        assert_eq!(overall(&[rd("running"), rd("paused")]), "running");
        assert_eq!(overall(&[rd("created")]), "created");
        assert_eq!(overall(&[rd("stopped"), rd("created")]), "stopped");
        assert_eq!(
            session_name("wifi_handover", "east http", 21),
            "wifi_handover-east_http-21"
        );
        let long = session_name(&"d".repeat(80), "c", 123456);
        assert!(long.len() <= 64 && long.ends_with("-123456"), "{long}");
    }
}
