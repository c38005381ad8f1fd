//! `/experiments` and their members. Anyone may create one (and owns
//! it); only the owner or an admin may change or delete it.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use httpkit::ApiResult;
use serde::Deserialize;
use utoipa::ToSchema;

use super::devices::conflict;
use super::{access, invalid, not_found, JsonBody, P};
use crate::app::App;
use crate::audit::record;
use crate::auth::caller::Me;
use crate::db::devices::{self, Kind};
use crate::db::experiments::{self, default_domain, Experiment};
use crate::db::users;

/// Creating or editing an experiment.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExperimentInput {
    /// Unique name (required on POST).
    #[serde(default)]
    pub name: Option<String>,
    /// Domain of its data (default: from the name).
    #[serde(default)]
    pub domain: Option<String>,
    /// Collection server (device id of kind `collector`).
    #[serde(default)]
    pub collector: Option<i64>,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
    /// PUT: the version edited.
    #[serde(default)]
    pub version: Option<i64>,
}

/// A member to add.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMember {
    /// Their user name.
    pub username: String,
}

fn check(app: &App, name: &str, domain: &str, collector: Option<i64>) -> ApiResult<()> {
    if name.trim().is_empty() || name.len() > 64 {
        return Err(invalid("name", "give a name of 1-64 characters"));
    }
    if domain.is_empty()
        || domain.len() > 64
        || !domain
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(invalid("domain", "1-64 of [A-Za-z0-9_]"));
    }
    if let Some(c) = collector {
        match app.db.with(|db| devices::get(db, c))? {
            Some(d) if d.kind == Kind::Collector => {}
            _ => return Err(invalid("collector", format!("no collector device {c}"))),
        }
    }
    Ok(())
}

/// The caller's experiments (admin: all).
#[utoipa::path(get, path = "/api/v1/experiments", responses((status = 200, body = [Experiment])))]
pub async fn list(State(app): State<Arc<App>>, me: Me) -> ApiResult<Json<Vec<Experiment>>> {
    let who = (!me.is_admin()).then_some(me.user.id);
    Ok(Json(app.db.with(|c| experiments::list(c, who))?))
}

/// Creates an experiment owned by the caller.
#[utoipa::path(post, path = "/api/v1/experiments", request_body = ExperimentInput, responses((status = 201, body = Experiment)))]
pub async fn create(
    State(app): State<Arc<App>>,
    me: Me,
    JsonBody(i): JsonBody<ExperimentInput>,
) -> ApiResult<(StatusCode, Json<Experiment>)> {
    let name = i.name.unwrap_or_default();
    let domain = i.domain.unwrap_or_else(|| default_domain(&name));
    check(&app, &name, &domain, i.collector)?;
    let desc = i.description.unwrap_or_default();
    let id = app
        .db
        .with(|c| experiments::create(c, &name, &domain, me.user.id, i.collector, &desc))?;
    record(
        &app.db,
        me.name(),
        "experiment.create",
        &format!("experiment/{id}"),
        &name,
    );
    let e = access::experiment(&app, &me, id)?;
    Ok((StatusCode::CREATED, Json(e)))
}

/// One experiment.
#[utoipa::path(get, path = "/api/v1/experiments/{id}", responses((status = 200, body = Experiment), (status = 404)))]
pub async fn one(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
) -> ApiResult<Json<Experiment>> {
    Ok(Json(access::experiment(&app, &me, id)?))
}

/// Edits an experiment (owner/admin; `version` required).
#[utoipa::path(put, path = "/api/v1/experiments/{id}", request_body = ExperimentInput, responses((status = 200, body = Experiment), (status = 409, description = "edit_conflict")))]
pub async fn update(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
    JsonBody(i): JsonBody<ExperimentInput>,
) -> ApiResult<Json<Experiment>> {
    let mut e = access::owned_experiment(&app, &me, id)?;
    let version = i
        .version
        .ok_or_else(|| invalid("version", "send the version you edit"))?;
    let current = serde_json::to_value(&e).unwrap_or_default();
    if let Some(n) = i.name {
        e.name = n;
    }
    if let Some(d) = i.domain {
        e.domain = d;
    }
    if i.collector.is_some() {
        e.collector = i.collector;
    }
    if let Some(d) = i.description {
        e.description = d;
    }
    check(&app, &e.name, &e.domain, e.collector)?;
    if !app.db.with(|c| experiments::update(c, id, version, &e))? {
        return Err(conflict(current));
    }
    record(
        &app.db,
        me.name(),
        "experiment.update",
        &format!("experiment/{id}"),
        &e.name,
    );
    Ok(Json(access::experiment(&app, &me, id)?))
}

/// Deletes an experiment with its configurations and runs (owner/admin).
#[utoipa::path(delete, path = "/api/v1/experiments/{id}", responses((status = 200)))]
pub async fn remove(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
) -> ApiResult<Json<serde_json::Value>> {
    let e = access::owned_experiment(&app, &me, id)?;
    app.db.with(|c| experiments::delete(c, id))?;
    record(
        &app.db,
        me.name(),
        "experiment.delete",
        &format!("experiment/{id}"),
        &e.name,
    );
    Ok(Json(serde_json::json!({"deleted": id})))
}

/// Adds a member (owner/admin).
#[utoipa::path(post, path = "/api/v1/experiments/{id}/members", request_body = NewMember, responses((status = 200, body = Experiment)))]
pub async fn add_member(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
    JsonBody(m): JsonBody<NewMember>,
) -> ApiResult<Json<Experiment>> {
    let e = access::owned_experiment(&app, &me, id)?;
    let u = app
        .db
        .with(|c| users::by_name(c, &m.username))?
        .ok_or_else(|| invalid("username", format!("no user {:?}", m.username)))?;
    app.db.with(|c| experiments::add_member(c, id, u.id))?;
    record(
        &app.db,
        me.name(),
        "experiment.member_add",
        &format!("experiment/{id}"),
        &format!("{} joins {}", u.username, e.name),
    );
    Ok(Json(access::experiment(&app, &me, id)?))
}

/// Removes a member (owner/admin).
#[utoipa::path(delete, path = "/api/v1/experiments/{id}/members/{username}", responses((status = 200, body = Experiment)))]
pub async fn remove_member(
    State(app): State<Arc<App>>,
    me: Me,
    P((id, username)): P<(i64, String)>,
) -> ApiResult<Json<Experiment>> {
    let e = access::owned_experiment(&app, &me, id)?;
    let u = app
        .db
        .with(|c| users::by_name(c, &username))?
        .ok_or_else(|| not_found("member", &username))?;
    if !app.db.with(|c| experiments::remove_member(c, id, u.id))? {
        return Err(not_found("member", &username));
    }
    record(
        &app.db,
        me.name(),
        "experiment.member_remove",
        &format!("experiment/{id}"),
        &format!("{} leaves {}", u.username, e.name),
    );
    Ok(Json(access::experiment(&app, &me, id)?))
}
