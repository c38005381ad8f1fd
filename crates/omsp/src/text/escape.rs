//! Backslash escaping of text-mode strings.

/// Appends `s` with TAB, LF, CR and backslash escaped (`\t`, `\n`, `\r`, `\\`).
pub fn escape_into(out: &mut Vec<u8>, s: &[u8]) {
    let mut last = 0;
    for (i, &b) in s.iter().enumerate() {
        let esc: &[u8] = match b {
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\\' => b"\\\\",
            _ => continue,
        };
        out.extend_from_slice(&s[last..i]);
        out.extend_from_slice(esc);
        last = i + 1;
    }
    out.extend_from_slice(&s[last..]);
}

/// A string ended with a lone backslash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrailingBackslash;

/// Decodes escapes: `\t`, `\n`, `\r`, `\\`; any other `\X` becomes `X`.
/// A lone backslash at the end is an error (the reference crashes on it).
pub fn unescape(s: &[u8]) -> Result<Vec<u8>, TrailingBackslash> {
    let mut out = Vec::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = memchr::memchr(b'\\', rest) {
        out.extend_from_slice(&rest[..i]);
        let next = *rest.get(i + 1).ok_or(TrailingBackslash)?;
        out.push(match next {
            b't' => b'\t',
            b'n' => b'\n',
            b'r' => b'\r',
            other => other,
        });
        rest = &rest[i + 2..];
    }
    out.extend_from_slice(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_string_round_trips() {
        let raw = b"tab\there back\\slash nl\nend\r";
        let mut esc = Vec::new();
        escape_into(&mut esc, raw);
        assert_eq!(esc, b"tab\\there back\\\\slash nl\\nend\\r");
        assert_eq!(unescape(&esc).unwrap(), raw);
    }

    #[test]
    fn lax_escapes_and_trailing_backslash() {
        assert_eq!(unescape(b"a\\x\\\\b").unwrap(), b"ax\\b");
        assert_eq!(unescape(b"q\r").unwrap(), b"q\r");
        assert_eq!(unescape(b"oops\\"), Err(TrailingBackslash));
    }
}
