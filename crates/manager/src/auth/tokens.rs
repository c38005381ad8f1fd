//! API tokens for scripts and control frameworks: `Authorization: Bearer
//! sgm_<64 hex>`. The secret is shown once at creation; the database keeps
//! its SHA-256 digest, and a token acts as its user.

use crate::db::{Conn, Result};
use serde::Serialize;
use utoipa::ToSchema;

use crate::db::users::{self, User};

/// A token as listed (never the secret).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TokenInfo {
    /// Database id.
    pub id: i64,
    /// The owner's label.
    pub name: String,
    /// Owner's user name.
    pub user: String,
    /// Created, Unix seconds.
    pub created_unix_s: i64,
    /// Last used, Unix seconds.
    pub last_used_unix_s: Option<i64>,
}

/// Creates a token for `user`; returns `(id, secret)`.
pub fn create(c: &Conn<'_>, user: i64, name: &str) -> Result<(i64, String)> {
    let secret = format!("sgm_{}", super::random_hex(32));
    let id = c.insert(
        "INSERT INTO api_tokens (user_id, name, secret_hash, created_unix_s) VALUES (?1, ?2, ?3, ?4)
         RETURNING id",
        (user, name, super::digest(&secret), crate::now_s()),
    )?;
    Ok((id, secret))
}

/// The user a presented secret acts as.
pub fn lookup(c: &Conn<'_>, secret: &str) -> Result<Option<User>> {
    let uid: Option<(i64, i64)> = c.query_opt(
        "SELECT id, user_id FROM api_tokens WHERE secret_hash = ?1",
        [super::digest(secret)],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let Some((id, uid)) = uid else {
        return Ok(None);
    };
    c.execute(
        "UPDATE api_tokens SET last_used_unix_s = ?2 WHERE id = ?1",
        (id, crate::now_s()),
    )?;
    users::get(c, uid)
}

/// Tokens of `user` (`None`: everyone's).
pub fn list(c: &Conn<'_>, user: Option<i64>) -> Result<Vec<TokenInfo>> {
    c.query_map(
        "SELECT t.id, t.name, u.username, t.created_unix_s, t.last_used_unix_s
         FROM api_tokens t JOIN users u ON u.id = t.user_id
         WHERE CAST(?1 AS BIGINT) IS NULL OR t.user_id = ?1 ORDER BY t.id",
        [user],
        |r| {
            Ok(TokenInfo {
                id: r.get(0)?,
                name: r.get(1)?,
                user: r.get(2)?,
                created_unix_s: r.get(3)?,
                last_used_unix_s: r.get(4)?,
            })
        },
    )
}

/// The owner of a token.
pub fn owner(c: &Conn<'_>, id: i64) -> Result<Option<i64>> {
    c.query_opt("SELECT user_id FROM api_tokens WHERE id = ?1", [id], |r| {
        r.get(0)
    })
}

/// Revokes a token.
pub fn delete(c: &Conn<'_>, id: i64) -> Result<u64> {
    c.execute("DELETE FROM api_tokens WHERE id = ?1", [id])
}
