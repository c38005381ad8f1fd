//! Capture configurations of an experiment: validated against the chosen
//! device before saving; edits carry the version they edit (409
//! `edit_conflict` with the stored one when it moved).

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use httpkit::{ApiError, ApiResult};
use serde::Deserialize;
use utoipa::ToSchema;

use super::devices::conflict;
use super::{access, invalid, not_found, JsonBody, P};
use crate::app::App;
use crate::audit::record;
use crate::auth::caller::Me;
use crate::db::configs::{self, Config, ConfigInput};
use crate::db::devices;

/// Checks `input` against its device (refreshing capabilities never
/// fetched); 400 `invalid_config` with `details.fields`.
async fn validated(app: &Arc<App>, input: &ConfigInput) -> ApiResult<()> {
    let mut device = app.db.with(|c| devices::get(c, input.device))?;
    if let Some(d) = device.as_mut().filter(|d| d.capabilities.is_null()) {
        if let Ok(p) = crate::devices::probe(app, d).await {
            app.db
                .with(|c| devices::set_seen(c, d.id, "up", Some(&p.capabilities)))?;
            d.capabilities = p.capabilities;
        }
    }
    let fields = crate::validate::config(input, device.as_ref());
    if fields.is_empty() {
        return Ok(());
    }
    let summary: Vec<String> = fields.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    Err(ApiError::bad_request(
        "invalid_config",
        format!("the configuration is not valid: {}", summary.join("; ")),
    )
    .with_details(serde_json::json!({ "fields": fields })))
}

/// An experiment's configurations.
#[utoipa::path(get, path = "/api/v1/experiments/{id}/configs", responses((status = 200, body = [Config])))]
pub async fn list(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
) -> ApiResult<Json<Vec<Config>>> {
    access::experiment(&app, &me, id)?;
    Ok(Json(app.db.with(|c| configs::list(c, id))?))
}

/// Saves a new configuration.
#[utoipa::path(post, path = "/api/v1/experiments/{id}/configs", request_body = ConfigInput,
    responses((status = 201, body = Config), (status = 400, description = "invalid_config with details.fields")))]
pub async fn create(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
    JsonBody(input): JsonBody<ConfigInput>,
) -> ApiResult<(StatusCode, Json<Config>)> {
    let e = access::experiment(&app, &me, id)?;
    validated(&app, &input).await?;
    let cid = app.db.with(|c| configs::create(c, id, &input))?;
    record(
        &app.db,
        me.name(),
        "config.create",
        &format!("config/{cid}"),
        &format!("{} in {}", input.name, e.name),
    );
    let saved = app
        .db
        .with(|c| configs::get(c, cid))?
        .ok_or_else(|| not_found("configuration", cid))?;
    Ok((StatusCode::CREATED, Json(saved)))
}

/// One configuration.
#[utoipa::path(get, path = "/api/v1/configs/{id}", responses((status = 200, body = Config)))]
pub async fn one(State(app): State<Arc<App>>, me: Me, P(id): P<i64>) -> ApiResult<Json<Config>> {
    Ok(Json(access::config(&app, &me, id)?.0))
}

/// Replaces a configuration; `version` must be the stored one.
#[utoipa::path(put, path = "/api/v1/configs/{id}", request_body = ConfigInput,
    responses((status = 200, body = Config), (status = 409, description = "edit_conflict with details.current")))]
pub async fn update(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
    JsonBody(input): JsonBody<ConfigInput>,
) -> ApiResult<Json<Config>> {
    let (current, _) = access::config(&app, &me, id)?;
    let version = input
        .version
        .ok_or_else(|| invalid("version", "send the version you edit"))?;
    if version != current.version {
        return Err(conflict(serde_json::to_value(&current).unwrap_or_default()));
    }
    validated(&app, &input).await?;
    if !app.db.with(|c| configs::update(c, id, version, &input))? {
        let now = app.db.with(|c| configs::get(c, id))?;
        return Err(conflict(serde_json::to_value(&now).unwrap_or_default()));
    }
    record(
        &app.db,
        me.name(),
        "config.update",
        &format!("config/{id}"),
        &format!("{} version {}", input.name, version + 1),
    );
    let saved = app
        .db
        .with(|c| configs::get(c, id))?
        .ok_or_else(|| not_found("configuration", id))?;
    Ok(Json(saved))
}

/// Deletes a configuration (409 while runs use it).
#[utoipa::path(delete, path = "/api/v1/configs/{id}", responses((status = 200)))]
pub async fn remove(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
) -> ApiResult<Json<serde_json::Value>> {
    let (c, _) = access::config(&app, &me, id)?;
    app.db.with(|db| configs::delete(db, id))?;
    record(
        &app.db,
        me.name(),
        "config.delete",
        &format!("config/{id}"),
        &c.name,
    );
    Ok(Json(serde_json::json!({"deleted": id})))
}

/// The copy's name.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CopyRequest {
    /// Name of the copy.
    pub name: String,
}

/// Copies a configuration under a new name (same experiment).
#[utoipa::path(post, path = "/api/v1/configs/{id}/copy", request_body = CopyRequest, responses((status = 201, body = Config)))]
pub async fn copy(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
    JsonBody(req): JsonBody<CopyRequest>,
) -> ApiResult<(StatusCode, Json<Config>)> {
    let (c, _) = access::config(&app, &me, id)?;
    let input = ConfigInput {
        name: req.name,
        device: c.device,
        storage: c.storage,
        session: c.session,
        metadata: c.metadata,
        version: None,
        experiment: None,
        id: None,
    };
    validated(&app, &input).await?;
    let cid = app
        .db
        .with(|db| configs::create(db, c.experiment, &input))?;
    record(
        &app.db,
        me.name(),
        "config.copy",
        &format!("config/{cid}"),
        &format!("{} copied from config/{id}", input.name),
    );
    let saved = app
        .db
        .with(|db| configs::get(db, cid))?
        .ok_or_else(|| not_found("configuration", cid))?;
    Ok((StatusCode::CREATED, Json(saved)))
}
