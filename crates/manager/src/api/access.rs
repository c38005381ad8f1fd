//! Per-experiment authorisation. An experiment the caller may not see is
//! answered exactly like one that does not exist (404 `not_found`); its
//! configurations and runs inherit that.

use httpkit::{ApiError, ApiResult};

use crate::app::App;
use crate::auth::caller::Me;
use crate::db::configs::{self, Config};
use crate::db::experiments::{self, Experiment};
use crate::db::runs::{self, Run};

/// The experiment, if the caller owns it, belongs to it or is an admin.
pub fn experiment(app: &App, me: &Me, id: i64) -> ApiResult<Experiment> {
    let found = app.db.with(|c| {
        let Some(e) = experiments::get(c, id)? else {
            return Ok(None);
        };
        let ok = me.is_admin() || experiments::is_member(c, id, me.user.id)?;
        Ok(ok.then_some(e))
    })?;
    found.ok_or_else(|| super::not_found("experiment", id))
}

/// The experiment, if the caller may also change its settings and
/// members (owner or admin; members get 403).
pub fn owned_experiment(app: &App, me: &Me, id: i64) -> ApiResult<Experiment> {
    let e = experiment(app, me, id)?;
    if me.is_admin() || e.owner_id == me.user.id {
        Ok(e)
    } else {
        Err(ApiError::forbidden(format!(
            "only the owner ({}) or an admin may change experiment {}",
            e.owner, e.name
        )))
    }
}

/// A configuration and its experiment, if the caller may see them.
pub fn config(app: &App, me: &Me, id: i64) -> ApiResult<(Config, Experiment)> {
    let c = app
        .db
        .with(|c| configs::get(c, id))?
        .ok_or_else(|| super::not_found("configuration", id))?;
    let e = experiment(app, me, c.experiment).map_err(|_| super::not_found("configuration", id))?;
    Ok((c, e))
}

/// A run and its experiment, if the caller may see them.
pub fn run(app: &App, me: &Me, id: i64) -> ApiResult<(Run, Experiment)> {
    let r = app
        .db
        .with(|c| runs::get(c, id))?
        .ok_or_else(|| super::not_found("run", id))?;
    let e = experiment(app, me, r.experiment).map_err(|_| super::not_found("run", id))?;
    Ok((r, e))
}
