//! Users and their roles.

use super::{Conn, Result, Row};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What a user may do beyond their own experiments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Sees and controls everything, manages users and devices.
    Admin,
    /// Sees devices, controls the experiments they own or belong to.
    User,
}

impl Role {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::User => "user",
        }
    }

    /// Parses a stored name (anything unknown is the least privileged).
    pub fn parse(s: &str) -> Role {
        if s == "admin" {
            Role::Admin
        } else {
            Role::User
        }
    }
}

/// A user as the API shows it (never the password hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct User {
    /// Database id.
    pub id: i64,
    /// Login name.
    pub username: String,
    /// Role.
    pub role: Role,
}

fn user(r: &Row) -> Result<User> {
    Ok(User {
        id: r.get(0)?,
        username: r.get(1)?,
        role: Role::parse(&r.get::<String>(2)?),
    })
}

/// Creates a user with an already computed hash.
pub fn create(c: &Conn<'_>, username: &str, hash: &str, role: Role) -> Result<User> {
    let id = c.insert(
        "INSERT INTO users (username, password_hash, role, created_unix_s) VALUES (?1, ?2, ?3, ?4)
         RETURNING id",
        (username, hash, role.as_str(), crate::now_s()),
    )?;
    Ok(User {
        id,
        username: username.to_owned(),
        role,
    })
}

/// How many users exist (0: first start, bootstrap the admin).
pub fn count(c: &Conn<'_>) -> Result<i64> {
    c.query_one("SELECT count(*) FROM users", ())
}

/// Every user, by name.
pub fn list(c: &Conn<'_>) -> Result<Vec<User>> {
    c.query_map(
        "SELECT id, username, role FROM users ORDER BY username",
        (),
        user,
    )
}

/// One user by id.
pub fn get(c: &Conn<'_>, id: i64) -> Result<Option<User>> {
    c.query_opt(
        "SELECT id, username, role FROM users WHERE id = ?1",
        [id],
        user,
    )
}

/// One user by name.
pub fn by_name(c: &Conn<'_>, username: &str) -> Result<Option<User>> {
    c.query_opt(
        "SELECT id, username, role FROM users WHERE username = ?1",
        [username],
        user,
    )
}

/// The user and their stored hash, for login.
pub fn credentials(c: &Conn<'_>, username: &str) -> Result<Option<(User, String)>> {
    c.query_opt(
        "SELECT id, username, role, password_hash FROM users WHERE username = ?1",
        [username],
        |r| Ok((user(r)?, r.get(3)?)),
    )
}

/// Replaces a user's password hash (and ends their sessions, so a
/// changed password locks out whoever had the old one).
pub fn set_password(c: &Conn<'_>, id: i64, hash: &str) -> Result<u64> {
    let n = c.execute(
        "UPDATE users SET password_hash = ?2 WHERE id = ?1",
        (id, hash),
    )?;
    c.execute("DELETE FROM web_sessions WHERE user_id = ?1", [id])?;
    Ok(n)
}

/// Changes a user's role.
pub fn set_role(c: &Conn<'_>, id: i64, role: Role) -> Result<u64> {
    c.execute(
        "UPDATE users SET role = ?2 WHERE id = ?1",
        (id, role.as_str()),
    )
}

/// Deletes a user (their sessions and tokens go with them).
pub fn delete(c: &Conn<'_>, id: i64) -> Result<u64> {
    c.execute("DELETE FROM users WHERE id = ?1", [id])
}
