//! `/experiments` and their members. Anyone may create one (and owns
//! it); only the owner or an admin may change or delete it.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use httpkit::{ApiError, ApiResult};
use serde::Deserialize;
use serde_json::json;
use utoipa::{IntoParams, ToSchema};

use super::claim::{self, Claim};
use super::devices::conflict;
use super::{access, invalid, not_found, JsonBody, P, Q};
use crate::app::App;
use crate::audit::record;
use crate::auth::caller::Me;
use crate::db::configs;
use crate::db::experiments::{self, Experiment};
use crate::db::runs::{self, Run, RunDevice};
use crate::db::users;
use crate::names;
use crate::runs::Action;

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
    /// Admin only: take a domain the collector already has data for
    /// (audited as `experiment.adopt_domain`).
    #[serde(default)]
    pub adopt: bool,
}

/// A member to add.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMember {
    /// Their user name.
    pub username: String,
}

/// Audits a domain adopted with its data.
fn audit_adoption(app: &App, me: &Me, id: i64, e: &str, domain: &str) {
    record(
        &app.db,
        me.name(),
        "experiment.adopt_domain",
        &format!("experiment/{id}"),
        &format!("{e} adopts domain {domain} with the data already on its collector"),
    );
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
    let raw = i.name.unwrap_or_default();
    let nfc = names::name(&raw).map_err(|e| invalid("name", e.to_string()))?;
    let domain = i.domain.unwrap_or_else(|| names::default_domain(&nfc));
    let claim = Claim {
        id: None,
        name: &raw,
        domain: &domain,
        collector: i.collector,
        moves: true,
        adopt: i.adopt,
    };
    let (name, adopted) = claim::check(&app, &me, &claim).await?;
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
    if adopted {
        audit_adoption(&app, &me, id, &name, &domain);
    }
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
    let claim = Claim {
        id: Some(id),
        name: &e.name,
        domain: &e.domain,
        collector: e.collector,
        moves: current["domain"] != e.domain.as_str() || current["collector"] != json!(e.collector),
        adopt: i.adopt,
    };
    let (name, adopted) = claim::check(&app, &me, &claim).await?;
    e.name = name;
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
    if adopted {
        audit_adoption(&app, &me, id, &e.name, &e.domain);
    }
    Ok(Json(access::experiment(&app, &me, id)?))
}

/// Options of `DELETE /experiments/{id}`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct DeleteOptions {
    /// Delete even when sessions on unreachable devices could not be
    /// stopped (they are named in the answer and the audit log).
    #[serde(default)]
    pub force: bool,
}

/// A session that deleting the experiment could not stop.
fn unstopped(run: &Run, d: &RunDevice) -> serde_json::Value {
    json!({"run": run.id, "device": d.device, "session": d.session,
           "state": d.state, "reason": d.reason})
}

/// Deletes an experiment with its configurations and runs (owner/admin).
/// Sessions of its runs still on devices are stopped first, as
/// `POST /runs/{id}/stop` would; when a device cannot be reached the
/// experiment is kept (409 `sessions_not_stopped`) unless `force=true`.
#[utoipa::path(delete, path = "/api/v1/experiments/{id}", params(DeleteOptions),
    responses((status = 200, description = "deleted: {deleted, stopped_runs, not_stopped}"),
              (status = 409, description = "sessions_not_stopped: details.not_stopped")))]
pub async fn remove(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
    Q(opts): Q<DeleteOptions>,
) -> ApiResult<Json<serde_json::Value>> {
    let e = access::owned_experiment(&app, &me, id)?;
    let mut stopped_runs = Vec::new();
    let mut not_stopped = Vec::new();
    let mut left = Vec::new();
    let runs = app.db.with(|c| runs::list(c, id))?;
    for run in runs.iter().filter(|r| r.devices.iter().any(runs::is_live)) {
        let config = app
            .db
            .with(|c| configs::get(c, run.config))?
            .ok_or_else(|| not_found("configuration", run.config))?;
        let after = crate::runs::act(&app, run, &e, &config, Action::Stop).await?;
        record(
            &app.db,
            me.name(),
            "run.stop",
            &format!("run/{}", run.id),
            &format!(
                "{} -> {} (deleting experiment {})",
                run.state, after.state, e.name
            ),
        );
        let live: Vec<&RunDevice> = after.devices.iter().filter(|d| runs::is_live(d)).collect();
        if live.is_empty() {
            stopped_runs.push(run.id);
        }
        for d in live {
            not_stopped.push(unstopped(&after, d));
            left.push((after.id, d.device));
        }
    }
    if !not_stopped.is_empty() && !opts.force {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "sessions_not_stopped",
            format!(
                "experiment {} is kept: {} session(s) on its devices could not be stopped \
                 (see details.not_stopped); retry when the devices answer, or delete with \
                 ?force=true and stop them on the devices yourself",
                e.name,
                not_stopped.len()
            ),
        )
        .with_details(json!({"not_stopped": not_stopped, "stopped_runs": stopped_runs})));
    }
    // A run started while the others were being stopped is not deleted
    // behind its owner's back.
    let deleted = app.db.tx(|c| {
        if runs::live_sessions(c, id)?
            .into_iter()
            .any(|s| !left.contains(&s))
        {
            return Ok(false);
        }
        experiments::delete(c, id)?;
        Ok(true)
    })?;
    if !deleted {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "conflict",
            format!(
                "a run of experiment {} started meanwhile: delete again",
                e.name
            ),
        ));
    }
    let mut summary = e.name.clone();
    if !stopped_runs.is_empty() {
        summary.push_str(&format!("; stopped runs {stopped_runs:?}"));
    }
    if !not_stopped.is_empty() {
        summary.push_str(&format!(
            "; forced: sessions left on unreachable devices {}",
            serde_json::Value::from(not_stopped.clone())
        ));
        tracing::warn!(experiment = %e.name, sessions = %serde_json::Value::from(not_stopped.clone()),
            "experiment deleted with sessions that could not be stopped");
    }
    record(
        &app.db,
        me.name(),
        "experiment.delete",
        &format!("experiment/{id}"),
        &summary,
    );
    Ok(Json(json!({
        "deleted": id,
        "stopped_runs": stopped_runs,
        "not_stopped": not_stopped,
    })))
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
