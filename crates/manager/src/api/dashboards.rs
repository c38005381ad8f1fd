//! `/experiments/{id}/dashboards[/{name}]`: an experiment's saved plots.
//! Members read them (as they read its streams); the owner and admins
//! save and delete them (as they change the experiment's settings). A
//! dashboard is a list of plot definitions (docs/manager.md, *Figures
//! out*), checked here so that every client that reads one back —
//! the run page, `streamgauge plot` — gets the format it expects.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use httpkit::ApiResult;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::{access, invalid, not_found, JsonBody, P};
use crate::app::App;
use crate::audit::record;
use crate::auth::caller::Me;
use crate::db::dashboards::{self, Dashboard};

/// Most plots on one dashboard.
const MAX_PLOTS: usize = 32;
/// Most characters of a dashboard's name.
const MAX_NAME: usize = 80;

/// A dashboard to save.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DashboardInput {
    /// Plot definitions, in page order.
    #[schema(value_type = Vec<Object>)]
    pub plots: Vec<Value>,
}

fn check_name(name: &str) -> ApiResult<()> {
    if name.trim().is_empty()
        || name.chars().count() > MAX_NAME
        || name.chars().any(char::is_control)
    {
        return Err(invalid(
            "name",
            format!("a dashboard's name is 1 to {MAX_NAME} characters without control characters"),
        ));
    }
    Ok(())
}

fn strings(v: &Value) -> Option<Vec<&str>> {
    v.as_array()?.iter().map(Value::as_str).collect()
}

/// What is wrong with plot definition `d` of experiment domain `domain`, if anything.
pub fn check_plot(d: &Value, domain: &str) -> Result<(), String> {
    let o = d.as_object().ok_or("a plot definition is a JSON object")?;
    const KEYS: [&str; 13] = [
        "version", "title", "domain", "stream", "fields", "y2", "senders", "from", "to", "time",
        "derive", "points", "timeaxis",
    ];
    if let Some(k) = o.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(format!(
            "unknown key {k:?} (the keys are {})",
            KEYS.join(", ")
        ));
    }
    if d["version"] != 1 {
        return Err("version must be 1".into());
    }
    match d["domain"].as_str() {
        Some(x) if x == domain || x.is_empty() => {}
        _ => return Err(format!("domain must be the experiment's ({domain:?})")),
    }
    if d["stream"].as_str().unwrap_or("").is_empty() {
        return Err("stream must name a stream".into());
    }
    let fields = strings(&d["fields"]).filter(|f| !f.is_empty() && f.iter().all(|x| !x.is_empty()));
    let Some(fields) = fields else {
        return Err("fields must be a non-empty list of field names".into());
    };
    if !strings(&d["y2"]).is_some_and(|y| y.iter().all(|f| fields.contains(f))) {
        return Err("y2 must list fields of the plot".into());
    }
    if !d["senders"]
        .as_array()
        .is_some_and(|s| s.iter().all(Value::is_i64))
    {
        return Err("senders must be a list of sender ids (empty: all)".into());
    }
    for k in ["title", "from", "to"] {
        if !d[k].is_string() {
            return Err(format!("{k} must be a string"));
        }
    }
    let one_of = |k: &str, allowed: &[&str]| {
        if d[k].as_str().is_some_and(|v| allowed.contains(&v)) {
            Ok(())
        } else {
            Err(format!("{k} must be one of {}", allowed.join(", ")))
        }
    };
    one_of("time", &["server", "client"])?;
    one_of("derive", &["none", "rate"])?;
    one_of("timeaxis", &["utc", "local", "relative"])?;
    if !d["points"]
        .as_u64()
        .is_some_and(|p| (1..=100_000).contains(&p))
    {
        return Err("points must be an integer from 1 to 100000".into());
    }
    Ok(())
}

/// An experiment's dashboards, the last saved first.
#[utoipa::path(get, path = "/api/v1/experiments/{id}/dashboards", responses((status = 200, body = [Dashboard])))]
pub async fn list(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
) -> ApiResult<Json<Vec<Dashboard>>> {
    access::experiment(&app, &me, id)?;
    Ok(Json(app.db.with(|c| dashboards::list(c, id))?))
}

/// Saves a dashboard under `name` (created or replaced; owner or admin).
#[utoipa::path(put, path = "/api/v1/experiments/{id}/dashboards/{name}", request_body = DashboardInput,
    responses((status = 200, body = Dashboard), (status = 400, description = "invalid_request naming the plot and what is wrong"),
              (status = 403, description = "a member who is not the owner")))]
pub async fn put(
    State(app): State<Arc<App>>,
    me: Me,
    P((id, name)): P<(i64, String)>,
    JsonBody(input): JsonBody<DashboardInput>,
) -> ApiResult<Json<Dashboard>> {
    let e = access::owned_experiment(&app, &me, id)?;
    check_name(&name)?;
    if input.plots.is_empty() || input.plots.len() > MAX_PLOTS {
        return Err(invalid(
            "plots",
            format!("a dashboard holds 1 to {MAX_PLOTS} plots"),
        ));
    }
    for (i, p) in input.plots.iter().enumerate() {
        check_plot(p, &e.domain).map_err(|m| invalid(&format!("plots.{i}"), m))?;
    }
    let text = Value::Array(input.plots).to_string();
    app.db
        .with(|c| dashboards::put(c, id, &name, &text, me.name()))?;
    record(
        &app.db,
        me.name(),
        "dashboard.save",
        &format!("experiment/{id}/dashboards/{name}"),
        &e.name,
    );
    let d = app
        .db
        .with(|c| dashboards::get(c, id, &name))?
        .ok_or_else(|| not_found("dashboard", &name))?;
    Ok(Json(d))
}

/// Deletes a dashboard (owner or admin).
#[utoipa::path(delete, path = "/api/v1/experiments/{id}/dashboards/{name}", responses((status = 204)))]
pub async fn remove(
    State(app): State<Arc<App>>,
    me: Me,
    P((id, name)): P<(i64, String)>,
) -> ApiResult<StatusCode> {
    let e = access::owned_experiment(&app, &me, id)?;
    if !app.db.with(|c| dashboards::delete(c, id, &name))? {
        return Err(not_found("dashboard", &name));
    }
    record(
        &app.db,
        me.name(),
        "dashboard.delete",
        &format!("experiment/{id}/dashboards/{name}"),
        &e.name,
    );
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn good() -> Value {
        json!({"version":1,"title":"t","domain":"d","stream":"s","fields":["a","b"],"y2":["b"],
               "senders":[],"from":"2026-11-28T21:02:43.250Z","to":"2026-11-28T21:07:43.250Z",
               "time":"server","derive":"rate","points":2000,"timeaxis":"utc"})
    }

    #[test]
    fn definitions_are_checked_key_by_key() {
        assert_eq!(check_plot(&good(), "d"), Ok(()));
        let bad = |k: &str, v: Value| {
            let mut d = good();
            d[k] = v;
            check_plot(&d, "d").unwrap_err()
        };
        assert!(bad("version", json!(2)).contains("version"));
        assert!(bad("domain", json!("other")).contains("experiment's"));
        assert!(bad("fields", json!([])).contains("fields"));
        assert!(bad("y2", json!(["c"])).contains("y2"));
        assert!(bad("senders", json!(["x"])).contains("senders"));
        assert!(bad("derive", json!("log")).contains("none, rate"));
        assert!(bad("timeaxis", json!("tai")).contains("relative"));
        assert!(bad("points", json!(0)).contains("points"));
        assert!(bad("extra", json!(1)).contains("unknown key"));
        assert!(
            check_name("").is_err()
                && check_name("a\nb").is_err()
                && check_name("main view").is_ok()
        );
    }
}
