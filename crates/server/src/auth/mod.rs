//! Token authentication per domain (the `x-streamgauge-auth` extension).
//!
//! A client presents a token in the header key [`AUTH_KEY`]; the server
//! accepts the session only if the token is one that the token file lists
//! for the session's domain (see [`file`] for the format). A domain the file
//! does not list is open, unless [`AuthSettings::required`] is set. Without
//! a token file (`ServerConfig::auth` = `None`) nothing is checked, exactly
//! as in the reference server.
//!
//! The check runs on the complete header, before the database is opened or
//! the sender registered, so a refused session stores nothing.

pub use httpkit::tokens as file;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use omsp::Header;

use file::{digest, digests_equal, Tokens};

/// Header key that carries the client's token.
pub const AUTH_KEY: &str = "x-streamgauge-auth";

/// What the server is told about authentication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthSettings {
    /// The token file (`--auth-file`), re-read by [`crate::Server::reload_auth`].
    pub file: PathBuf,
    /// Refuse domains that the file does not list (`--auth-required`).
    pub required: bool,
}

/// Why the token file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The file could not be read.
    #[error("auth file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The system error.
        source: std::io::Error,
    },
    /// Its group or others may read it (`chmod 600` fixes it).
    #[error("auth file {0}")]
    Exposed(#[from] httpkit::secret::SecretFileError),
    /// A line of the file is malformed.
    #[error("auth file {path}:{}: {}", .source.line, .source.reason)]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The offending line.
        source: file::SyntaxError,
    },
}

/// Why a session was refused (logged with the client's address; the client
/// itself is told nothing but the closed connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The domain has tokens and the header carries none.
    #[error("no {AUTH_KEY} token for a domain that requires one")]
    NoToken,
    /// The header's token is not one of the domain's.
    #[error("wrong {AUTH_KEY} token")]
    WrongToken,
    /// `--auth-required` and the file does not list the domain.
    #[error("domain is not in the auth file and authentication is required")]
    UnknownDomain,
}

/// The live token table, shared by every connection.
#[derive(Debug)]
pub struct Auth {
    /// Where the tokens come from, and the policy for unlisted domains.
    settings: AuthSettings,
    /// Current tokens; replaced whole on reload, so a check sees one version.
    tokens: RwLock<Arc<Tokens>>,
}

impl Auth {
    /// Reads and validates the token file.
    pub fn load(settings: AuthSettings) -> Result<Auth, AuthError> {
        let tokens = read(&settings.file)?;
        tracing::info!(file = %settings.file.display(), domains = tokens.len(),
            required = settings.required, "token authentication on");
        Ok(Auth {
            settings,
            tokens: RwLock::new(Arc::new(tokens)),
        })
    }

    /// Re-reads the token file; on error the previous tokens stay in force.
    /// Returns the number of listed domains.
    pub fn reload(&self) -> Result<usize, AuthError> {
        let tokens = read(&self.settings.file)?;
        let n = tokens.len();
        *self.tokens.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(tokens);
        Ok(n)
    }

    /// Decides on a session of `domain` whose token (if any) is `presented`.
    pub fn check(&self, domain: &str, presented: Option<&str>) -> Result<(), Refusal> {
        let tokens = Arc::clone(&self.tokens.read().unwrap_or_else(|e| e.into_inner()));
        let Some(accepted) = tokens.get(domain) else {
            return match self.settings.required {
                true => Err(Refusal::UnknownDomain),
                false => Ok(()),
            };
        };
        let presented = digest(presented.ok_or(Refusal::NoToken)?);
        // Every accepted token is compared, match or not.
        let matched = accepted
            .iter()
            .fold(false, |ok, want| digests_equal(want, &presented) | ok);
        if matched {
            Ok(())
        } else {
            Err(Refusal::WrongToken)
        }
    }

    /// True if the header so far already shows it may open `domain`: the
    /// domain needs no token, or a token it carries is one of the domain's.
    /// Used before the header is complete, to decide how much of it an
    /// unknown client may send; never logs, never refuses.
    pub fn admits_partial(&self, domain: &str, partial: &Header) -> bool {
        self.check(domain, presented(partial)).is_ok()
    }

    /// [`Auth::check`] on a header, logging a refusal with the client's
    /// address. The last [`AUTH_KEY`] line of the header counts.
    pub fn admit(&self, domain: &str, header: &Header, peer: SocketAddr) -> Result<(), String> {
        self.check(domain, presented(header)).map_err(|refusal| {
            tracing::warn!(client = %peer, domain, reason = %refusal,
                "authentication failed; connection refused");
            format!("authentication failed: {refusal}")
        })
    }
}

impl httpkit::Authenticator for Auth {
    fn grants(&self, token: &str) -> Option<httpkit::Grants> {
        let tokens = Arc::clone(&self.tokens.read().unwrap_or_else(|e| e.into_inner()));
        tokens.http_grants(token)
    }
}

/// The token a header presents: its last [`AUTH_KEY`] line.
fn presented(header: &Header) -> Option<&str> {
    header
        .extra
        .iter()
        .rev()
        .find(|(k, _)| k == AUTH_KEY)
        .map(|(_, v)| v.as_str())
}

fn read(path: &std::path::Path) -> Result<Tokens, AuthError> {
    let text = std::fs::read_to_string(path).map_err(|source| AuthError::Read {
        path: path.to_owned(),
        source,
    })?;
    httpkit::secret::check_private(path)?;
    Tokens::parse(&text).map_err(|source| AuthError::Syntax {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(text: &str, required: bool) -> (tempfile::NamedTempFile, Auth) {
        use std::io::Write;
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        let a = Auth::load(AuthSettings {
            file: f.path().to_owned(),
            required,
        })
        .unwrap();
        (f, a)
    }

    #[test]
    fn listed_domains_need_one_of_their_tokens() {
        let (_f, a) = auth("lab a1\nlab a2\nother b\n", false);
        assert_eq!(a.check("lab", Some("a1")), Ok(()));
        assert_eq!(a.check("lab", Some("a2")), Ok(()));
        assert_eq!(a.check("lab", Some("b")), Err(Refusal::WrongToken));
        assert_eq!(a.check("lab", None), Err(Refusal::NoToken));
        assert_eq!(a.check("open", None), Ok(()));
        let (_f, a) = auth("lab a1\n", true);
        assert_eq!(a.check("open", Some("a1")), Err(Refusal::UnknownDomain));
    }

    #[test]
    fn reload_replaces_tokens_and_keeps_them_on_error() {
        let (f, a) = auth("lab old\n", false);
        std::fs::write(f.path(), "lab new\n").unwrap();
        assert_eq!(a.reload().unwrap(), 1);
        assert_eq!(a.check("lab", Some("old")), Err(Refusal::WrongToken));
        std::fs::write(f.path(), "lab\n").unwrap();
        let e = a.reload().unwrap_err().to_string();
        assert!(
            e.ends_with(":1: expected '<domain> <token> [collect,read,control]', got \"lab\""),
            "{e}"
        );
        assert_eq!(a.check("lab", Some("new")), Ok(()));
    }
}
