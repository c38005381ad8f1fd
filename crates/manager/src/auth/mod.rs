//! Who is calling: passwords (argon2id), browser sessions with their CSRF
//! token, API tokens, login rate limiting, and the middleware that turns a
//! request's cookie or bearer token into a [`caller::Me`].
//!
//! Secrets (session ids, CSRF tokens, API token secrets) are 256 random
//! bits from the operating system; the database keeps only SHA-256
//! digests of session ids and token secrets, so a copy of the database
//! lets nobody in.

pub mod caller;
pub mod hashpool;
pub mod passwords;
pub mod ratelimit;
pub mod sessions;
pub mod tokens;

/// `n` random bytes as lowercase hex.
pub fn random_hex(n: usize) -> String {
    let mut buf = vec![0u8; n];
    // The system generator fails only when the OS has no entropy source,
    // which leaves nothing safe to do.
    getrandom::fill(&mut buf).expect("the operating system's random generator failed");
    hex(&buf)
}

/// SHA-256 of `text` as lowercase hex (what the database stores).
pub fn digest(text: &str) -> String {
    hex(ring::digest::digest(&ring::digest::SHA256, text.as_bytes()).as_ref())
}

/// Equal in time independent of where they differ.
pub fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
