//! The token file (`--auth-file` of the server, the proxy and the capture
//! daemon): which tokens each domain accepts, and what they may do over HTTP.
//!
//! ```text
//! # comment lines start with '#'; blank lines are ignored
//! # <domain> <token>           a token, as the client sends it
//! # <domain> sha256:<64 hex>   the SHA-256 of a token (keeps secrets out of the file)
//! lab1     s3cret-token
//! lab1     sha256:2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b
//! campus   another-token
//! ```
//!
//! One token per line; a domain may have any number of lines. A token is
//! any run of non-whitespace bytes (header values are trimmed, so a token
//! cannot start or end with whitespace anyway) and must not itself start
//! with `sha256:`. Domains follow the server's domain rules. Any other line
//! makes the whole file invalid, reported with its line number.
//!
//! A third column lists what the token may do, comma-separated (default
//! `collect`):
//!
//! ```text
//! # collect into lab1 (as above), and read it over HTTP
//! lab1     s3cret-token   collect,read
//! # read every domain whose name starts with "lab"
//! lab*     reader-token   read
//! # read everything, steer senders
//! *        ops-token      read,control
//! ```
//!
//! - `collect`: send streams into that domain (OMSP); the first column must
//!   be a domain name.
//! - `read`: read the domain's data over HTTP (query API, `/metrics`,
//!   `/feedback`); the first column may be a glob (`*`, `?`).
//! - `control`: state-changing HTTP requests (`POST /control/...`); the
//!   first column must be `*` (control is server-wide).
//!
//! A token that only collects cannot read: the query API answers it 403.

use std::collections::HashMap;

use omsp::names::is_valid_domain;

/// The SHA-256 of a token. Tokens are kept and compared only as digests,
/// so every comparison has the same length and the same cost.
pub type Digest = [u8; 32];

/// Prefix of a line's token column that holds a digest instead of a token.
pub const SHA256_PREFIX: &str = "sha256:";

/// A line of the file that is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct SyntaxError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub reason: String,
}

/// What a line lets its token do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scopes {
    /// Send streams into the domain.
    pub collect: bool,
    /// Read the domain(s) over HTTP.
    pub read: bool,
    /// State-changing HTTP requests.
    pub control: bool,
}

impl Scopes {
    fn parse(text: &str) -> Result<Scopes, String> {
        let mut s = Scopes::default();
        for word in text.split(',') {
            match word {
                "collect" => s.collect = true,
                "read" => s.read = true,
                "control" => s.control = true,
                other => {
                    return Err(format!(
                        "unknown scope {other:?} (want collect, read or control, comma-separated)"
                    ))
                }
            }
        }
        Ok(s)
    }
}

/// One line granting HTTP access.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HttpGrant {
    /// Token digest.
    digest: Digest,
    /// Domain or glob the grant is for.
    pattern: String,
    /// What it allows.
    scopes: Scopes,
}

/// Accepted token digests per domain, and HTTP grants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Domain → digests of its accepted collection tokens (never empty).
    domains: HashMap<String, Vec<Digest>>,
    /// Lines with `read` or `control`.
    http: Vec<HttpGrant>,
}

impl Tokens {
    /// Parses the file's text (no I/O).
    pub fn parse(text: &str) -> Result<Tokens, SyntaxError> {
        let mut tokens = Tokens::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let err = |reason: String| SyntaxError {
                line: n + 1,
                reason,
            };
            let mut words = line.split_whitespace();
            let (Some(domain), Some(token), scopes, None) =
                (words.next(), words.next(), words.next(), words.next())
            else {
                return Err(err(format!(
                    "expected '<domain> <token> [collect,read,control]', got {line:?}"
                )));
            };
            let scopes = match scopes {
                Some(text) => Scopes::parse(text).map_err(err)?,
                None => Scopes {
                    collect: true,
                    ..Scopes::default()
                },
            };
            let is_glob = domain.contains(['*', '?']);
            if scopes.control && domain != "*" {
                return Err(err(format!(
                    "the control scope is server-wide: write '*' as the domain, not {domain:?}"
                )));
            }
            if is_glob && scopes.collect {
                return Err(err(format!(
                    "{domain:?} is a pattern: collect needs one domain name (patterns are for read)"
                )));
            }
            let bare = domain.replace(['*', '?'], "");
            if !(is_valid_domain(domain) || is_glob && (bare.is_empty() || is_valid_domain(&bare)))
            {
                return Err(err(format!(
                    "invalid domain {domain:?} (want 1-63 bytes of [A-Za-z0-9_.-], not starting with '.')"
                )));
            }
            let digest = match token.strip_prefix(SHA256_PREFIX) {
                Some(hex) => parse_hex(hex).ok_or_else(|| {
                    err(format!("{SHA256_PREFIX} wants 64 hex digits, got {hex:?}"))
                })?,
                None => digest(token),
            };
            if scopes.collect {
                tokens
                    .domains
                    .entry(domain.to_owned())
                    .or_default()
                    .push(digest);
            }
            if scopes.read || scopes.control {
                tokens.http.push(HttpGrant {
                    digest,
                    pattern: domain.to_owned(),
                    scopes,
                });
            }
        }
        Ok(tokens)
    }

    /// What `token` may do over HTTP; `None` when no line names it.
    /// Every line is compared, match or not.
    pub fn http_grants(&self, token: &str) -> Option<crate::Grants> {
        let presented = digest(token);
        let mut known = false;
        for digests in self.domains.values() {
            known |= digests
                .iter()
                .fold(false, |ok, d| digests_equal(d, &presented) | ok);
        }
        let mut grants = crate::Grants::default();
        for g in &self.http {
            if digests_equal(&g.digest, &presented) {
                known = true;
                if g.scopes.read {
                    grants
                        .read
                        .push(crate::DomainPattern::new(g.pattern.clone()));
                }
                grants.control |= g.scopes.control;
            }
        }
        known.then_some(grants)
    }

    /// Digests accepted for `domain`; `None` if the file does not list it.
    pub fn get(&self, domain: &str) -> Option<&[Digest]> {
        self.domains.get(domain).map(Vec::as_slice)
    }

    /// How many domains are listed.
    pub fn len(&self) -> usize {
        self.domains.len()
    }

    /// True if no domain is listed.
    pub fn is_empty(&self) -> bool {
        self.domains.is_empty()
    }
}

/// A token file loaded from disk, usable as the HTTP [`crate::Authenticator`].
#[derive(Debug)]
pub struct TokenFile {
    /// Where it was read from.
    path: std::path::PathBuf,
    /// Current contents; replaced whole on reload.
    tokens: std::sync::RwLock<std::sync::Arc<Tokens>>,
}

/// Why a token file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    /// The file could not be read.
    #[error("token file {path}: {source}")]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// The system error.
        source: std::io::Error,
    },
    /// Its group or others may read it (`chmod 600` fixes it).
    #[error("token file {0}")]
    Exposed(#[from] crate::secret::SecretFileError),
    /// A line is malformed.
    #[error("token file {path}:{}: {}", .source.line, .source.reason)]
    Syntax {
        /// The file.
        path: std::path::PathBuf,
        /// The offending line.
        source: SyntaxError,
    },
}

impl TokenFile {
    /// Reads and validates `path`.
    pub fn load(path: &std::path::Path) -> Result<TokenFile, TokenFileError> {
        Ok(TokenFile {
            path: path.to_owned(),
            tokens: std::sync::RwLock::new(std::sync::Arc::new(read_file(path)?)),
        })
    }

    /// Re-reads the file; on error the previous tokens stay in force.
    pub fn reload(&self) -> Result<(), TokenFileError> {
        let fresh = read_file(&self.path)?;
        *self.tokens.write().unwrap_or_else(|e| e.into_inner()) = std::sync::Arc::new(fresh);
        Ok(())
    }

    /// The current tokens.
    pub fn current(&self) -> std::sync::Arc<Tokens> {
        std::sync::Arc::clone(&self.tokens.read().unwrap_or_else(|e| e.into_inner()))
    }
}

impl crate::Authenticator for TokenFile {
    fn grants(&self, token: &str) -> Option<crate::Grants> {
        self.current().http_grants(token)
    }
}

/// Reads and parses a token file, which must be owner-only
/// ([`crate::secret`]).
pub fn read_file(path: &std::path::Path) -> Result<Tokens, TokenFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Read {
        path: path.to_owned(),
        source,
    })?;
    crate::secret::check_private(path)?;
    Tokens::parse(&text).map_err(|source| TokenFileError::Syntax {
        path: path.to_owned(),
        source,
    })
}

/// SHA-256 of a token.
pub fn digest(token: &str) -> Digest {
    let d = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

/// Compares two digests in time independent of their contents.
pub fn digests_equal(a: &Digest, b: &Digest) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

fn parse_hex(hex: &str) -> Option<Digest> {
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_hashed_tokens_match_the_same_secret() {
        let hex: String = digest("pw").iter().map(|b| format!("{b:02x}")).collect();
        let text = format!("# tokens\n\nlab  pw\nlab\tsha256:{hex}\n  other x  # no\n");
        let err = Tokens::parse(&text).unwrap_err();
        assert_eq!(err.line, 5);
        let t = Tokens::parse(&format!(
            "# tokens\n\nlab  pw\nlab\tsha256:{hex}\nother x\n"
        ))
        .unwrap();
        assert_eq!(t.len(), 2);
        let lab = t.get("lab").unwrap();
        assert_eq!(lab.len(), 2);
        assert!(digests_equal(&lab[0], &lab[1]));
        assert!(!digests_equal(&lab[0], &digest("pW")));
        assert!(t.get("nope").is_none());
    }

    #[test]
    fn scopes_give_http_grants() {
        let t = Tokens::parse("lab1 c\nlab1 cr collect,read\nlab* r read\n* ops read,control\n")
            .unwrap();
        assert_eq!(
            t.get("lab1").unwrap().len(),
            2,
            "read-only lines do not collect"
        );
        let c = t.http_grants("c").unwrap();
        assert!(
            c.read.is_empty() && !c.control,
            "collection-only token reads nothing"
        );
        let cr = t.http_grants("cr").unwrap();
        assert!(cr.read[0].matches("lab1") && !cr.read[0].matches("lab2"));
        let r = t.http_grants("r").unwrap();
        assert!(r.read[0].matches("lab2") && !r.control);
        assert!(t.http_grants("ops").unwrap().control);
        assert!(t.http_grants("nope").is_none());
        for bad in [
            "lab* t collect\n",
            "lab t control\n",
            "lab t write\n",
            "../x t read\n",
        ] {
            assert!(Tokens::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn malformed_lines_are_reported_with_their_number() {
        for (text, line) in [
            ("lab\n", 1),
            ("ok t\n../x t\n", 2),
            ("ok t\n\n#c\nok sha256:abc\n", 4),
            (&format!("ok sha256:{}\n", "zz".repeat(32)), 1),
        ] {
            assert_eq!(Tokens::parse(text).unwrap_err().line, line, "{text:?}");
        }
    }

    #[test]
    fn a_token_file_others_can_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tokens");
        std::fs::write(&p, "lab secret read\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = TokenFile::load(&p).err().unwrap().to_string();
        assert!(e.contains(&format!("chmod 600 {}", p.display())), "{e}");
        crate::secret::write_private(&p, "lab secret read\n").unwrap();
        assert!(TokenFile::load(&p).is_ok());
    }
}
