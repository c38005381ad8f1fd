//! `POST /login`, `POST /logout`, `GET /session`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::header::{COOKIE, SET_COOKIE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use httpkit::{ApiError, ApiResult};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{JsonBody, Peer};
use crate::app::App;
use crate::auth::caller::Me;
use crate::auth::{passwords, sessions};
use crate::db::users::{self, User};

/// Login request.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginRequest {
    /// User name.
    pub username: String,
    /// Password.
    pub password: String,
}

/// The logged-in user and the CSRF token their state-changing requests
/// must carry (`X-CSRF-Token`); `null` for API-token callers.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionInfo {
    /// The user.
    pub user: User,
    /// The session's CSRF token.
    pub csrf_token: Option<String>,
}

/// Longest a login waits for its hash before 503 `busy` (well within the
/// request timeout, so the answer says why).
const HASH_WAIT: std::time::Duration = std::time::Duration::from_secs(15);

/// 503 `busy`: too many logins queued for the hash threads.
pub fn busy() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "busy",
        "too many logins at once: try again in a few seconds",
    )
    .with_details(serde_json::json!({ "retry_after_s": 5 }))
}

/// Checks the password (rate limited) and starts a session.
#[utoipa::path(post, path = "/api/v1/login", request_body = LoginRequest,
    responses((status = 200, body = SessionInfo), (status = 401, description = "invalid_credentials"),
              (status = 429, description = "rate_limited, details.retry_after_s")))]
pub async fn login(
    State(app): State<Arc<App>>,
    Peer(addr): Peer,
    JsonBody(req): JsonBody<LoginRequest>,
) -> ApiResult<Response> {
    // Reserved before hashing: parallel guesses cannot all pass the check.
    let attempt = app.limiter.reserve(&req.username, addr).map_err(|wait| {
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!("too many failed logins: try again in {wait} s"),
        )
        .with_details(serde_json::json!({ "retry_after_s": wait }))
    })?;
    // On the hash threads: a fixed few hashes (19 MiB each) at a time.
    let app2 = Arc::clone(&app);
    let name = req.username.clone();
    let job = app.hashes.run(move || {
        let row = app2.db.with(|c| users::credentials(c, &name))?;
        Ok::<_, ApiError>(match row {
            Some((user, hash)) => passwords::verify(&req.password, &hash).then_some(user),
            None => {
                // Same work for an unknown name as for a wrong password.
                let _ = passwords::verify(&req.password, passwords::decoy());
                None
            }
        })
    });
    let Some(found) = tokio::time::timeout(HASH_WAIT, job).await.ok().flatten() else {
        // Not checked: not a failure of this user.
        attempt.abandon();
        return Err(busy());
    };
    let found = found?;
    let Some(user) = found else {
        tracing::info!(username = %req.username, ?addr, "login failed");
        return Err(ApiError::unauthorized(
            "invalid_credentials",
            "unknown user name or wrong password",
        ));
    };
    attempt.succeeded();
    let ttl = app.config.session_ttl.as_secs() as i64;
    let (id, csrf) = app.db.with(|c| sessions::create(c, user.id, ttl))?;
    crate::audit::record(
        &app.db,
        &user.username,
        "session.login",
        &format!("user/{}", user.id),
        "logged in",
    );
    let cookie = sessions::set_cookie(&id, ttl, app.config.secure_cookies);
    let body = SessionInfo {
        user,
        csrf_token: Some(csrf),
    };
    Ok(([(SET_COOKIE, cookie)], Json(body)).into_response())
}

/// Ends the caller's session.
#[utoipa::path(post, path = "/api/v1/logout", responses((status = 200)))]
pub async fn logout(
    State(app): State<Arc<App>>,
    me: Me,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let id = headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(sessions::from_cookie_header)
        .map(str::to_owned);
    if let Some(id) = id {
        app.db.with(|c| sessions::delete(c, &id))?;
    }
    crate::audit::record(
        &app.db,
        me.name(),
        "session.logout",
        &format!("user/{}", me.user.id),
        "logged out",
    );
    let cookie = sessions::clear_cookie(app.config.secure_cookies);
    Ok((
        [(SET_COOKIE, cookie)],
        Json(serde_json::json!({"logged_out": true})),
    )
        .into_response())
}

/// The caller and their CSRF token (a reloaded page gets it back).
#[utoipa::path(get, path = "/api/v1/session",
    responses((status = 200, body = SessionInfo), (status = 401, description = "unauthenticated or session_expired")))]
pub async fn current(
    State(app): State<Arc<App>>,
    me: Me,
    headers: HeaderMap,
) -> ApiResult<Json<SessionInfo>> {
    let csrf = if me.by_token {
        None
    } else {
        let id = headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(sessions::from_cookie_header)
            .map(str::to_owned)
            .unwrap_or_default();
        match app.db.with(|c| sessions::lookup(c, &id))? {
            sessions::Lookup::Valid { csrf, .. } => Some(csrf),
            _ => None,
        }
    };
    Ok(Json(SessionInfo {
        user: me.user,
        csrf_token: csrf,
    }))
}
