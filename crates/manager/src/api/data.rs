//! Bodies relayed as they come, never buffered whole: file downloads from
//! capture daemons, and the live-data proxy to the experiment's
//! collection server (rows, CSV/Parquet exports, SSE tails with
//! `Last-Event-ID`).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::Response;
use httpkit::{ApiError, ApiResult};

use super::{access, not_found, P};
use crate::app::App;
use crate::auth::caller::Me;
use crate::db::devices::{self, Device};
use crate::db::experiments::Experiment;
use crate::devices::relay_path::{upstream_url, Resource};
use crate::devices::{capture, collector, streamed, DeviceError};

/// 502 for a device request that failed: `device_transport` (nothing was
/// sent), `device_certificate` (its certificate was refused before
/// anything was sent), `device_unreachable` (nothing answered).
fn device_failed(what: &str, e: DeviceError) -> ApiError {
    match e {
        DeviceError::Transport(_) => refused_transport(&e),
        DeviceError::Certificate(why) => ApiError::new(
            StatusCode::BAD_GATEWAY,
            "device_certificate",
            format!("{what} is not trusted: {why}"),
        ),
        DeviceError::Unreachable(why) => ApiError::new(
            StatusCode::BAD_GATEWAY,
            "device_unreachable",
            format!("{what} did not answer: {why}"),
        ),
        other => ApiError::new(
            StatusCode::BAD_GATEWAY,
            "device_unreachable",
            format!("{what} did not answer: {other}"),
        ),
    }
}

/// 502 `device_transport`: nothing was sent (plain HTTP beyond loopback
/// without `insecure`, or unusable TLS settings of the device).
pub fn refused_transport(e: &DeviceError) -> ApiError {
    ApiError::new(StatusCode::BAD_GATEWAY, "device_transport", e.to_string())
}

/// Relays an upstream answer: status, the headers that describe the
/// body, and the body as a stream.
fn relay(resp: axum::http::Response<httpkit::client::Body>) -> Response {
    let status = StatusCode::from_u16(resp.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut out = Response::builder().status(status);
    for h in [
        header::CONTENT_TYPE,
        header::CONTENT_DISPOSITION,
        header::CONTENT_LENGTH,
        header::CACHE_CONTROL,
    ] {
        if let Some(v) = resp.headers().get(&h) {
            out = out.header(h, v.clone());
        }
    }
    // SSE through proxies: no buffering on the way out either.
    out = out.header("x-accel-buffering", "no");
    out.body(streamed::relay_body(resp.into_body()))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// One file of a run, streamed from the device.
#[utoipa::path(get, path = "/api/v1/runs/{id}/files/{device}/{name}", responses((status = 200, content_type = "application/octet-stream")))]
pub async fn download(
    State(app): State<Arc<App>>,
    me: Me,
    P((id, device, name)): P<(i64, i64, String)>,
) -> ApiResult<Response> {
    let (run, _) = access::run(&app, &me, id)?;
    let rd = run
        .devices
        .iter()
        .find(|d| d.device == device && d.created_on_device)
        .ok_or_else(|| not_found("device in run", device))?;
    if !capture::plain_name(&name) {
        return Err(ApiError::not_found(
            "unknown_file",
            format!("no file {name:?}"),
        ));
    }
    let d = app
        .db
        .with(|c| devices::get(c, device))?
        .ok_or_else(|| not_found("device", device))?;
    let what = format!("device {}", d.name);
    let client = crate::devices::client(&app, &d).map_err(|e| device_failed(&what, e))?;
    let resp = streamed::get(client, capture::file_path(&rd.session, &name), Vec::new())
        .await
        .map_err(|e| device_failed(&what, e))?;
    Ok(relay(resp))
}

fn collector_of(app: &App, e: &Experiment) -> ApiResult<Device> {
    let id = e.collector.ok_or_else(|| {
        ApiError::not_found(
            "no_collector",
            format!(
                "experiment {} has no collector: set one (PUT /api/v1/experiments/{})",
                e.name, e.id
            ),
        )
    })?;
    app.db
        .with(|c| devices::get(c, id))?
        .ok_or_else(|| not_found("collector device", id))
}

/// The upstream URL of `resource` in the experiment's domain, or 400
/// `bad_path` before anything is sent.
fn upstream(
    d: &Device,
    e: &Experiment,
    resource: &Resource,
    query: Option<&str>,
) -> ApiResult<url::Url> {
    upstream_url(&d.base_url(), &e.domain, resource, query)
        .map_err(|err| ApiError::bad_request("bad_path", err.to_string()))
}

/// The experiment's measurement streams on its collector.
#[utoipa::path(get, path = "/api/v1/experiments/{id}/streams", responses((status = 200, description = "the collector's stream descriptions")))]
pub async fn streams(State(app): State<Arc<App>>, me: Me, P(id): P<i64>) -> ApiResult<Response> {
    let e = access::experiment(&app, &me, id)?;
    let d = collector_of(&app, &e)?;
    let url = upstream(&d, &e, &Resource::Streams, None)?;
    let resp = collector::get(&app, &d, &url, Vec::new())
        .await
        .map_err(|err| device_failed(&format!("collector {}", d.name), err))?;
    if resp.status() == StatusCode::NOT_FOUND {
        // No data yet: the domain appears with its first stream.
        return Ok(Response::builder()
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from("[]\n"))
            .unwrap_or_default());
    }
    Ok(relay(resp))
}

/// The part of the request path after `/query/`, still percent-encoded
/// (the decoded path parameter would hide one layer of encoding).
fn raw_rest(uri: &Uri) -> ApiResult<&str> {
    uri.path()
        .strip_prefix("/api/v1/experiments/")
        .and_then(|p| p.split_once('/'))
        .and_then(|(_, p)| p.strip_prefix("query/").or((p == "query").then_some("")))
        .ok_or_else(|| ApiError::bad_request("bad_path", "not a query path"))
}

/// The collector's query API for the experiment's domain. The path is
/// parsed into a typed [`Resource`] (refusing dot segments, backslashes
/// and encoded slashes in any encoding) and the upstream URL is built
/// from it and checked to lie under the domain (docs/security.md).
#[utoipa::path(get, path = "/api/v1/experiments/{id}/query/{rest}",
    responses((status = 200, description = "relayed from GET /api/v1/domains/{domain}/{rest} of the collector (JSON, CSV, Parquet, SSE)"),
              (status = 400, description = "bad_path: a dot segment, backslash, encoded slash or unknown resource")))]
pub async fn query(
    State(app): State<Arc<App>>,
    me: Me,
    P((id, _)): P<(i64, String)>,
    uri: Uri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let e = access::experiment(&app, &me, id)?;
    let resource = Resource::parse(raw_rest(&uri)?)
        .map_err(|err| ApiError::bad_request("bad_path", err.to_string()))?;
    let d = collector_of(&app, &e)?;
    let url = upstream(&d, &e, &resource, uri.query())?;
    let forwarded = [
        header::ACCEPT,
        header::HeaderName::from_static("last-event-id"),
    ]
    .into_iter()
    .filter_map(|h| headers.get(&h).cloned().map(|v| (h, v)))
    .collect();
    let resp = collector::get(&app, &d, &url, forwarded)
        .await
        .map_err(|err| device_failed(&format!("collector {}", d.name), err))?;
    if resp.status() == StatusCode::NOT_FOUND {
        return relay_not_found(resp, &e).await;
    }
    Ok(relay(resp))
}

/// The most of a collector's 404 body read to look at its code.
const NOT_FOUND_BODY_MAX: usize = 64 * 1024;

/// A collector's 404, relayed when it is about the experiment's own
/// domain (`unknown_stream`, `unknown_field`, which list its streams and
/// fields). `unknown_domain` lists in `details.domains` every domain the
/// manager's credential may read, other experiments' too: it, and any
/// 404 that cannot be read as an error of the query API, becomes the
/// manager's own `unknown_domain` naming only the experiment's domain.
async fn relay_not_found(
    resp: axum::http::Response<httpkit::client::Body>,
    e: &Experiment,
) -> ApiResult<Response> {
    let body = streamed::read_up_to(resp.into_body(), NOT_FOUND_BODY_MAX).await;
    let code = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["error"]["code"].as_str().map(str::to_owned));
    match code {
        Some(c) if c != "unknown_domain" && body.len() <= NOT_FOUND_BODY_MAX => {
            Ok(Response::builder()
                .status(StatusCode::NOT_FOUND)
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body))
                .unwrap_or_default())
        }
        _ => Err(ApiError::not_found(
            "unknown_domain",
            format!(
                "the collector has no data in domain {:?} of experiment {} yet",
                e.domain, e.name
            ),
        )),
    }
}
