//! Who is calling, and what they may do.
//!
//! A component that has a token file gives the stack an [`Authenticator`]
//! that maps a bearer token to its [`Grants`]. The middleware
//! ([`authenticate`]) runs before every handler and stores a [`Caller`] in
//! the request; handlers take `caller: Caller` as an argument and ask it
//! (`caller.require_read(domain)?`, `caller.require_control()?`).
//!
//! The rule, the same for every endpoint of the project:
//!
//! | token file | request | caller |
//! |---|---|---|
//! | yes | valid `Authorization: Bearer <token>` | that token's grants |
//! | yes | no token, or an unknown one | refused, 401 |
//! | no | from loopback | may do everything (local administration) |
//! | no | from elsewhere, `public` set | may read everything, control nothing |
//! | no | from elsewhere | refused, 401 |

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::{ApiError, ApiResult};

/// A domain name or a glob over domain names (`*` any run, `?` one
/// character), as written in a token file's read grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainPattern(String);

impl DomainPattern {
    /// A pattern (no validation: any text is a pattern).
    pub fn new(pattern: impl Into<String>) -> DomainPattern {
        DomainPattern(pattern.into())
    }

    /// The pattern that matches every domain.
    pub fn any() -> DomainPattern {
        DomainPattern("*".into())
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `domain` matches.
    pub fn matches(&self, domain: &str) -> bool {
        glob(self.0.as_bytes(), domain.as_bytes())
    }
}

/// Iterative glob match with single-star backtracking (linear in practice,
/// never exponential).
fn glob(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(&c) if c == b'?' || c == s[si] => {
                pi += 1;
                si += 1;
            }
            _ => match star {
                Some((sp, ss)) => {
                    pi = sp + 1;
                    si = ss + 1;
                    star = Some((sp, ss + 1));
                }
                None => return false,
            },
        }
    }
    p[pi.min(p.len())..].iter().all(|&c| c == b'*')
}

/// What one token (or an anonymous caller) may do over HTTP.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    /// Domains whose data it may read (query API, discovery).
    pub read: Vec<DomainPattern>,
    /// Whether it may change state (server `/control`, proxy pause/resume,
    /// capture sessions…).
    pub control: bool,
}

impl Grants {
    /// Everything.
    pub fn all() -> Grants {
        Grants {
            read: vec![DomainPattern::any()],
            control: true,
        }
    }

    /// Read everything, control nothing.
    pub fn read_all() -> Grants {
        Grants {
            read: vec![DomainPattern::any()],
            control: false,
        }
    }
}

/// Maps a presented token to its grants (`None`: not a token we know).
/// Implementations compare in constant time per candidate (digests).
pub trait Authenticator: Send + Sync + 'static {
    /// The token's grants, or `None` when it is unknown. A token that is
    /// known but grants nothing over HTTP (collection only) returns empty
    /// grants, so the caller gets 403 rather than 401.
    fn grants(&self, token: &str) -> Option<Grants>;
}

/// How a listener decides who a caller is.
#[derive(Clone, Default)]
pub struct Access {
    /// Token check; `None`: no token file (loopback is trusted).
    pub authenticator: Option<Arc<dyn Authenticator>>,
    /// Without a token file, let non-loopback callers read (`--http-public`).
    pub public: bool,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("authenticator", &self.authenticator.is_some())
            .field("public", &self.public)
            .finish()
    }
}

/// The identified caller of one request.
#[derive(Debug, Clone)]
pub struct Caller {
    /// What it may do.
    grants: Arc<Grants>,
    /// Whether it was identified by a token (for messages).
    by_token: bool,
}

impl Caller {
    /// A caller that may do everything (no authentication configured and
    /// a loopback peer, or tests).
    pub fn anyone() -> Caller {
        Caller {
            grants: Arc::new(Grants::all()),
            by_token: false,
        }
    }

    /// A caller with these grants.
    pub fn with_grants(grants: Grants, by_token: bool) -> Caller {
        Caller {
            grants: Arc::new(grants),
            by_token,
        }
    }

    /// Its grants.
    pub fn grants(&self) -> &Grants {
        &self.grants
    }

    /// Whether it may read `domain`.
    pub fn may_read(&self, domain: &str) -> bool {
        self.grants.read.iter().any(|p| p.matches(domain))
    }

    /// Whether it may read at least one domain (server-wide read-only
    /// views such as `/metrics`).
    pub fn may_read_any(&self) -> bool {
        !self.grants.read.is_empty()
    }

    /// 403 unless it may read `domain`.
    pub fn require_read(&self, domain: &str) -> ApiResult<()> {
        if self.may_read(domain) {
            return Ok(());
        }
        Err(ApiError::forbidden(format!(
            "this {} may not read domain '{domain}': give it a read grant for the domain \
             in the token file (third column 'read')",
            self.who()
        )))
    }

    /// 403 unless it may read something.
    pub fn require_read_any(&self) -> ApiResult<()> {
        if self.may_read_any() {
            return Ok(());
        }
        Err(ApiError::forbidden(format!(
            "this {} may not read anything: give it a read grant in the token file",
            self.who()
        )))
    }

    /// Whether it may change state.
    pub fn may_control(&self) -> bool {
        self.grants.control
    }

    /// 403 unless it may change state.
    pub fn require_control(&self) -> ApiResult<()> {
        if self.may_control() {
            return Ok(());
        }
        Err(ApiError::forbidden(format!(
            "this {} may not change state: use a token with the 'control' scope \
             (or, without a token file, call from loopback)",
            self.who()
        )))
    }

    fn who(&self) -> &'static str {
        if self.by_token {
            "token"
        } else {
            "unauthenticated caller"
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Caller, ApiError> {
        parts.extensions.get::<Caller>().cloned().ok_or_else(|| {
            ApiError::internal("no caller identified: the router was not wrapped by httpkit")
        })
    }
}

/// The bearer token of a request, if any.
fn bearer(req: &Request) -> Result<Option<&str>, ApiError> {
    let Some(value) = req.headers().get(AUTHORIZATION) else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or("");
    let (scheme, token) = text.split_once(' ').unwrap_or((text, ""));
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(ApiError::unauthorized(
            "bad_authorization",
            "the Authorization header must be 'Bearer <token>'",
        ));
    }
    Ok(Some(token.trim()))
}

/// Decides who the caller is (see the module's table).
pub fn identify(
    access: &Access,
    peer: Option<SocketAddr>,
    token: Option<&str>,
) -> ApiResult<Caller> {
    if let Some(auth) = &access.authenticator {
        let Some(token) = token else {
            return Err(ApiError::unauthorized(
                "unauthenticated",
                "send 'Authorization: Bearer <token>' with a token from the server's token file",
            ));
        };
        return match auth.grants(token) {
            Some(g) => Ok(Caller::with_grants(g, true)),
            None => Err(ApiError::unauthorized(
                "invalid_token",
                "the token is not in the token file (or the file was changed): check it",
            )),
        };
    }
    let loopback = peer.is_some_and(|p| p.ip().is_loopback() || is_mapped_loopback(&p));
    if loopback {
        Ok(Caller::anyone())
    } else if access.public {
        Ok(Caller::with_grants(Grants::read_all(), false))
    } else {
        Err(ApiError::unauthorized(
            "loopback_only",
            "without a token file this endpoint answers only loopback clients: \
             start it with a token file, or allow public reads (--http-public)",
        ))
    }
}

fn is_mapped_loopback(p: &SocketAddr) -> bool {
    match p.ip() {
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
        std::net::IpAddr::V4(_) => false,
    }
}

/// Middleware: identifies the caller and stores it in the request.
pub async fn authenticate(State(access): State<Access>, mut req: Request, next: Next) -> Response {
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0);
    let caller = match bearer(&req).and_then(|t| identify(&access, peer, t)) {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    req.extensions_mut().insert(caller);
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        let p = DomainPattern::new("lab*");
        assert!(p.matches("lab"));
        assert!(p.matches("lab12"));
        assert!(!p.matches("xlab"));
        assert!(DomainPattern::new("a?c").matches("abc"));
        assert!(!DomainPattern::new("a?c").matches("ac"));
        assert!(DomainPattern::new("*x*y").matches("aaxbby"));
        assert!(!DomainPattern::new("*x*y").matches("aaxbbyz"));
        assert!(DomainPattern::any().matches(""));
        assert!(!DomainPattern::new("exact").matches("exactly"));
    }

    struct One;
    impl Authenticator for One {
        fn grants(&self, token: &str) -> Option<Grants> {
            match token {
                "reader" => Some(Grants {
                    read: vec![DomainPattern::new("lab*")],
                    control: false,
                }),
                "collector" => Some(Grants::default()),
                _ => None,
            }
        }
    }

    #[test]
    fn the_rule() {
        let lo: SocketAddr = "127.0.0.1:5".parse().unwrap();
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:5".parse().unwrap();
        let far: SocketAddr = "192.0.2.1:5".parse().unwrap();
        let open = Access::default();
        assert!(identify(&open, Some(lo), None).unwrap().may_control());
        assert!(identify(&open, Some(mapped), None).unwrap().may_control());
        assert_eq!(identify(&open, Some(far), None).unwrap_err().status, 401);
        let public = Access {
            public: true,
            ..Access::default()
        };
        let c = identify(&public, Some(far), None).unwrap();
        assert!(c.may_read("x") && !c.may_control());

        let tokens = Access {
            authenticator: Some(Arc::new(One)),
            public: false,
        };
        assert_eq!(
            identify(&tokens, Some(lo), None).unwrap_err().code,
            "unauthenticated"
        );
        assert_eq!(
            identify(&tokens, Some(lo), Some("nope")).unwrap_err().code,
            "invalid_token"
        );
        let r = identify(&tokens, Some(far), Some("reader")).unwrap();
        assert!(r.may_read("lab2") && !r.may_read("other"));
        assert_eq!(r.require_control().unwrap_err().status, 403);
        let c = identify(&tokens, Some(far), Some("collector")).unwrap();
        assert_eq!(c.require_read("lab2").unwrap_err().status, 403);
    }
}
