//! `/experiments/{id}/runs` and `/runs/{id}…`: create, start, pause,
//! resume, stop; live status, log and files from the devices.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use httpkit::{ApiError, ApiResult};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::ToSchema;

use super::{access, invalid, not_found, JsonBody, P};
use crate::app::App;
use crate::audit::record;
use crate::auth::caller::Me;
use crate::db::configs;
use crate::db::devices::{self, Kind};
use crate::db::runs::{self, Run, RunEvent};
use crate::devices::{blocking, capture};
use crate::runs::Action;

/// A new run.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewRun {
    /// The configuration to apply.
    pub config: i64,
    /// Capture devices to run it on (default: the configuration's device).
    #[serde(default)]
    pub devices: Option<Vec<i64>>,
}

/// An experiment's runs, newest first.
#[utoipa::path(get, path = "/api/v1/experiments/{id}/runs", responses((status = 200, body = [Run])))]
pub async fn list(State(app): State<Arc<App>>, me: Me, P(id): P<i64>) -> ApiResult<Json<Vec<Run>>> {
    access::experiment(&app, &me, id)?;
    Ok(Json(app.db.with(|c| runs::list(c, id))?))
}

/// Creates a run (state `created`; nothing happens on devices yet).
#[utoipa::path(post, path = "/api/v1/experiments/{id}/runs", request_body = NewRun,
    responses((status = 201, body = Run), (status = 400, description = "invalid_request or invalid_config")))]
pub async fn create(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
    JsonBody(req): JsonBody<NewRun>,
) -> ApiResult<(StatusCode, Json<Run>)> {
    let e = access::experiment(&app, &me, id)?;
    let config = app
        .db
        .with(|c| configs::get(c, req.config))?
        .filter(|c| c.experiment == id)
        .ok_or_else(|| {
            invalid(
                "config",
                format!("experiment {} has no configuration {}", e.name, req.config),
            )
        })?;
    let ids = req.devices.unwrap_or_else(|| vec![config.device]);
    if ids.is_empty() {
        return Err(invalid("devices", "name at least one device"));
    }
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    for d in &unique {
        let dev = app.db.with(|c| devices::get(c, *d))?;
        match dev {
            Some(dev) if matches!(dev.kind, Kind::Capture | Kind::Inline) => {
                let input = configs::ConfigInput {
                    name: config.name.clone(),
                    device: dev.id,
                    storage: config.storage.clone(),
                    session: config.session.clone(),
                    metadata: config.metadata.clone(),
                    version: None,
                    experiment: None,
                    id: None,
                };
                let fields = crate::validate::config(&input, Some(&dev));
                if !fields.is_empty() {
                    return Err(ApiError::bad_request(
                        "invalid_config",
                        format!("the configuration does not suit device {}", dev.name),
                    )
                    .with_details(json!({ "device": dev.id, "fields": fields })));
                }
            }
            Some(dev) => {
                return Err(invalid(
                    "devices",
                    format!(
                        "device {} is not a capture daemon or an in-line agent",
                        dev.name
                    ),
                ))
            }
            None => return Err(invalid("devices", format!("no device {d}"))),
        }
    }
    let (domain, cname) = (e.domain.clone(), config.name.clone());
    let rid = app.db.tx(|c| {
        let rid = runs::create(c, id, config.id, &unique, |r| {
            crate::runs::session_name(&domain, &cname, r)
        })?;
        runs::event(
            c,
            rid,
            &format!(
                "created by {} with configuration {} (version {})",
                me.name(),
                cname,
                config.version
            ),
        )?;
        Ok(rid)
    })?;
    record(
        &app.db,
        me.name(),
        "run.create",
        &format!("run/{rid}"),
        &format!("{} in {} on devices {unique:?}", config.name, e.name),
    );
    let run = app
        .db
        .with(|c| runs::get(c, rid))?
        .ok_or_else(|| not_found("run", rid))?;
    Ok((StatusCode::CREATED, Json(run)))
}

/// A run with its per-device state.
#[utoipa::path(get, path = "/api/v1/runs/{id}", responses((status = 200, body = Run)))]
pub async fn one(State(app): State<Arc<App>>, me: Me, P(id): P<i64>) -> ApiResult<Json<Run>> {
    Ok(Json(access::run(&app, &me, id)?.0))
}

async fn transition(app: Arc<App>, me: Me, id: i64, action: Action) -> ApiResult<Json<Run>> {
    let (run, e) = access::run(&app, &me, id)?;
    let config = app
        .db
        .with(|c| configs::get(c, run.config))?
        .ok_or_else(|| not_found("configuration", run.config))?;
    let after = crate::runs::act(&app, &run, &e, &config, action).await?;
    record(
        &app.db,
        me.name(),
        &format!("run.{}", action.as_str()),
        &format!("run/{id}"),
        &format!("{} -> {}", run.state, after.state),
    );
    Ok(Json(after))
}

/// Creates the sessions on the devices and starts them.
#[utoipa::path(post, path = "/api/v1/runs/{id}/start", responses((status = 200, body = Run)))]
pub async fn start(State(app): State<Arc<App>>, me: Me, P(id): P<i64>) -> ApiResult<Json<Run>> {
    transition(app, me, id, Action::Start).await
}

/// Pauses the running sessions.
#[utoipa::path(post, path = "/api/v1/runs/{id}/pause", responses((status = 200, body = Run)))]
pub async fn pause(State(app): State<Arc<App>>, me: Me, P(id): P<i64>) -> ApiResult<Json<Run>> {
    transition(app, me, id, Action::Pause).await
}

/// Resumes the paused sessions.
#[utoipa::path(post, path = "/api/v1/runs/{id}/resume", responses((status = 200, body = Run)))]
pub async fn resume(State(app): State<Arc<App>>, me: Me, P(id): P<i64>) -> ApiResult<Json<Run>> {
    transition(app, me, id, Action::Resume).await
}

/// Stops every session.
#[utoipa::path(post, path = "/api/v1/runs/{id}/stop", responses((status = 200, body = Run)))]
pub async fn stop(State(app): State<Arc<App>>, me: Me, P(id): P<i64>) -> ApiResult<Json<Run>> {
    transition(app, me, id, Action::Stop).await
}

/// A run's live status.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunStatus {
    /// The run (states as the devices report them now).
    pub run: Run,
    /// Per device: `device`, `session`, `state`, `reason`, `counters`, `error`.
    #[schema(value_type = Vec<Object>)]
    pub devices: Vec<Value>,
}

/// Per-device live counters.
#[utoipa::path(get, path = "/api/v1/runs/{id}/status", responses((status = 200, body = RunStatus)))]
pub async fn status(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
) -> ApiResult<Json<RunStatus>> {
    let (run, _) = access::run(&app, &me, id)?;
    let (run, devices) = crate::runs::status(&app, &run).await?;
    Ok(Json(RunStatus { run, devices }))
}

/// A run's log.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunLog {
    /// The manager's events for the run.
    pub events: Vec<RunEvent>,
    /// Per device: `device`, `session`, `lines` (the session log), `error`.
    #[schema(value_type = Vec<Object>)]
    pub devices: Vec<Value>,
}

/// Per device of a run, the answer of `GET /api/v1/sessions/{s}/{what}`.
async fn from_devices(
    app: &Arc<App>,
    run: &Run,
    what: &'static str,
) -> ApiResult<Vec<(i64, String, Result<Value, String>)>> {
    let mut out = Vec::new();
    for rd in run.devices.iter().filter(|d| d.created_on_device) {
        let Some(d) = app.db.with(|c| devices::get(c, rd.device))? else {
            out.push((rd.device, rd.session.clone(), Err("device deleted".into())));
            continue;
        };
        if d.kind == Kind::Inline {
            continue; // an in-line agent keeps no session log or files
        }
        let ctl = capture::ctl(app, &d);
        let s = rd.session.clone();
        let r = blocking(move || capture::read(&ctl?, &s, what)).await;
        out.push((rd.device, rd.session.clone(), r.map_err(|e| e.to_string())));
    }
    Ok(out)
}

/// Run events and each device's session log.
#[utoipa::path(get, path = "/api/v1/runs/{id}/log", responses((status = 200, body = RunLog)))]
pub async fn log(State(app): State<Arc<App>>, me: Me, P(id): P<i64>) -> ApiResult<Json<RunLog>> {
    let (run, _) = access::run(&app, &me, id)?;
    let events = app.db.with(|c| runs::events(c, id))?;
    let devices = from_devices(&app, &run, "log")
        .await?
        .into_iter()
        .map(|(device, session, r)| match r {
            Ok(v) => {
                json!({"device": device, "session": session, "lines": v["lines"], "error": null})
            }
            Err(e) => json!({"device": device, "session": session, "lines": [], "error": e}),
        })
        .collect();
    Ok(Json(RunLog { events, devices }))
}

/// One file of a run.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunFile {
    /// Device id.
    pub device: i64,
    /// File name.
    pub name: String,
    /// Current size.
    pub bytes: u64,
    /// Last change, Unix seconds.
    pub modified_unix_s: u64,
    /// Download path on the manager.
    pub url: String,
}

/// The files the run's sessions produced, per device.
#[utoipa::path(get, path = "/api/v1/runs/{id}/files", responses((status = 200, body = [RunFile])))]
pub async fn files(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
) -> ApiResult<Json<Vec<RunFile>>> {
    let (run, _) = access::run(&app, &me, id)?;
    let mut out = Vec::new();
    for (device, _, r) in from_devices(&app, &run, "files").await? {
        let v = r.map_err(|e| {
            ApiError::new(
                StatusCode::BAD_GATEWAY,
                "device_unreachable",
                format!("device {device}: {e}"),
            )
        })?;
        for f in v["files"].as_array().into_iter().flatten() {
            let name = f["name"].as_str().unwrap_or_default().to_owned();
            out.push(RunFile {
                device,
                url: format!("/api/v1/runs/{id}/files/{device}/{name}"),
                bytes: f["bytes"].as_u64().unwrap_or(0),
                modified_unix_s: f["modified_unix_s"].as_u64().unwrap_or(0),
                name,
            });
        }
    }
    Ok(Json(out))
}
