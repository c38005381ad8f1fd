//! Who may hold a domain. A domain belongs to one experiment, whatever
//! its collector (devices carry it to the collectors they report to):
//! nobody may name a domain another experiment holds (unique in the
//! database), nor one the experiment's collector already has data for, unless an admin adopts it explicitly (`"adopt": true`, audited).
//! The answers never name the other experiment: it is another tenant's.

use axum::http::StatusCode;
use httpkit::{ApiError, ApiResult};

use super::invalid;
use crate::app::App;
use crate::auth::caller::Me;
use crate::db::devices::{self, Device, Kind};
use crate::db::experiments;
use crate::devices::relay_path::{upstream_url, Resource};
use crate::devices::{collector, DeviceError};
use crate::names;

/// What an experiment asks to hold.
pub struct Claim<'a> {
    /// The experiment (None: being created).
    pub id: Option<i64>,
    /// Its name as sent.
    pub name: &'a str,
    /// Its domain.
    pub domain: &'a str,
    /// Its collector.
    pub collector: Option<i64>,
    /// Whether the domain or collector is new (create, or changed by an edit).
    pub moves: bool,
    /// An admin adopts a domain that already has data.
    pub adopt: bool,
}

/// 409 with `code`.
fn conflict(code: &str, message: String) -> ApiError {
    ApiError::new(StatusCode::CONFLICT, code, message)
}

/// Checks the claim; answers the NFC name to store and whether data
/// already on the collector was adopted.
pub async fn check(app: &App, me: &Me, c: &Claim<'_>) -> ApiResult<(String, bool)> {
    let name = names::name(c.name).map_err(|e| invalid("name", e.to_string()))?;
    if !names::valid_domain(c.domain) {
        return Err(invalid(
            "domain",
            format!("1 to {} of [A-Za-z0-9_]", names::MAX_DOMAIN_LEN),
        ));
    }
    if c.adopt && !me.is_admin() {
        return Err(ApiError::forbidden(
            "only an admin may adopt a domain that already has data",
        ));
    }
    let device = match c.collector {
        Some(id) => match app.db.with(|db| devices::get(db, id))? {
            Some(d) if d.kind == Kind::Collector => Some(d),
            _ => return Err(invalid("collector", format!("no collector device {id}"))),
        },
        None => None,
    };
    if app.db.with(|db| experiments::name_held(db, &name, c.id))? {
        return Err(conflict(
            "conflict",
            format!("an experiment is already called {name:?}: choose another name"),
        ));
    }
    if !c.moves {
        return Ok((name, false));
    }
    if app
        .db
        .with(|db| experiments::domain_held(db, c.domain, c.id))?
    {
        return Err(conflict(
            "domain_taken",
            format!(
                "another experiment holds domain {:?}: choose another \
                 domain (or another experiment name)",
                c.domain
            ),
        ));
    }
    let Some(d) = device else {
        return Ok((name, false));
    };
    let has_data = collector_has(app, &d, c.domain).await?;
    if has_data && !c.adopt {
        return Err(conflict(
            "domain_has_data",
            format!(
                "collector {} already has data in domain {:?}: choose another domain, or ask \
                 an admin to adopt it (\"adopt\": true)",
                d.name, c.domain
            ),
        ));
    }
    Ok((name, has_data))
}

/// Whether the collector has data in `domain` (its query API answers 200
/// for it, 404 when not); anything else is 502, as nothing can be decided.
async fn collector_has(app: &App, d: &Device, domain: &str) -> ApiResult<bool> {
    let url = upstream_url(&d.base_url(), domain, &Resource::Domain, None)
        .map_err(|e| invalid("domain", e.to_string()))?;
    let unknown = |why: String| {
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            "device_unreachable",
            format!(
                "cannot tell whether collector {} already has data in domain {domain:?} \
                 ({why}): retry when it answers with the manager's read credential",
                d.name
            ),
        )
    };
    let resp = collector::get(app, d, &url, Vec::new())
        .await
        .map_err(|e| match e {
            DeviceError::Transport(_) => super::data::refused_transport(&e),
            other => unknown(other.to_string()),
        })?;
    match resp.status().as_u16() {
        200 => Ok(true),
        404 => Ok(false),
        s => Err(unknown(format!("it answered {s}"))),
    }
}
