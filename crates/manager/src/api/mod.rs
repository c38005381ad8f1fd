//! The REST API of `spec/manager-api.md`: one module per resource, thin
//! handlers (parse into typed requests, check who may, call the database
//! or the device drivers, write the audit log, answer JSON).

pub mod access;
pub mod admin;
pub mod claim;
pub mod configs;
pub mod dashboards;
pub mod data;
pub mod devices;
pub mod experiments;
pub mod openapi;
pub mod runevents;
pub mod runs;
pub mod scope;
pub mod session;
pub mod users;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::routing::{delete, get, post};
use axum::Router;
use httpkit::ApiError;
use serde::de::DeserializeOwned;

use crate::app::App;

/// Every route under `/api/v1`.
pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/api/v1/login", post(session::login))
        .route("/api/v1/logout", post(session::logout))
        .route("/api/v1/session", get(session::current))
        .route("/api/v1/users", get(users::list).post(users::create))
        .route(
            "/api/v1/users/{id}",
            delete(users::remove).patch(users::patch),
        )
        .route(
            "/api/v1/tokens",
            get(users::tokens).post(users::create_token),
        )
        .route("/api/v1/tokens/{id}", delete(users::revoke_token))
        .route(
            "/api/v1/sites",
            get(devices::sites).post(devices::create_site),
        )
        .route("/api/v1/sites/{id}", delete(devices::delete_site))
        .route("/api/v1/devices", get(devices::list).post(devices::create))
        .route("/api/v1/devices/certificate", post(devices::certificate))
        .route(
            "/api/v1/devices/{id}",
            get(devices::one)
                .put(devices::update)
                .delete(devices::remove),
        )
        .route("/api/v1/devices/{id}/refresh", post(devices::refresh))
        .route("/api/v1/devices/{id}/snapshots", get(devices::snapshots))
        .route("/api/v1/alerts", get(devices::alerts))
        .route(
            "/api/v1/experiments",
            get(experiments::list).post(experiments::create),
        )
        .route(
            "/api/v1/experiments/{id}",
            get(experiments::one)
                .put(experiments::update)
                .delete(experiments::remove),
        )
        .route(
            "/api/v1/experiments/{id}/members",
            post(experiments::add_member),
        )
        .route(
            "/api/v1/experiments/{id}/members/{username}",
            delete(experiments::remove_member),
        )
        .route(
            "/api/v1/experiments/{id}/configs",
            get(configs::list).post(configs::create),
        )
        .route(
            "/api/v1/configs/{id}",
            get(configs::one)
                .put(configs::update)
                .delete(configs::remove),
        )
        .route("/api/v1/configs/{id}/copy", post(configs::copy))
        .route(
            "/api/v1/experiments/{id}/runs",
            get(runs::list).post(runs::create),
        )
        .route("/api/v1/runs/{id}", get(runs::one))
        .route("/api/v1/runs/{id}/start", post(runs::start))
        .route("/api/v1/runs/{id}/pause", post(runs::pause))
        .route("/api/v1/runs/{id}/resume", post(runs::resume))
        .route("/api/v1/runs/{id}/stop", post(runs::stop))
        .route("/api/v1/runs/{id}/status", get(runs::status))
        .route("/api/v1/runs/{id}/log", get(runs::log))
        .route("/api/v1/runs/{id}/events", get(runevents::events))
        .route("/api/v1/runs/{id}/files", get(runs::files))
        .route(
            "/api/v1/runs/{id}/files/{device}/{name}",
            get(data::download),
        )
        .route("/api/v1/experiments/{id}/streams", get(data::streams))
        .route("/api/v1/experiments/{id}/dashboards", get(dashboards::list))
        .route(
            "/api/v1/experiments/{id}/dashboards/{name}",
            axum::routing::put(dashboards::put).delete(dashboards::remove),
        )
        .route("/api/v1/experiments/{id}/query/{*rest}", get(data::query))
        .route("/api/v1/audit", get(admin::audit))
        .route("/api/v1/openapi.json", get(openapi::serve))
}

/// A JSON body whose rejections are JSON errors (400 `invalid_body`).
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(JsonBody(v)),
            Err(e) => Err(json_rejection(e)),
        }
    }
}

fn json_rejection(e: JsonRejection) -> ApiError {
    ApiError::new(
        e.status(),
        "invalid_body",
        format!("the JSON body: {}", e.body_text()),
    )
}

/// Path parameters whose rejections are JSON errors (400 `bad_path`).
pub struct P<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for P<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| P(p.0))
            .map_err(|e: PathRejection| ApiError::bad_request("bad_path", e.body_text()))
    }
}

/// Query parameters whose rejections are JSON errors (400 `bad_query`).
pub struct Q<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Q<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Q(q.0))
            .map_err(|e: QueryRejection| ApiError::bad_request("bad_query", e.body_text()))
    }
}

/// The client's address (rate limiting), when known.
pub struct Peer(pub Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for Peer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Peer(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0.ip()),
        ))
    }
}

/// 404 `not_found` for a resource.
pub fn not_found(what: &str, id: impl std::fmt::Display) -> ApiError {
    ApiError::not_found(
        "not_found",
        format!("no {what} {id} (or you may not see it)"),
    )
}

/// 400 `invalid_request` naming a field.
pub fn invalid(field: &str, message: impl Into<String>) -> ApiError {
    let message = message.into();
    ApiError::bad_request("invalid_request", format!("{field}: {message}"))
        .with_details(serde_json::json!({ "fields": { field: message } }))
}
