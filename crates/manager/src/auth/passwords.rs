//! Password hashes: argon2id with the crate's default parameters (19 MiB,
//! 2 passes), a random salt per hash, stored as PHC strings so the
//! parameters travel with the hash. Hashing is deliberately slow: callers
//! run it on the hash threads ([`super::hashpool`]).

use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::Argon2;

/// Shortest password accepted.
pub const MIN_LEN: usize = 8;

/// Why a password cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    /// Too short.
    #[error("passwords need at least {MIN_LEN} characters")]
    TooShort,
    /// The hasher failed (no randomness).
    #[error("hashing failed: {0}")]
    Hash(String),
}

/// The PHC string of `password`.
pub fn hash(password: &str) -> Result<String, PasswordError> {
    if password.chars().count() < MIN_LEN {
        return Err(PasswordError::TooShort);
    }
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| PasswordError::Hash(e.to_string()))
}

/// Whether `password` matches the stored PHC string.
pub fn verify(password: &str, stored: &str) -> bool {
    Argon2::default()
        .verify_password(password.as_bytes(), stored)
        .is_ok()
}

/// A hash no password matches, verified against for unknown users so a
/// login takes as long whether or not the name exists.
pub fn decoy() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash(&super::random_hex(16)).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argon2id_round_trip() {
        let h = hash("correct horse").unwrap();
        assert!(h.starts_with("$argon2id$"), "{h}");
        assert!(verify("correct horse", &h));
        assert!(!verify("wrong horse!", &h));
        assert!(matches!(hash("short"), Err(PasswordError::TooShort)));
    }
}
