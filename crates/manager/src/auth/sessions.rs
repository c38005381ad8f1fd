//! Browser sessions: the cookie `sg_session` carries a random id, the
//! database its digest, the owner, the CSRF token and the expiry.
//!
//! An expired session is kept (answered 401 `session_expired`, so the
//! page can say why) until it is a day past its expiry.

use crate::db::users::{self, User};
use crate::db::{Conn, Result};

/// The cookie's name.
pub const COOKIE: &str = "sg_session";

/// What a presented session id is.
#[derive(Debug, Clone)]
pub enum Lookup {
    /// A live session of `user`, whose requests must carry `csrf`.
    Valid {
        /// The user.
        user: User,
        /// The session's CSRF token.
        csrf: String,
    },
    /// A session that existed and expired.
    Expired,
    /// Not a session (never was, logged out, or purged).
    Unknown,
}

/// Starts a session for `user`; returns `(cookie value, csrf token)`.
pub fn create(c: &Conn<'_>, user: i64, ttl_s: i64) -> Result<(String, String)> {
    let id = super::random_hex(32);
    let csrf = super::random_hex(32);
    let now = crate::now_s();
    c.execute(
        "INSERT INTO web_sessions (id_hash, user_id, csrf, created_unix_s, expires_unix_s)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        (super::digest(&id), user, &csrf, now, now + ttl_s),
    )?;
    Ok((id, csrf))
}

/// Looks up a cookie value.
pub fn lookup(c: &Conn<'_>, id: &str) -> Result<Lookup> {
    let row: Option<(i64, String, i64)> = c.query_opt(
        "SELECT user_id, csrf, expires_unix_s FROM web_sessions WHERE id_hash = ?1",
        [super::digest(id)],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let Some((uid, csrf, expires)) = row else {
        return Ok(Lookup::Unknown);
    };
    if expires <= crate::now_s() {
        return Ok(Lookup::Expired);
    }
    Ok(match users::get(c, uid)? {
        Some(user) => Lookup::Valid { user, csrf },
        None => Lookup::Unknown,
    })
}

/// Ends a session (logout).
pub fn delete(c: &Conn<'_>, id: &str) -> Result<()> {
    c.execute(
        "DELETE FROM web_sessions WHERE id_hash = ?1",
        [super::digest(id)],
    )?;
    Ok(())
}

/// Forgets sessions more than a day past their expiry.
pub fn purge(c: &Conn<'_>) -> Result<u64> {
    c.execute(
        "DELETE FROM web_sessions WHERE expires_unix_s < ?1",
        [crate::now_s() - 86_400],
    )
}

/// The session id in a `Cookie` header, if any.
pub fn from_cookie_header(header: &str) -> Option<&str> {
    header
        .split(';')
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.trim())
        .filter(|v| !v.is_empty())
}

/// The `Set-Cookie` value starting a session.
pub fn set_cookie(id: &str, ttl_s: i64, secure: bool) -> String {
    format!(
        "{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/; Max-Age={ttl_s}{}",
        if secure { "; Secure" } else { "" }
    )
}

/// The `Set-Cookie` value ending it in the browser.
pub fn clear_cookie(secure: bool) -> String {
    format!(
        "{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0{}",
        if secure { "; Secure" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookie_parsing() {
        assert_eq!(from_cookie_header("a=1; sg_session=abc; b=2"), Some("abc"));
        assert_eq!(from_cookie_header("a=1"), None);
        assert_eq!(from_cookie_header("sg_session="), None);
        let c = set_cookie("x", 60, true);
        assert!(c.contains("HttpOnly") && c.contains("SameSite=Strict") && c.ends_with("Secure"));
    }
}
