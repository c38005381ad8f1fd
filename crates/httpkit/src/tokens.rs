//! The token file (`--auth-file`): which tokens each domain accepts.
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

/// Accepted token digests per domain.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Domain → digests of its accepted tokens (never empty).
    domains: HashMap<String, Vec<Digest>>,
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
            let (Some(domain), Some(token), None) = (words.next(), words.next(), words.next())
            else {
                return Err(err(format!("expected '<domain> <token>', got {line:?}")));
            };
            if !is_valid_domain(domain) {
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
            tokens
                .domains
                .entry(domain.to_owned())
                .or_default()
                .push(digest);
        }
        Ok(tokens)
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
}
