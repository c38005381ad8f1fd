//! `GET /audit` (admin).

use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use httpkit::ApiResult;
use serde::Deserialize;
use utoipa::IntoParams;

use super::Q;
use crate::app::App;
use crate::auth::caller::Me;
use crate::db::audit::{self, AuditEntry};

/// `?limit=N`.
#[derive(Debug, Deserialize, IntoParams)]
pub struct Limit {
    /// Most entries (default 100, at most 10 000).
    pub limit: Option<i64>,
}

/// The newest audit entries, newest first.
#[utoipa::path(get, path = "/api/v1/audit", params(Limit), responses((status = 200, body = [AuditEntry])))]
pub async fn audit(
    State(app): State<Arc<App>>,
    me: Me,
    Q(q): Q<Limit>,
) -> ApiResult<Json<Vec<AuditEntry>>> {
    me.require_admin()?;
    let n = q.limit.unwrap_or(100).clamp(1, 10_000);
    Ok(Json(app.db.with(|c| audit::newest(c, n))?))
}
