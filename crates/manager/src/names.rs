//! Names people give experiments and configurations, and the domain an
//! experiment's name gives by default.
//!
//! A name is NFC-normalised before it is stored or compared (so `é` typed
//! as one or two code points is one name), counted in characters rather
//! than bytes, and may not hold control, bidi-override or invisible
//! formatting characters (`exp\u{202E}gnp.exe` shows as `expexe.png`).
//! The default domain keeps ASCII letters, digits and `_`; a name with
//! anything else gets a short hash of the whole name appended, so `实验`
//! and `试验` no longer both become `__` and silently share data.

use ring::digest::{digest, SHA256};
use unicode_normalization::UnicodeNormalization;

/// Longest name, in characters.
pub const MAX_NAME_CHARS: usize = 64;

/// Longest domain the manager gives or accepts: what the collection
/// server accepts ([`omsp::names::MAX_DOMAIN_LEN`]).
pub const MAX_DOMAIN_LEN: usize = omsp::names::MAX_DOMAIN_LEN;

/// Why a name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Empty, or longer than [`MAX_NAME_CHARS`] characters.
    #[error("give a name of 1 to {MAX_NAME_CHARS} characters")]
    Length,
    /// A control, bidi or invisible formatting character.
    #[error("remove the invisible or direction-changing character U+{0:04X}")]
    Hidden(u32),
}

/// Characters that change how the rest of a name is shown or hide
/// themselves: bidi embeddings, overrides and isolates, marks, zero-width
/// characters and the byte-order mark.
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2069}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}')
}

/// The name to store: NFC, without surrounding white space, checked.
pub fn name(raw: &str) -> Result<String, NameError> {
    let n: String = raw.trim().nfc().collect();
    if let Some(c) = n.chars().find(|&c| hidden(c)) {
        return Err(NameError::Hidden(c as u32));
    }
    let chars = n.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS {
        return Err(NameError::Length);
    }
    Ok(n)
}

/// The domain derived from a (checked) name: characters outside
/// `[A-Za-z0-9_]` become `_`; if any of them was not ASCII, `_` and 8 hex
/// digits of the name's SHA-256 are appended so that names in other
/// scripts stay apart. Two ASCII names that still meet (`a b`, `a_b`) are
/// refused by the domain's uniqueness, never merged.
pub fn default_domain(name: &str) -> String {
    let mut d: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if !name.is_ascii() {
        let h = digest(&SHA256, name.as_bytes());
        let hex: String = h.as_ref()[..4].iter().map(|b| format!("{b:02x}")).collect();
        d.truncate(MAX_DOMAIN_LEN - 9);
        d.push('_');
        d.push_str(&hex);
    }
    d.truncate(MAX_DOMAIN_LEN);
    d
}

/// Whether `d` is a domain an experiment may hold: 1 to
/// [`MAX_DOMAIN_LEN`] of `[A-Za-z0-9_]`.
pub fn valid_domain(d: &str) -> bool {
    !d.is_empty()
        && d.len() <= MAX_DOMAIN_LEN
        && d.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalised_and_counted_in_characters() {
        assert_eq!(name(" Cafe\u{301} ").unwrap(), "Caf\u{e9}");
        assert_eq!(name(&"实".repeat(64)).unwrap().chars().count(), 64);
        assert_eq!(name(&"实".repeat(65)), Err(NameError::Length));
        assert_eq!(name("  "), Err(NameError::Length));
        assert_eq!(name("exp\u{202E}gnp.exe"), Err(NameError::Hidden(0x202E)));
        assert_eq!(name("a\u{0}b"), Err(NameError::Hidden(0)));
        assert_eq!(name("a\u{200B}b"), Err(NameError::Hidden(0x200B)));
        assert_eq!(name("a\nb"), Err(NameError::Hidden(10)));
    }

    #[test]
    fn default_domains_keep_scripts_apart() {
        assert_eq!(default_domain("wifi-handover 2"), "wifi_handover_2");
        let (a, b) = (default_domain("实验"), default_domain("试验"));
        assert_ne!(a, b);
        assert!(a.starts_with("___") && valid_domain(&a), "{a}");
        let long = default_domain(&"é".repeat(64));
        assert!(
            valid_domain(&long) && long.len() == MAX_DOMAIN_LEN,
            "{long}"
        );
        assert_ne!(default_domain("Ωmega"), default_domain("Σmega"));
    }
}
