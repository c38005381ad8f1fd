//! Device credentials, referenced from a file and never stored in the
//! database, shown by the API or logged.
//!
//! The file has one credential per line, `<name> <bearer-token>`; blank
//! lines and lines starting with `#` are ignored. A device's
//! `credential_ref` names a line.

use std::collections::HashMap;
use std::path::Path;

/// Why the credentials file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// It could not be read.
    #[error("credentials file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// Its group or others may read it (`chmod 600` fixes it).
    #[error("credentials file {0}")]
    Exposed(#[from] httpkit::secret::SecretFileError),
    /// A line is not `<name> <token>`.
    #[error("credentials file {path}, line {line}: expected '<name> <bearer-token>'")]
    Syntax {
        /// The file.
        path: String,
        /// 1-based line number (the line itself is not repeated: it may hold a secret).
        line: usize,
    },
}

/// Named bearer tokens.
#[derive(Default, Clone)]
pub struct Credentials {
    /// Token by name.
    by_name: HashMap<String, String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.by_name.keys().collect();
        names.sort();
        write!(f, "Credentials({names:?})")
    }
}

impl Credentials {
    /// Parses the file's text.
    pub fn parse(text: &str, path: &str) -> Result<Credentials, CredentialsError> {
        let mut by_name = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut parts = line.split_whitespace();
            match (parts.next(), parts.next(), parts.next()) {
                (Some(name), Some(token), None) => {
                    by_name.insert(name.to_owned(), token.to_owned());
                }
                _ => {
                    return Err(CredentialsError::Syntax {
                        path: path.to_owned(),
                        line: i + 1,
                    })
                }
            }
        }
        Ok(Credentials { by_name })
    }

    /// Reads and parses a file.
    pub fn load(path: &Path) -> Result<Credentials, CredentialsError> {
        let text = std::fs::read_to_string(path).map_err(|source| CredentialsError::Read {
            path: path.display().to_string(),
            source,
        })?;
        httpkit::secret::check_private(path)?;
        Self::parse(&text, &path.display().to_string())
    }

    /// The token a reference names.
    pub fn token(&self, name: Option<&str>) -> Option<String> {
        name.and_then(|n| self.by_name.get(n)).cloned()
    }

    /// Whether a reference names a line.
    pub fn knows(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_errors_without_secrets() {
        let c = Credentials::parse("# comment\n\ntap-east  s3cret\n", "f").unwrap();
        assert_eq!(c.token(Some("tap-east")).as_deref(), Some("s3cret"));
        assert!(!format!("{c:?}").contains("s3cret"));
        let e = Credentials::parse("ok tok\nbad line with-secret\n", "f").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("line 2") && !msg.contains("with-secret"),
            "{msg}"
        );
    }
}
