//! The middleware that identifies the caller of every request, and the
//! [`Me`] extractor handlers take.
//!
//! Order of the rules (spec/manager-api.md, *Authentication*):
//! 1. `Authorization: Bearer <secret>`: an API token; an unknown one is
//!    401 `invalid_token` at once. No CSRF header needed (a browser never
//!    adds this header by itself).
//! 2. The cookie `sg_session`: a live session; a state-changing request
//!    must carry its `X-CSRF-Token` (403 `csrf_failed`), except login
//!    itself. An expired one makes [`Me`] answer 401 `session_expired`.
//! 3. Nothing: [`Me`] answers 401 `unauthenticated`.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::header::{AUTHORIZATION, COOKIE};
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use httpkit::{ApiError, ApiResult};

use super::sessions::{self, Lookup};
use super::tokens;
use crate::app::App;
use crate::db::users::{Role, User};

/// The CSRF header's name.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// An identified caller.
#[derive(Debug, Clone)]
pub struct Me {
    /// The user.
    pub user: User,
    /// Whether identified by an API token (else by a browser session).
    pub by_token: bool,
}

impl Me {
    /// Whether they are an administrator.
    pub fn is_admin(&self) -> bool {
        self.user.role == Role::Admin
    }

    /// 403 `forbidden` unless an administrator.
    pub fn require_admin(&self) -> ApiResult<()> {
        if self.is_admin() {
            Ok(())
        } else {
            Err(ApiError::forbidden(
                "only administrators may do this: ask one (role 'admin')",
            ))
        }
    }

    /// The user's name (audit log).
    pub fn name(&self) -> &str {
        &self.user.username
    }
}

/// What the middleware found.
#[derive(Debug, Clone)]
enum Found {
    Me(Me),
    Expired,
    Nobody,
}

/// Middleware: identifies the caller (see the module's rules).
pub async fn identify(State(app): State<Arc<App>>, mut req: Request, next: Next) -> Response {
    let found = match find(&app, &req) {
        Ok(f) => f,
        Err(e) => return e.into_response(),
    };
    req.extensions_mut().insert(found);
    next.run(req).await
}

fn find(app: &App, req: &Request) -> ApiResult<Found> {
    if let Some(v) = req.headers().get(AUTHORIZATION) {
        let text = v.to_str().unwrap_or("");
        let secret = text
            .split_once(' ')
            .filter(|(s, _)| s.eq_ignore_ascii_case("bearer"))
            .map(|(_, t)| t.trim())
            .unwrap_or("");
        let user = app.db.with(|c| tokens::lookup(c, secret))?;
        return match user {
            Some(user) => Ok(Found::Me(Me {
                user,
                by_token: true,
            })),
            None => Err(ApiError::unauthorized(
                "invalid_token",
                "the API token is unknown or was revoked: create one with POST /api/v1/tokens",
            )),
        };
    }
    let cookie = req
        .headers()
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(sessions::from_cookie_header);
    let Some(id) = cookie else {
        return Ok(Found::Nobody);
    };
    match app.db.with(|c| sessions::lookup(c, id))? {
        Lookup::Valid { user, csrf } => {
            let exempt = req.uri().path() == "/api/v1/login";
            if httpkit::guard::is_state_changing(req.method()) && !exempt {
                let sent = req
                    .headers()
                    .get(CSRF_HEADER)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                if !super::same(sent, &csrf) {
                    return Err(ApiError::new(
                        axum::http::StatusCode::FORBIDDEN,
                        "csrf_failed",
                        "state-changing requests with a session cookie must carry the header \
                         X-CSRF-Token with the csrf_token from login (or GET /api/v1/session)",
                    ));
                }
            }
            Ok(Found::Me(Me {
                user,
                by_token: false,
            }))
        }
        Lookup::Expired => Ok(Found::Expired),
        Lookup::Unknown => Ok(Found::Nobody),
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Me {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Me, ApiError> {
        match parts.extensions.get::<Found>() {
            Some(Found::Me(me)) => Ok(me.clone()),
            Some(Found::Expired) => Err(ApiError::unauthorized(
                "session_expired",
                "your session expired: log in again",
            )),
            _ => Err(ApiError::unauthorized(
                "unauthenticated",
                "log in (POST /api/v1/login) or send 'Authorization: Bearer <API token>'",
            )),
        }
    }
}
