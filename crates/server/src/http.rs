//! The server's HTTP endpoints, on the project's one stack ([`httpkit`]).
//!
//! - `GET /metrics`: Prometheus text (any caller that may read something).
//! - `GET /feedback`: feedback peers and rules, JSON (same).
//! - `POST /control/{domain}/{sender}` with a JSON control message (spec
//!   §3.7): sends it to that sender; answers `{"ids":[…]}`, or 404 when no
//!   such sender accepts control messages. Needs the `control` grant: a
//!   token with that scope, or a loopback caller when there is no token
//!   file. Like every state-changing request it must be sent as JSON.
//! - `/api/v1/…`: the query API, when the server was given one
//!   ([`HttpParts::api`]).
//!
//! The same router is served on `--metrics` and `--http`.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use httpkit::{ApiError, ApiResult, Caller};

use crate::feedback::Feedback;
use crate::metrics::{render, Metrics};

/// What the endpoints read.
#[derive(Clone)]
struct Parts {
    /// Counters for `/metrics`.
    metrics: Arc<Metrics>,
    /// Peers and rules for `/feedback` and `/control`.
    feedback: Arc<Feedback>,
}

/// Builds the router (without the shared layers, which the caller applies).
pub fn router(metrics: Arc<Metrics>, feedback: Arc<Feedback>, api: Option<Router>) -> Router {
    let own = Router::new()
        .route("/metrics", get(metrics_text))
        .route("/feedback", get(feedback_status))
        .route("/control/{domain}/{sender}", post(control))
        .with_state(Parts { metrics, feedback });
    match api {
        Some(api) => own.merge(api),
        None => own,
    }
}

async fn metrics_text(caller: Caller, State(p): State<Parts>) -> ApiResult<impl IntoResponse> {
    caller.require_read_any()?;
    Ok((
        [(CONTENT_TYPE, crate::metrics::CONTENT_TYPE)],
        render(&p.metrics),
    ))
}

async fn feedback_status(
    caller: Caller,
    State(p): State<Parts>,
) -> ApiResult<Json<serde_json::Value>> {
    caller.require_read_any()?;
    Ok(Json(p.feedback.status()))
}

async fn control(
    caller: Caller,
    State(p): State<Parts>,
    Path((domain, sender)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> ApiResult<Json<serde_json::Value>> {
    caller.require_control()?;
    let message: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request("bad_json", format!("the body is not JSON: {e}")))?;
    crate::feedback::rules::check_message(&message)
        .map_err(|e| ApiError::bad_request("bad_control_message", e))?;
    match p.feedback.send(&domain, &sender, &message) {
        Ok(ids) => Ok(Json(serde_json::json!({ "ids": ids }))),
        Err(e) => Err(ApiError::not_found("no_such_sender", e)),
    }
}
