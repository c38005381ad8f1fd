//! `/users` (admin; a user may change their own password) and `/tokens`
//! (a user's own API tokens; admins see and revoke everyone's).

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use httpkit::{ApiError, ApiResult};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{invalid, not_found, JsonBody, P};
use crate::app::App;
use crate::audit::record;
use crate::auth::caller::Me;
use crate::auth::{passwords, tokens};
use crate::db::users::{self, Role, User};

/// A new user.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewUser {
    /// Login name (`[A-Za-z0-9_.-]`, 1-64).
    pub username: String,
    /// Password (at least 8 characters).
    pub password: String,
    /// Role (default `user`).
    #[serde(default = "user_role")]
    pub role: Role,
}

fn user_role() -> Role {
    Role::User
}

/// Changes to a user.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserPatch {
    /// New password.
    #[serde(default)]
    pub password: Option<String>,
    /// New role (admin only).
    #[serde(default)]
    pub role: Option<Role>,
}

/// Whether a user name is acceptable.
pub fn valid_username(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 64
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-@".contains(&b))
}

async fn hash(app: &App, password: String) -> ApiResult<String> {
    app.hashes
        .run(move || passwords::hash(&password))
        .await
        .ok_or_else(super::session::busy)?
        .map_err(|e| invalid("password", e.to_string()))
}

/// Every user (admin).
#[utoipa::path(get, path = "/api/v1/users", responses((status = 200, body = [User])))]
pub async fn list(State(app): State<Arc<App>>, me: Me) -> ApiResult<Json<Vec<User>>> {
    me.require_admin()?;
    Ok(Json(app.db.with(users::list)?))
}

/// Creates a user (admin).
#[utoipa::path(post, path = "/api/v1/users", request_body = NewUser, responses((status = 201, body = User)))]
pub async fn create(
    State(app): State<Arc<App>>,
    me: Me,
    JsonBody(req): JsonBody<NewUser>,
) -> ApiResult<(StatusCode, Json<User>)> {
    me.require_admin()?;
    if !valid_username(&req.username) {
        return Err(invalid("username", "1-64 of [A-Za-z0-9_.-@]"));
    }
    let h = hash(&app, req.password).await?;
    let u = app
        .db
        .with(|c| users::create(c, &req.username, &h, req.role))?;
    record(
        &app.db,
        me.name(),
        "user.create",
        &format!("user/{}", u.id),
        &format!("{} ({})", u.username, u.role.as_str()),
    );
    Ok((StatusCode::CREATED, Json(u)))
}

/// Changes a password (admin, or the user themself) or a role (admin).
#[utoipa::path(patch, path = "/api/v1/users/{id}", request_body = UserPatch, responses((status = 200, body = User)))]
pub async fn patch(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
    JsonBody(req): JsonBody<UserPatch>,
) -> ApiResult<Json<User>> {
    if !(me.is_admin() || (me.user.id == id && req.role.is_none())) {
        return Err(ApiError::forbidden(
            "only administrators may change other users or roles",
        ));
    }
    let u = app
        .db
        .with(|c| users::get(c, id))?
        .ok_or_else(|| not_found("user", id))?;
    let mut changed = Vec::new();
    if let Some(p) = req.password {
        let h = hash(&app, p).await?;
        app.db.with(|c| users::set_password(c, id, &h))?;
        changed.push("password".to_owned());
    }
    if let Some(r) = req.role {
        app.db.with(|c| users::set_role(c, id, r))?;
        changed.push(format!("role {}", r.as_str()));
    }
    record(
        &app.db,
        me.name(),
        "user.update",
        &format!("user/{id}"),
        &format!("{}: {}", u.username, changed.join(", ")),
    );
    let u = app
        .db
        .with(|c| users::get(c, id))?
        .ok_or_else(|| not_found("user", id))?;
    Ok(Json(u))
}

/// Deletes a user (admin; not oneself).
#[utoipa::path(delete, path = "/api/v1/users/{id}", responses((status = 200)))]
pub async fn remove(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
) -> ApiResult<Json<serde_json::Value>> {
    me.require_admin()?;
    if id == me.user.id {
        return Err(ApiError::bad_request(
            "invalid_request",
            "you cannot delete yourself",
        ));
    }
    let u = app
        .db
        .with(|c| users::get(c, id))?
        .ok_or_else(|| not_found("user", id))?;
    app.db.with(|c| users::delete(c, id))?;
    record(
        &app.db,
        me.name(),
        "user.delete",
        &format!("user/{id}"),
        &u.username,
    );
    Ok(Json(serde_json::json!({"deleted": id})))
}

/// A new token's label.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    /// What it is for.
    pub name: String,
}

/// A created token: the secret is shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedToken {
    /// Token id.
    pub id: i64,
    /// Its label.
    pub name: String,
    /// `Authorization: Bearer <secret>`.
    pub secret: String,
}

/// The caller's tokens (admins: everyone's).
#[utoipa::path(get, path = "/api/v1/tokens", responses((status = 200, body = [tokens::TokenInfo])))]
pub async fn tokens(
    State(app): State<Arc<App>>,
    me: Me,
) -> ApiResult<Json<Vec<tokens::TokenInfo>>> {
    let who = (!me.is_admin()).then_some(me.user.id);
    Ok(Json(app.db.with(|c| tokens::list(c, who))?))
}

/// Creates a token acting as the caller.
#[utoipa::path(post, path = "/api/v1/tokens", request_body = NewToken, responses((status = 201, body = CreatedToken)))]
pub async fn create_token(
    State(app): State<Arc<App>>,
    me: Me,
    JsonBody(req): JsonBody<NewToken>,
) -> ApiResult<(StatusCode, Json<CreatedToken>)> {
    let name = req.name.trim().to_owned();
    if name.is_empty() || name.len() > 100 {
        return Err(invalid("name", "give a label of 1-100 characters"));
    }
    let (id, secret) = app.db.with(|c| tokens::create(c, me.user.id, &name))?;
    record(
        &app.db,
        me.name(),
        "token.create",
        &format!("token/{id}"),
        &name,
    );
    Ok((StatusCode::CREATED, Json(CreatedToken { id, name, secret })))
}

/// Revokes a token (own; admins any).
#[utoipa::path(delete, path = "/api/v1/tokens/{id}", responses((status = 200)))]
pub async fn revoke_token(
    State(app): State<Arc<App>>,
    me: Me,
    P(id): P<i64>,
) -> ApiResult<Json<serde_json::Value>> {
    let owner = app.db.with(|c| tokens::owner(c, id))?;
    match owner {
        Some(o) if o == me.user.id || me.is_admin() => {}
        _ => return Err(not_found("token", id)),
    }
    app.db.with(|c| tokens::delete(c, id))?;
    record(
        &app.db,
        me.name(),
        "token.delete",
        &format!("token/{id}"),
        "revoked",
    );
    Ok(Json(serde_json::json!({"deleted": id})))
}
