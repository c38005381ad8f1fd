//! Users and their roles.

use rusqlite::{Connection, OptionalExtension, Row};
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

fn user(r: &Row<'_>) -> rusqlite::Result<User> {
    Ok(User {
        id: r.get(0)?,
        username: r.get(1)?,
        role: Role::parse(&r.get::<_, String>(2)?),
    })
}

/// Creates a user with an already computed hash.
pub fn create(c: &Connection, username: &str, hash: &str, role: Role) -> rusqlite::Result<User> {
    c.execute(
        "INSERT INTO users (username, password_hash, role, created_unix_s) VALUES (?1, ?2, ?3, ?4)",
        (username, hash, role.as_str(), crate::now_s()),
    )?;
    Ok(User {
        id: c.last_insert_rowid(),
        username: username.to_owned(),
        role,
    })
}

/// How many users exist (0: first start, bootstrap the admin).
pub fn count(c: &Connection) -> rusqlite::Result<i64> {
    c.query_row("SELECT count(*) FROM users", [], |r| r.get(0))
}

/// Every user, by name.
pub fn list(c: &Connection) -> rusqlite::Result<Vec<User>> {
    let mut s = c.prepare("SELECT id, username, role FROM users ORDER BY username")?;
    let rows = s.query_map([], user)?;
    rows.collect()
}

/// One user by id.
pub fn get(c: &Connection, id: i64) -> rusqlite::Result<Option<User>> {
    c.query_row(
        "SELECT id, username, role FROM users WHERE id = ?1",
        [id],
        user,
    )
    .optional()
}

/// One user by name.
pub fn by_name(c: &Connection, username: &str) -> rusqlite::Result<Option<User>> {
    c.query_row(
        "SELECT id, username, role FROM users WHERE username = ?1",
        [username],
        user,
    )
    .optional()
}

/// The user and their stored hash, for login.
pub fn credentials(c: &Connection, username: &str) -> rusqlite::Result<Option<(User, String)>> {
    c.query_row(
        "SELECT id, username, role, password_hash FROM users WHERE username = ?1",
        [username],
        |r| Ok((user(r)?, r.get(3)?)),
    )
    .optional()
}

/// Replaces a user's password hash (and ends their sessions, so a
/// changed password locks out whoever had the old one).
pub fn set_password(c: &Connection, id: i64, hash: &str) -> rusqlite::Result<usize> {
    let n = c.execute(
        "UPDATE users SET password_hash = ?2 WHERE id = ?1",
        (id, hash),
    )?;
    c.execute("DELETE FROM web_sessions WHERE user_id = ?1", [id])?;
    Ok(n)
}

/// Changes a user's role.
pub fn set_role(c: &Connection, id: i64, role: Role) -> rusqlite::Result<usize> {
    c.execute(
        "UPDATE users SET role = ?2 WHERE id = ?1",
        (id, role.as_str()),
    )
}

/// Deletes a user (their sessions and tokens go with them).
pub fn delete(c: &Connection, id: i64) -> rusqlite::Result<usize> {
    c.execute("DELETE FROM users WHERE id = ?1", [id])
}
