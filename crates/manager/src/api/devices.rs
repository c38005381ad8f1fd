//! `/sites`, `/devices` (changes: admin), capability refresh, monitoring
//! snapshots and `/alerts`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use httpkit::{ApiError, ApiResult};
use serde::Deserialize;
use utoipa::IntoParams;

use super::{invalid, not_found, scope, JsonBody, P, Q};
use crate::app::App;
use crate::audit::record;
use crate::auth::caller::Me;
use crate::db::devices::{self, Device, DeviceInput, Site};
use crate::db::monitor::{self, Alert, Snapshot};

/// Every site.
#[utoipa::path(get, path = "/api/v1/sites", responses((status = 200, body = [Site])))]
pub async fn sites(State(app): State<Arc<App>>, _me: Me) -> ApiResult<Json<Vec<Site>>> {
    Ok(Json(app.db.with(devices::sites)?))
}

/// Adds a site (admin).
#[utoipa::path(post, path = "/api/v1/sites", request_body = Site, responses((status = 201, body = Site)))]
pub async fn create_site(
    State(app): State<Arc<App>>,
    me: Me,
    JsonBody(mut s): JsonBody<Site>,
) -> ApiResult<(StatusCode, Json<Site>)> {
    me.require_admin()?;
    if s.name.trim().is_empty() {
        return Err(invalid("name", "give the site a name"));
    }
    s.id = app
        .db
        .with(|c| devices::create_site(c, &s.name, &s.description))?;
    record(
        &app.db,
        me.name(),
        "site.create",
        &format!("site/{}", s.id),
        &s.name,
    );
    Ok((StatusCode::CREATED, Json(s)))
}

/// Deletes a site (admin).
#[utoipa::path(delete, path = "/api/v1/sites/{id}", responses((status = 200)))]
pub async fn delete_site(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
) -> ApiResult<Json<serde_json::Value>> {
    me.require_admin()?;
    if app.db.with(|c| devices::delete_site(c, id))? == 0 {
        return Err(not_found("site", id));
    }
    record(
        &app.db,
        me.name(),
        "site.delete",
        &format!("site/{id}"),
        "deleted",
    );
    Ok(Json(serde_json::json!({"deleted": id})))
}

/// Every device (credentials are references, never secrets).
#[utoipa::path(get, path = "/api/v1/devices", responses((status = 200, body = [Device])))]
pub async fn list(State(app): State<Arc<App>>, me: Me) -> ApiResult<Json<Vec<Device>>> {
    let all = app.db.with(devices::list)?;
    let seen: ApiResult<Vec<Device>> = all
        .into_iter()
        .map(|d| scope::device(&app, &me, d))
        .collect();
    Ok(Json(seen?))
}

/// One device.
#[utoipa::path(get, path = "/api/v1/devices/{id}", responses((status = 200, body = Device)))]
pub async fn one(State(app): State<Arc<App>>, me: Me, P(id): P<i64>) -> ApiResult<Json<Device>> {
    let d = app
        .db
        .with(|c| devices::get(c, id))?
        .ok_or_else(|| not_found("device", id))?;
    Ok(Json(scope::device(&app, &me, d)?))
}

fn check(app: &App, d: &DeviceInput) -> ApiResult<()> {
    if d.name.trim().is_empty() || d.name.len() > 64 {
        return Err(invalid("name", "give a name of 1-64 characters"));
    }
    if d.hostname.trim().is_empty() || d.hostname.contains(['/', ' ', '?', '#', '@']) {
        return Err(invalid("hostname", "a host name or address"));
    }
    if d.port == 0 {
        return Err(invalid("port", "1-65535"));
    }
    if let Some(r) = &d.credential_ref {
        if !app.credentials.knows(r) {
            return Err(invalid(
                "credential_ref",
                format!("the credentials file has no line {r:?}: add '<name> <token>' to the file given with --credentials and restart"),
            ));
        }
    }
    Ok(())
}

/// Adds a device (admin).
#[utoipa::path(post, path = "/api/v1/devices", request_body = DeviceInput, responses((status = 201, body = Device)))]
pub async fn create(
    State(app): State<Arc<App>>,
    me: Me,
    JsonBody(d): JsonBody<DeviceInput>,
) -> ApiResult<(StatusCode, Json<Device>)> {
    me.require_admin()?;
    check(&app, &d)?;
    let id = app.db.with(|c| devices::create(c, &d))?;
    record(
        &app.db,
        me.name(),
        "device.create",
        &format!("device/{id}"),
        &format!(
            "{} ({} at {}:{})",
            d.name,
            d.kind.as_str(),
            d.hostname,
            d.port
        ),
    );
    let dev = app
        .db
        .with(|c| devices::get(c, id))?
        .ok_or_else(|| not_found("device", id))?;
    Ok((StatusCode::CREATED, Json(dev)))
}

/// Edits a device (admin); `version` must be the stored one.
#[utoipa::path(put, path = "/api/v1/devices/{id}", request_body = DeviceInput, responses((status = 200, body = Device), (status = 409, description = "edit_conflict")))]
pub async fn update(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
    JsonBody(d): JsonBody<DeviceInput>,
) -> ApiResult<Json<Device>> {
    me.require_admin()?;
    check(&app, &d)?;
    let current = app
        .db
        .with(|c| devices::get(c, id))?
        .ok_or_else(|| not_found("device", id))?;
    let version = d
        .version
        .ok_or_else(|| invalid("version", "send the version you edit"))?;
    if !app.db.with(|c| devices::update(c, id, version, &d))? {
        return Err(conflict(serde_json::to_value(&current).unwrap_or_default()));
    }
    record(
        &app.db,
        me.name(),
        "device.update",
        &format!("device/{id}"),
        &d.name,
    );
    let dev = app
        .db
        .with(|c| devices::get(c, id))?
        .ok_or_else(|| not_found("device", id))?;
    Ok(Json(dev))
}

/// 409 `edit_conflict` with the stored object.
pub fn conflict(current: serde_json::Value) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "edit_conflict",
        "someone changed this since you loaded it: reload, reapply your change, save again",
    )
    .with_details(serde_json::json!({ "current": current }))
}

/// Deletes a device (admin; refused while configurations use it).
#[utoipa::path(delete, path = "/api/v1/devices/{id}", responses((status = 200)))]
pub async fn remove(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
) -> ApiResult<Json<serde_json::Value>> {
    me.require_admin()?;
    let d = app
        .db
        .with(|c| devices::get(c, id))?
        .ok_or_else(|| not_found("device", id))?;
    app.db.with(|c| devices::delete(c, id))?;
    record(
        &app.db,
        me.name(),
        "device.delete",
        &format!("device/{id}"),
        &d.name,
    );
    Ok(Json(serde_json::json!({"deleted": id})))
}

/// Fetches the device's capabilities now (admin).
#[utoipa::path(post, path = "/api/v1/devices/{id}/refresh", responses((status = 200, body = Device), (status = 502, description = "device_unreachable")))]
pub async fn refresh(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
) -> ApiResult<Json<Device>> {
    me.require_admin()?;
    let d = app
        .db
        .with(|c| devices::get(c, id))?
        .ok_or_else(|| not_found("device", id))?;
    let r = crate::devices::probe(&app, &d).await;
    record(
        &app.db,
        me.name(),
        "device.refresh",
        &format!("device/{id}"),
        &d.name,
    );
    match r {
        Ok(p) => app
            .db
            .with(|c| devices::set_seen(c, id, "up", Some(&p.capabilities)))?,
        Err(e) => {
            app.db.with(|c| devices::set_seen(c, id, "down", None))?;
            return Err(ApiError::new(
                StatusCode::BAD_GATEWAY,
                "device_unreachable",
                format!("device {}: {e}", d.name),
            ));
        }
    }
    let d = app
        .db
        .with(|c| devices::get(c, id))?
        .ok_or_else(|| not_found("device", id))?;
    Ok(Json(d))
}

/// `?since=UNIX_S`.
#[derive(Debug, Deserialize, IntoParams)]
pub struct Since {
    /// Oldest snapshot time wanted (default: the last hour).
    pub since: Option<i64>,
}

/// A device's monitoring snapshots, oldest first.
#[utoipa::path(get, path = "/api/v1/devices/{id}/snapshots", params(Since), responses((status = 200, body = [Snapshot])))]
pub async fn snapshots(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
    Q(q): Q<Since>,
) -> ApiResult<Json<Vec<Snapshot>>> {
    let since = q.since.unwrap_or(crate::now_s() - 3600);
    let all = app.db.with(|c| monitor::since(c, id, since))?;
    Ok(Json(scope::snapshots(&app, &me, id, all)?))
}

/// Active alerts.
#[utoipa::path(get, path = "/api/v1/alerts", responses((status = 200, body = [Alert])))]
pub async fn alerts(State(app): State<Arc<App>>, me: Me) -> ApiResult<Json<Vec<Alert>>> {
    Ok(Json(scope::alerts(&me, app.db.with(monitor::active)?)))
}
