//! Line-oriented address anonymisation for `streamgauge anonymize`.

use crate::cryptopan::{CryptoPan, Key};
use std::net::IpAddr;

/// Why one input line could not be anonymised.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("line {line}: {input:?} is not an IPv4 or IPv6 address")]
pub struct BadLine {
    /// 1-based line number.
    pub line: usize,
    /// The offending input (trimmed).
    pub input: String,
}

/// Anonymises one address per input line with Crypto-PAn; IPv6 output is in
/// RFC 5952 form. Blank lines are kept blank; each bad line yields its own
/// error while the other lines are still processed.
pub fn anonymize_text<'a, I>(key: &Key, lines: I) -> Vec<Result<String, BadLine>>
where
    I: IntoIterator<Item = &'a str>,
{
    let mut cp = CryptoPan::new(key);
    lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let t = l.trim();
            if t.is_empty() {
                return Ok(String::new());
            }
            match t.parse::<IpAddr>() {
                Ok(IpAddr::V4(a)) => Ok(cp.ipv4(a).to_string()),
                Ok(IpAddr::V6(a)) => Ok(cp.ipv6(a).to_string()),
                Err(_) => Err(BadLine {
                    line: i + 1,
                    input: t.to_string(),
                }),
            }
        })
        .collect()
}

/// Writes the anonymised form of each line to `out`, one per line; a bad
/// line is written as an empty line and handed to `on_bad`. `Ok(false)`
/// when a line was bad.
pub fn anonymize_to<'a, I>(
    key: &Key,
    lines: I,
    out: &mut impl std::io::Write,
    mut on_bad: impl FnMut(BadLine),
) -> std::io::Result<bool>
where
    I: IntoIterator<Item = &'a str>,
{
    let mut ok = true;
    for r in anonymize_text(key, lines) {
        match r {
            Ok(a) => writeln!(out, "{a}")?,
            Err(e) => {
                ok = false;
                writeln!(out)?;
                on_bad(e);
            }
        }
    }
    out.flush()?;
    Ok(ok)
}
