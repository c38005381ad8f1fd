//! The control API handlers: thin — parse and authorise, call [`Shared`]'s
//! operations, map [`OpError`] to JSON errors with stable codes.

use super::ops::OpError;
use super::registry::Record;
use super::views::*;
use super::{metrics, sysnet, Shared};
use crate::config::SessionConfig;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use httpkit::{ApiError, ApiResult, Caller};
use std::sync::Arc;

type Sh = State<Arc<Shared>>;

/// The request body of an action (`{}`), read to the end and ignored: a
/// body left unread makes the server close the connection, which a client
/// reusing it for its next request sees as a dropped connection.
type Drained = axum::body::Bytes;

/// The control API routes (wrap with `httpkit::HttpConfig::apply`).
pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/api/v1/capabilities", get(capabilities))
        .route("/api/v1/sessions", get(list).post(create))
        .route("/api/v1/sessions/{id}", get(one).delete(delete))
        .route("/api/v1/sessions/{id}/start", post(start))
        .route("/api/v1/sessions/{id}/pause", post(pause))
        .route("/api/v1/sessions/{id}/resume", post(resume))
        .route("/api/v1/sessions/{id}/stop", post(stop))
        .route("/api/v1/sessions/{id}/status", get(status))
        .route("/api/v1/sessions/{id}/log", get(log))
        .route("/api/v1/sessions/{id}/files", get(files))
        .route("/api/v1/sessions/{id}/files/{name}", get(download))
        .route("/api/v1/openapi.json", get(openapi))
        .route("/metrics", get(metrics_text))
        .with_state(shared)
}

impl From<OpError> for ApiError {
    fn from(e: OpError) -> ApiError {
        let m = e.to_string();
        match e {
            OpError::NotFound(_) => ApiError::not_found("unknown_session", m),
            OpError::Policy(_) => ApiError::new(StatusCode::FORBIDDEN, "policy_refused", m),
            OpError::Invalid(_) => ApiError::bad_request("invalid_session", m),
            OpError::Conflict(_) => ApiError::new(StatusCode::CONFLICT, "conflict", m),
            OpError::Unavailable(_) => ApiError::unavailable("unavailable", m),
        }
    }
}

/// A session's view, with its archive route.
fn view(sh: &Shared, id: &str, r: &Record) -> SessionView {
    let mut v = SessionView::from((id, r));
    if let Some(a) = &sh.archive {
        if let Some(route) = a.routes.lock().unwrap_or_else(|e| e.into_inner()).get(id) {
            v.archive_targets = route.targets.clone();
            v.archive_enqueued = route.enqueued;
        }
    }
    v
}

/// Whether `caller` may see and control a session of `experiment`.
fn allowed(caller: &Caller, experiment: &str) -> bool {
    caller.may_control() || caller.may_read(experiment)
}

/// The record of `id`, if the caller may see it (else 404: others'
/// sessions are not revealed).
fn find(sh: &Shared, caller: &Caller, id: &str) -> ApiResult<Record> {
    match sh.lock().sessions.get(id) {
        Some(r) if allowed(caller, &r.experiment) => Ok(r.clone()),
        _ => Err(OpError::NotFound(id.into()).into()),
    }
}

#[utoipa::path(get, path = "/api/v1/capabilities", responses((status = 200, body = Capabilities)))]
async fn capabilities(caller: Caller, State(sh): Sh) -> ApiResult<Json<Capabilities>> {
    if !caller.may_control() {
        caller.require_read_any()?;
    }
    Ok(Json(sysnet::capabilities(&sh)))
}

#[utoipa::path(get, path = "/api/v1/sessions", responses((status = 200, body = Vec<SessionView>)))]
async fn list(caller: Caller, State(sh): Sh) -> Json<Vec<SessionView>> {
    let reg = sh.lock();
    Json(
        reg.sessions
            .iter()
            .filter(|(_, r)| allowed(&caller, &r.experiment))
            .map(|(id, r)| view(&sh, id, r))
            .collect(),
    )
}

#[utoipa::path(post, path = "/api/v1/sessions", params(CreateQuery),
    request_body(content = Object, description = "A session configuration (docs/capture.md)"),
    responses((status = 201, body = SessionView), (status = 400), (status = 403), (status = 409)))]
async fn create(
    caller: Caller,
    State(sh): Sh,
    Query(q): Query<CreateQuery>,
    body: String,
) -> ApiResult<(StatusCode, Json<SessionView>)> {
    let cfg = SessionConfig::from_json(&body)
        .map_err(|e| ApiError::bad_request("invalid_session", e.to_string()))?;
    let experiment = q.experiment.unwrap_or_else(|| cfg.name.clone());
    if !allowed(&caller, &experiment) {
        return Err(ApiError::forbidden(format!(
            "this token may not create sessions of experiment '{experiment}': \
             it needs a read grant for it in the daemon's token file"
        )));
    }
    let id = cfg.name.clone();
    let archive: Vec<String> = q
        .archive
        .as_deref()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(String::from)
        .collect();
    sh.create(&experiment, cfg, archive)?;
    let r = find(&sh, &caller, &id)?;
    Ok((StatusCode::CREATED, Json(view(&sh, &id, &r))))
}

#[utoipa::path(get, path = "/api/v1/sessions/{id}", params(("id" = String, Path)),
    responses((status = 200, body = SessionView), (status = 404)))]
async fn one(
    caller: Caller,
    State(sh): Sh,
    Path(id): Path<String>,
) -> ApiResult<Json<SessionView>> {
    let r = find(&sh, &caller, &id)?;
    Ok(Json(view(&sh, &id, &r)))
}

#[utoipa::path(delete, path = "/api/v1/sessions/{id}", params(("id" = String, Path)),
    responses((status = 200, body = StatusView), (status = 404)))]
async fn delete(
    caller: Caller,
    State(sh): Sh,
    Path(id): Path<String>,
    _body: Drained,
) -> ApiResult<Json<StatusView>> {
    let r = find(&sh, &caller, &id)?;
    sh.delete(&id).await?;
    Ok(Json(StatusView {
        state: "deleted".into(),
        reason: None,
        ..StatusView::from((id.as_str(), &r))
    }))
}

fn status_of(sh: &Shared, caller: &Caller, id: &str) -> ApiResult<Json<StatusView>> {
    let r = find(sh, caller, id)?;
    Ok(Json(StatusView::from((id, &r))))
}

#[utoipa::path(post, path = "/api/v1/sessions/{id}/start", params(("id" = String, Path)),
    responses((status = 200, body = StatusView), (status = 404), (status = 409), (status = 503)))]
async fn start(
    caller: Caller,
    State(sh): Sh,
    Path(id): Path<String>,
    _body: Drained,
) -> ApiResult<Json<StatusView>> {
    find(&sh, &caller, &id)?;
    let sh2 = Arc::clone(&sh);
    let id2 = id.clone();
    tokio::task::spawn_blocking(move || sh2.start(&id2))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))??;
    status_of(&sh, &caller, &id)
}

#[utoipa::path(post, path = "/api/v1/sessions/{id}/pause", params(("id" = String, Path)),
    responses((status = 200, body = StatusView), (status = 404), (status = 409)))]
async fn pause(
    caller: Caller,
    State(sh): Sh,
    Path(id): Path<String>,
    _body: Drained,
) -> ApiResult<Json<StatusView>> {
    find(&sh, &caller, &id)?;
    sh.pause(&id, true).await?;
    status_of(&sh, &caller, &id)
}

#[utoipa::path(post, path = "/api/v1/sessions/{id}/resume", params(("id" = String, Path)),
    responses((status = 200, body = StatusView), (status = 404), (status = 409)))]
async fn resume(
    caller: Caller,
    State(sh): Sh,
    Path(id): Path<String>,
    _body: Drained,
) -> ApiResult<Json<StatusView>> {
    find(&sh, &caller, &id)?;
    sh.pause(&id, false).await?;
    status_of(&sh, &caller, &id)
}

#[utoipa::path(post, path = "/api/v1/sessions/{id}/stop", params(("id" = String, Path)),
    responses((status = 200, body = StatusView), (status = 404)))]
async fn stop(
    caller: Caller,
    State(sh): Sh,
    Path(id): Path<String>,
    _body: Drained,
) -> ApiResult<Json<StatusView>> {
    find(&sh, &caller, &id)?;
    sh.stop(&id).await?;
    status_of(&sh, &caller, &id)
}

#[utoipa::path(get, path = "/api/v1/sessions/{id}/status", params(("id" = String, Path)),
    responses((status = 200, body = StatusView), (status = 404)))]
async fn status(
    caller: Caller,
    State(sh): Sh,
    Path(id): Path<String>,
) -> ApiResult<Json<StatusView>> {
    status_of(&sh, &caller, &id)
}

#[utoipa::path(get, path = "/api/v1/sessions/{id}/log", params(("id" = String, Path)),
    responses((status = 200, body = LogView), (status = 404)))]
async fn log(caller: Caller, State(sh): Sh, Path(id): Path<String>) -> ApiResult<Json<LogView>> {
    let r = find(&sh, &caller, &id)?;
    Ok(Json(LogView {
        id,
        lines: r.log.into_iter().collect(),
    }))
}

#[utoipa::path(get, path = "/api/v1/sessions/{id}/files", params(("id" = String, Path)),
    responses((status = 200, body = FilesView), (status = 404)))]
async fn files(
    caller: Caller,
    State(sh): Sh,
    Path(id): Path<String>,
) -> ApiResult<Json<FilesView>> {
    find(&sh, &caller, &id)?;
    let dir = sh.config.data_dir.join(&id);
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for e in rd.flatten() {
            let Ok(md) = e.metadata() else { continue };
            let name = e.file_name().to_string_lossy().into_owned();
            if !md.is_file() || name.starts_with('.') {
                continue;
            }
            let modified = md
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_secs())
                .unwrap_or(0);
            out.push(FileView {
                name,
                bytes: md.len(),
                modified_unix_s: modified,
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Json(FilesView { id, files: out }))
}

#[utoipa::path(get, path = "/api/v1/sessions/{id}/files/{name}",
    params(("id" = String, Path), ("name" = String, Path)),
    responses((status = 200, content_type = "application/octet-stream"), (status = 404)))]
async fn download(
    caller: Caller,
    State(sh): Sh,
    Path((id, name)): Path<(String, String)>,
) -> ApiResult<Response> {
    find(&sh, &caller, &id)?;
    let missing = || {
        ApiError::not_found(
            "unknown_file",
            format!(
                "session {id} has no file {name:?}: list them with GET /api/v1/sessions/{id}/files"
            ),
        )
    };
    if name.is_empty() || name.starts_with('.') || name.contains(['/', '\\', '\0']) {
        return Err(missing());
    }
    let file = tokio::fs::File::open(sh.config.data_dir.join(&id).join(&name))
        .await
        .map_err(|_| missing())?;
    let md = file.metadata().await.map_err(|_| missing())?;
    if !md.is_file() {
        return Err(missing());
    }
    // Streamed in 64 KiB chunks: a multi-GB capture file never sits in memory.
    // The length is the size when the download starts (a file being written
    // is sent up to that point).
    let stream = tokio_util::io::ReaderStream::with_capacity(
        tokio::io::AsyncReadExt::take(file, md.len()),
        64 * 1024,
    );
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (header::CONTENT_LENGTH, md.len().to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        axum::body::Body::from_stream(stream),
    )
        .into_response())
}

async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(super::openapi::document())
}

async fn metrics_text(caller: Caller, State(sh): Sh) -> Response {
    let text = metrics::render(&sh, |exp| allowed(&caller, exp));
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}
