//! Validation of names that end up as table, column or file names.

/// True if `name` is a valid stream, field, application or metadata-key name:
/// `[A-Za-z_][A-Za-z0-9_]*` in ASCII, as the reference requires.
pub fn is_valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    match bytes.next() {
        Some(b) if b.is_ascii_alphabetic() || b == b'_' => {}
        _ => return false,
    }
    bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Longest domain name streamgauge accepts (it becomes a file or database name).
pub const MAX_DOMAIN_LEN: usize = 63;

/// True if `domain` is safe to use as a database (and file) name:
/// 1 to 63 bytes of `[A-Za-z0-9_-]`, plus `.` anywhere but first, so that it
/// can never name a path outside the data directory (no `/`, no `..` prefix).
pub fn is_valid_domain(domain: &str) -> bool {
    !domain.is_empty()
        && domain.len() <= MAX_DOMAIN_LEN
        && !domain.starts_with('.')
        && domain
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["a", "_x", "vec_scalars", "A9_"] {
            assert!(is_valid_name(ok), "{ok}");
        }
        for bad in ["", "9a", "a-b", "a b", "é", "a.b"] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn domains() {
        for ok in ["vecdomain", "exp-1", "a.b", "X_2"] {
            assert!(is_valid_domain(ok), "{ok}");
        }
        let long = "a".repeat(64);
        for bad in ["", "../x", ".hidden", "a/b", "a b", "a'b", long.as_str()] {
            assert!(!is_valid_domain(bad), "{bad}");
        }
    }
}
