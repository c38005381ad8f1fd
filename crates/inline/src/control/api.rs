//! The control API handlers: thin — authorise, read or change the
//! program's maps through [`Shared`], answer JSON.

use std::sync::Arc;

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use httpkit::{ApiError, ApiResult, Caller};
use serde_json::{json, Map, Value};
use utoipa::OpenApi;

use super::views::{Capabilities, KeyView, Status};
use super::{patch, Shared};
use crate::settings::{Settings, KEYS};

type Sh = State<Arc<Shared>>;

/// The control API routes (wrap with `httpkit::HttpConfig::apply`).
pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/api/v1/capabilities", get(capabilities))
        .route("/api/v1/status", get(status))
        .route(
            "/api/v1/settings",
            get(settings).patch(patch_settings).put(put_settings),
        )
        .route("/api/v1/pause", post(pause))
        .route("/api/v1/resume", post(resume))
        .route("/api/v1/openapi.json", get(openapi))
        .with_state(shared)
}

/// Reads need a read grant on something (or control); the agent has no
/// per-domain data of its own to guard.
fn require_read(caller: &Caller) -> ApiResult<()> {
    if caller.may_control() {
        return Ok(());
    }
    caller.require_read_any()
}

fn device(e: crate::error::ProgramError) -> ApiError {
    ApiError::internal(format!("the program's maps: {e}"))
}

#[utoipa::path(get, path = "/api/v1/capabilities", responses((status = 200, body = Capabilities)))]
async fn capabilities(caller: Caller, State(sh): Sh) -> ApiResult<Json<Capabilities>> {
    require_read(&caller)?;
    let keys = KEYS
        .iter()
        .map(|(k, h)| KeyView {
            key: (*k).to_owned(),
            help: (*h).to_owned(),
            used: patch::used_by(sh.role, k),
        })
        .collect();
    let counters = crate::Counters::default()
        .named(sh.role)
        .into_iter()
        .map(|(n, _)| n.to_owned())
        .collect();
    let streams = match (&sh.info.domain, sh.role) {
        (None, _) => vec![],
        (Some(_), crate::Role::Source) => vec!["inline_inline_counters".into()],
        (Some(_), crate::Role::Sink) => [
            "inline_inline_delay",
            "inline_inline_loss",
            "inline_inline_flow",
            "inline_inline_counters",
        ]
        .map(String::from)
        .to_vec(),
    };
    Ok(Json(Capabilities {
        agent: "inline".into(),
        roles: vec![super::role_name(sh.role).into()],
        interface: sh.info.interface.clone(),
        netns: sh.info.netns.clone(),
        keys,
        modes: ["delay", "loss", "both", "pdm", "compact"]
            .map(String::from)
            .to_vec(),
        counters,
        domain: sh.info.domain.clone(),
        streams,
    }))
}

#[utoipa::path(get, path = "/api/v1/status", responses((status = 200, body = Status)))]
async fn status(caller: Caller, State(sh): Sh) -> ApiResult<Json<Status>> {
    require_read(&caller)?;
    Ok(Json(sh.status().map_err(device)?))
}

#[utoipa::path(get, path = "/api/v1/settings",
    responses((status = 200, description = "The settings, text forms by key")))]
async fn settings(caller: Caller, State(sh): Sh) -> ApiResult<Json<Map<String, Value>>> {
    require_read(&caller)?;
    Ok(Json(patch::to_json(&sh.settings().map_err(device)?)))
}

/// The body of a settings change: a JSON object.
fn object(body: &str) -> ApiResult<Map<String, Value>> {
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::bad_request(
            "invalid_body",
            "send a JSON object of settings, e.g. {\"sample\": 10, \"proto\": \"udp\"}",
        )),
        Err(e) => Err(ApiError::bad_request(
            "invalid_body",
            format!("the body is not JSON: {e}"),
        )),
    }
}

/// Applies `changes` over `base` to the live program (400 naming every bad field).
fn change(sh: &Shared, from_defaults: bool, body: &str) -> ApiResult<Json<Map<String, Value>>> {
    let changes = object(body)?;
    let next = sh
        .update(|current| {
            let base = if from_defaults {
                Settings::default()
            } else {
                current.clone()
            };
            patch::apply(&base, &changes)
        })
        .map_err(device)?
        .map_err(|fields| {
            let list: Vec<&String> = fields.keys().collect();
            ApiError::bad_request(
                "invalid_settings",
                format!("invalid settings {list:?}: nothing was changed; see details.fields"),
            )
            .with_details(json!({ "fields": fields }))
        })?;
    let changes = Value::Object(changes);
    tracing::info!(%changes, "settings changed over the control API");
    Ok(Json(patch::to_json(&next)))
}

#[utoipa::path(patch, path = "/api/v1/settings",
    request_body(content = Object, description = "Keys to change, e.g. {\"sample\": 10}"),
    responses((status = 200, description = "The settings now in force"), (status = 400)))]
async fn patch_settings(
    caller: Caller,
    State(sh): Sh,
    body: String,
) -> ApiResult<Json<Map<String, Value>>> {
    caller.require_control()?;
    change(&sh, false, &body)
}

#[utoipa::path(put, path = "/api/v1/settings",
    request_body(content = Object, description = "Every key to set; the others take their defaults"),
    responses((status = 200, description = "The settings now in force"), (status = 400)))]
async fn put_settings(
    caller: Caller,
    State(sh): Sh,
    body: String,
) -> ApiResult<Json<Map<String, Value>>> {
    caller.require_control()?;
    change(&sh, true, &body)
}

/// Sets `enabled` and answers the status.
fn enable(sh: &Shared, on: bool) -> ApiResult<Json<Status>> {
    let Ok(_) = sh
        .update(|current| {
            let mut s = current.clone();
            s.enabled = on;
            Ok::<_, std::convert::Infallible>(s)
        })
        .map_err(device)?;
    Ok(Json(sh.status().map_err(device)?))
}

#[utoipa::path(post, path = "/api/v1/pause", request_body(content = Object, description = "{}"),
    responses((status = 200, body = Status)))]
async fn pause(caller: Caller, State(sh): Sh, _body: axum::body::Bytes) -> ApiResult<Json<Status>> {
    caller.require_control()?;
    enable(&sh, false)
}

#[utoipa::path(post, path = "/api/v1/resume", request_body(content = Object, description = "{}"),
    responses((status = 200, body = Status)))]
async fn resume(
    caller: Caller,
    State(sh): Sh,
    _body: axum::body::Bytes,
) -> ApiResult<Json<Status>> {
    caller.require_control()?;
    enable(&sh, true)
}

/// The API description.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "streamgauge in-line agent control API",
        description = "Read the agent's state and counters; change its settings at run time. See spec/inline-control.md."
    ),
    paths(
        capabilities,
        status,
        settings,
        patch_settings,
        put_settings,
        pause,
        resume
    ),
    components(schemas(Capabilities, KeyView, Status, super::views::AgentCountersView))
)]
struct ApiDoc;

async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
