//! The HTTP handlers: thin — check access, parse, call the blocking side,
//! answer JSON or a streamed body.

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};

use crate::auth::{ApiError, ApiResult, Caller};
use crate::catalog::{self, DomainInfo, DomainSummary, StreamInfo};
use crate::error::QueryError;
use crate::exec;
use crate::state::QueryState;

/// Query string as ordered pairs (repeated keys kept).
type Pairs = Query<Vec<(String, String)>>;

/// The API's routes, under `/api/v1/`.
pub fn router(state: QueryState) -> Router {
    Router::new()
        .route("/api/v1/openapi.json", get(openapi))
        .route("/api/v1/domains", get(domains))
        .route("/api/v1/domains/{domain}", get(domain))
        .route("/api/v1/domains/{domain}/streams", get(streams))
        .route("/api/v1/domains/{domain}/streams/{stream}", get(stream))
        .route("/api/v1/domains/{domain}/streams/{stream}/rows", get(rows))
        .route("/api/v1/domains/{domain}/streams/{stream}/tail", get(tail))
        .with_state(state)
}

/// Runs blocking work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, QueryError> + Send + 'static,
) -> ApiResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|_| ApiError::internal("the query task failed"))?
        .map_err(ApiError::from)
}

async fn openapi() -> Response {
    Json(crate::openapi::document()).into_response()
}

/// Lists the domains the caller may read, with their stream counts.
#[utoipa::path(get, path = "/api/v1/domains", responses((status = 200, body = Vec<DomainSummary>)))]
pub async fn domains(
    State(st): State<QueryState>,
    caller: Caller,
) -> ApiResult<Json<Vec<DomainSummary>>> {
    blocking(move || {
        let names = st.backend.domains().map_err(QueryError::Database)?;
        let mut out = Vec::new();
        for name in names.into_iter().filter(|d| caller.may_read(d)) {
            // A database that is not an experiment (or not readable) is skipped.
            let Ok(Some(mut src)) = st.backend.open(&name) else {
                continue;
            };
            if let Ok(s) = catalog::streams(&mut src) {
                out.push(DomainSummary {
                    name,
                    streams: s.len(),
                });
            }
        }
        Ok(Json(out))
    })
    .await
}

/// Senders, streams, metadata and start time of a domain.
#[utoipa::path(get, path = "/api/v1/domains/{domain}", params(("domain" = String, Path)),
    responses((status = 200, body = DomainInfo), (status = 404, description = "unknown domain; details.domains lists the readable ones")))]
pub async fn domain(
    State(st): State<QueryState>,
    caller: Caller,
    Path(domain): Path<String>,
) -> ApiResult<Json<DomainInfo>> {
    caller.require_read(&domain)?;
    blocking(move || {
        let mut src = exec::open(&st, &caller, &domain)?;
        let budget = st.budget;
        src.with_budget(budget, |s| catalog::domain_info(s, &domain))
            .map(Json)
            .map_err(|e| QueryError::db(e, budget))
    })
    .await
}

/// Every stream of a domain with fields, row count and time spans.
#[utoipa::path(get, path = "/api/v1/domains/{domain}/streams", params(("domain" = String, Path)),
    responses((status = 200, body = Vec<StreamInfo>), (status = 404)))]
pub async fn streams(
    State(st): State<QueryState>,
    caller: Caller,
    Path(domain): Path<String>,
) -> ApiResult<Json<Vec<StreamInfo>>> {
    caller.require_read(&domain)?;
    blocking(move || {
        let mut src = exec::open(&st, &caller, &domain)?;
        let budget = st.budget;
        src.with_budget(budget, |s| {
            catalog::streams(s)?
                .iter()
                .map(|schema| catalog::stream_info(s, schema))
                .collect::<Result<Vec<_>, _>>()
        })
        .map(Json)
        .map_err(|e| QueryError::db(e, budget))
    })
    .await
}

/// One stream: fields with OML types and units, row count, time spans.
#[utoipa::path(get, path = "/api/v1/domains/{domain}/streams/{stream}",
    params(("domain" = String, Path), ("stream" = String, Path)),
    responses((status = 200, body = StreamInfo), (status = 404, description = "details.streams lists what exists")))]
pub async fn stream(
    State(st): State<QueryState>,
    caller: Caller,
    Path((domain, stream)): Path<(String, String)>,
) -> ApiResult<Json<StreamInfo>> {
    caller.require_read(&domain)?;
    blocking(move || {
        let mut src = exec::open(&st, &caller, &domain)?;
        let schema = catalog::find_stream(&mut src, &domain, &stream)?;
        let budget = st.budget;
        src.with_budget(budget, |s| catalog::stream_info(s, &schema))
            .map(Json)
            .map_err(|e| QueryError::db(e, budget))
    })
    .await
}

/// Rows of a stream (see docs/query-api.md for every parameter).
#[utoipa::path(get, path = "/api/v1/domains/{domain}/streams/{stream}/rows",
    params(("domain" = String, Path), ("stream" = String, Path),
        ("fields" = Option<String>, Query, description = "comma-separated columns, at most 1000 (default: all)"),
        ("from" = Option<String>, Query, description = "seconds after the start, or ISO 8601; within the years 1970-9999, UTC offset within +-14:00"),
        ("to" = Option<String>, Query, description = "seconds after the start, or ISO 8601; within the years 1970-9999, UTC offset within +-14:00"),
        ("time" = Option<String>, Query, description = "server (default) or client"),
        ("sender" = Option<String>, Query, description = "sender name or id (repeatable), at most 100"),
        ("where" = Option<String>, Query, description = "field op value, comma-separated or repeated, at most 100"),
        ("limit" = Option<u64>, Query, description = "rows per page (JSON default 10000)"),
        ("after" = Option<String>, Query, description = "the previous page's next cursor"),
        ("points" = Option<u32>, Query, description = "M4 downsampling to about N points per series"),
        ("tiles" = Option<bool>, Query, description = "with points: from the pre-aggregated tiles (true, default) or from the rows (false); same answer"),
        ("clock" = Option<String>, Query, description = "raw (default) or corrected: oml_ts_client minus the sender's estimated clock offset"),
        ("derive" = Option<String>, Query, description = "none (default) or rate: each numeric field becomes its per-second rate per sender over the time column; a decrease counts as a counter restart from 0; a sender's first row has null; JSON adds \"derive\":\"rate\" and each rate field's unit <unit>/s (1/s without a declared unit). Non-numeric fields: 400. With points: the rates are computed from every row of the range, then M4-downsampled"),
        ("gaps" = Option<String>, Query, description = "K > 1, true (= 3) or false: JSON member gaps [{sender, from, to}], the intervals where a sender sent no row for more than K times its median interval (over the page's rows; with points over the kept rows, and only intervals longer than a bucket; with derive=rate and points over every row of the range); format=json only"),
        ("format" = Option<String>, Query, description = "json, csv, jsonl, arrow, parquet"),
        ("int64" = Option<String>, Query, description = "number (default) or string"),
        ("timestamps" = Option<String>, Query, description = "raw (JSON default) or iso")),
    responses((status = 200, description = "the rows, streamed"), (status = 400), (status = 404), (status = 503)))]
pub async fn rows(
    State(st): State<QueryState>,
    caller: Caller,
    Path((domain, stream)): Path<(String, String)>,
    Query(pairs): Pairs,
) -> Response {
    if let Err(e) = caller.require_read(&domain) {
        return e.into_response();
    }
    let format = pairs
        .iter()
        .rev()
        .find(|(k, _)| k == "format")
        .map(|(_, v)| v.as_str())
        .unwrap_or("json");
    let content_type = match format {
        "csv" => "text/csv; charset=utf-8",
        "jsonl" | "ndjson" => "application/x-ndjson",
        "arrow" => "application/vnd.apache.arrow.stream",
        "parquet" => "application/vnd.apache.parquet",
        _ => "application/json",
    };
    let (w, pending) = crate::body::channel();
    tokio::task::spawn_blocking(move || exec::rows(&st, &caller, &domain, &stream, &pairs, w));
    pending.respond(content_type).await
}

/// New rows as Server-Sent Events.
#[utoipa::path(get, path = "/api/v1/domains/{domain}/streams/{stream}/tail",
    params(("domain" = String, Path), ("stream" = String, Path),
        ("after" = Option<String>, Query, description = "resume after this id (or Last-Event-ID)"),
        ("batch" = Option<bool>, Query, description = "true: one `rows` event per batch (a JSON array per row on its own data line, names in the opening `fields` event) instead of one `row` event per row"),
        ("clock" = Option<String>, Query, description = "raw (default) or corrected client timestamps"),
        ("derive" = Option<String>, Query, description = "not supported on tails (400): use rows?derive=rate"),
        ("gaps" = Option<String>, Query, description = "not supported on tails (400): use rows?gaps=K")),
    responses((status = 200, description = "text/event-stream of `row` events (or `fields` then `rows` events with batch=true); final `lagged` or `error`")))]
pub async fn tail(
    State(st): State<QueryState>,
    caller: Caller,
    Path((domain, stream)): Path<(String, String)>,
    headers: HeaderMap,
    Query(pairs): Pairs,
) -> Response {
    if let Err(e) = caller.require_read(&domain) {
        return e.into_response();
    }
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    crate::tail::tail(st, caller, domain, stream, pairs, last).await
}
