//! A token file that exists before the first request: loaded when it is
//! there, created (owner-only, one random token) when it is not.
//!
//! Components that run as root (the capture daemon, the in-line agent)
//! must never serve their control API open, not even on loopback. When the
//! operator names no token file they create one on first start, as Jupyter
//! does, and say where it is; the operator (or the command-line client,
//! `--token-file`) reads the token from it.
//!
//! ```no_run
//! let init = httpkit::token_init::load_or_create(
//!     std::path::Path::new("/var/lib/streamgauge/capture/control.tokens"),
//!     "*",
//!     "read,control",
//! )?;
//! if init.created {
//!     eprintln!("control token written to {}", init.path.display());
//! }
//! # Ok::<(), httpkit::token_init::TokenInitError>(())
//! ```

use std::path::{Path, PathBuf};

use crate::tokens::{TokenFile, TokenFileError};

/// First line of a file this module writes; [`own_token`] recognises it.
const HEADER: &str = "# generated on first start; streamgauge clients read the token below \
                      (--token-file). Replace or extend it with your own lines.";

/// Why the token file could neither be loaded nor created.
#[derive(Debug, thiserror::Error)]
pub enum TokenInitError {
    /// It exists and is unusable (unreadable, exposed, malformed).
    #[error(transparent)]
    Load(#[from] TokenFileError),
    /// It could not be created.
    #[error("token file {path}: cannot create it: {source}", path = path.display())]
    Create {
        /// The file.
        path: PathBuf,
        /// The system error.
        source: std::io::Error,
    },
    /// The operating system's random generator failed.
    #[error("token file {path}: no random bytes from the operating system", path = path.display())]
    Random {
        /// The file.
        path: PathBuf,
    },
}

/// A token file in force.
#[derive(Debug)]
pub struct TokenInit {
    /// The loaded file (re-read on `SIGHUP` by its owner).
    pub tokens: TokenFile,
    /// Where it is.
    pub path: PathBuf,
    /// Whether this call created it.
    pub created: bool,
}

/// The token file of a control API that never runs open: `configured` if
/// given, else `fallback`, created on first start with one
/// `* <token> read,control` line. A creation is told on standard error
/// (`who`: the program, `setting`: what names a token file there, for
/// the message) and logged.
pub fn control_tokens(
    configured: Option<&Path>,
    fallback: &Path,
    who: &str,
    setting: &str,
) -> Result<TokenFile, TokenInitError> {
    if let Some(p) = configured {
        return TokenFile::load(p).map_err(TokenInitError::Load);
    }
    let init = load_or_create(fallback, "*", "read,control")?;
    if init.created {
        eprintln!(
            "{who}: no {setting} given; created {} with a control token (clients: --token-file {})",
            fallback.display(),
            fallback.display()
        );
        tracing::warn!(path = %fallback.display(), "control token file created");
    }
    Ok(init.tokens)
}

/// Loads the token file at `path`, or, when there is none, creates it
/// (its directory too, 0700) with one line `<scope> <random token>
/// <scopes>` (for example `*` and `read,control`) and mode 0600, then
/// loads it. An existing file is never rewritten.
pub fn load_or_create(path: &Path, scope: &str, scopes: &str) -> Result<TokenInit, TokenInitError> {
    let created = if path.exists() {
        false
    } else {
        let create = |source| TokenInitError::Create {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            private_dir(dir).map_err(create)?;
        }
        let token = random_token().ok_or_else(|| TokenInitError::Random {
            path: path.to_owned(),
        })?;
        crate::secret::write_private(path, format!("{HEADER}\n{scope} {token} {scopes}\n"))
            .map_err(create)?;
        true
    };
    Ok(TokenInit {
        tokens: TokenFile::load(path)?,
        path: path.to_owned(),
        created,
    })
}

/// The token a client should send, read from a token file: the first
/// line's token when the file was written by [`load_or_create`] or is the
/// operator's own with plain tokens (a line holding a `sha256:` digest
/// cannot be sent). `None` when the file has no such line.
pub fn own_token(path: &Path) -> Result<Option<String>, TokenFileError> {
    // Validates it as the component would (owner-only, well-formed).
    crate::tokens::read_file(path)?;
    let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Read {
        path: path.to_owned(),
        source,
    })?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().nth(1))
        .find(|t| !t.starts_with(crate::tokens::SHA256_PREFIX))
        .map(str::to_owned))
}

/// 32 random bytes, hex.
fn random_token() -> Option<String> {
    let mut buf = [0u8; 32];
    getrandom::fill(&mut buf).ok()?;
    Some(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// Creates `dir` (and its parents) if needed; a directory this call
/// creates is owner-only.
pub(crate) fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Authenticator;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn created_once_owner_only_then_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("state/control.tokens");
        let first = load_or_create(&p, "*", "read,control").unwrap();
        assert!(first.created);
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dmode = std::fs::metadata(p.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dmode, 0o700);
        let token = own_token(&p).unwrap().unwrap();
        assert_eq!(token.len(), 64);
        let g = first.tokens.grants(&token).expect("the token is accepted");
        assert!(g.control);
        assert!(first.tokens.grants("guess").is_none());

        let again = load_or_create(&p, "*", "read,control").unwrap();
        assert!(!again.created, "an existing file is loaded, not replaced");
        assert_eq!(own_token(&p).unwrap().unwrap(), token);

        let other = load_or_create(&dir.path().join("other"), "*", "read,control").unwrap();
        assert_ne!(own_token(&other.path).unwrap().unwrap(), token);
    }

    #[test]
    fn an_unusable_file_is_reported_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tokens");
        std::fs::write(&p, "* tok read\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = load_or_create(&p, "*", "read,control").unwrap_err();
        assert!(e.to_string().contains("chmod 600"), "{e}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "* tok read\n");
        crate::secret::write_private(&p, "* sha256:".to_owned() + &"a".repeat(64) + " read\n")
            .unwrap();
        assert_eq!(own_token(&p).unwrap(), None);
    }
}
