//! Text line decoder.

use base64::Engine as _;

use super::escape::unescape;
use crate::error::{ErrorKind, ValueError};
use crate::sample::Sample;
use crate::table::SchemaTable;
use crate::types::OmlType;
use crate::value::Value;

/// Integers read from decimal text, exactly as `str::parse` reads them (an
/// optional `+`, or `-` for signed types, then one or more ASCII digits, in
/// range), without first checking the bytes for UTF-8: the hot path of text
/// decoding.
trait Decimal: Sized {
    fn from_decimal(s: &[u8]) -> Option<Self>;
}

/// One or more ASCII digits as a u64; `None` if empty, not digits, or too big.
#[inline]
fn decimal_digits(d: &[u8]) -> Option<u64> {
    if d.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &b in d {
        let x = b.wrapping_sub(b'0');
        if x > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(x))?;
    }
    Some(v)
}

macro_rules! decimal_unsigned {
    ($($t:ty),*) => {$(
        impl Decimal for $t {
            #[inline]
            fn from_decimal(s: &[u8]) -> Option<$t> {
                let d = s.strip_prefix(b"+").unwrap_or(s);
                <$t>::try_from(decimal_digits(d)?).ok()
            }
        }
    )*};
}

macro_rules! decimal_signed {
    ($($t:ty),*) => {$(
        impl Decimal for $t {
            #[inline]
            fn from_decimal(s: &[u8]) -> Option<$t> {
                let (neg, d) = match s.split_first() {
                    Some((b'-', d)) => (true, d),
                    Some((b'+', d)) => (false, d),
                    _ => (false, s),
                };
                let m = i128::from(decimal_digits(d)?);
                <$t>::try_from(if neg { -m } else { m }).ok()
            }
        }
    )*};
}

decimal_unsigned!(u16, u32, u64);
decimal_signed!(i32, i64);

#[inline]
fn num<T: Decimal>(s: &[u8]) -> Option<T> {
    T::from_decimal(s)
}

/// Like [`num`], but unsigned decimal digits only (no `+`): guids and stream
/// indices take no sign.
fn digits<T: Decimal>(s: &[u8]) -> Option<T> {
    s.first().filter(|b| b.is_ascii_digit())?;
    num(s)
}

/// Parses a double: decimal or exponent notation, `nan`, `-nan`, `inf`, `-inf`
/// (`%f`, `%g` and shortest-form output all read back).
pub fn parse_double(s: &[u8]) -> Option<f64> {
    match s {
        b"nan" | b"-nan" | b"NaN" | b"-NaN" => Some(f64::NAN),
        _ => std::str::from_utf8(s).ok()?.parse().ok(),
    }
}

/// Parses a boolean: a case-insensitive prefix of `true` or `false` (so `T`,
/// `F`, `True`, `False`), `1`, `0`; the empty field is false.
pub fn parse_bool(s: &[u8]) -> Option<bool> {
    let prefix_of = |word: &[u8]| s.len() <= word.len() && s.eq_ignore_ascii_case(&word[..s.len()]);
    if s.is_empty() || s == b"0" || prefix_of(b"false") {
        Some(false)
    } else if s == b"1" || prefix_of(b"true") {
        Some(true)
    } else {
        None
    }
}

/// Reads a boolean as liboml2 does (`strncasecmp(v, "false", strlen(v)) !=
/// 0`): false for a case-insensitive prefix of `false`, including the empty
/// field, true for anything else — so `yes`, `on` and `2` are true. We keep
/// one correction: `0` is false. The second value says whether the strict
/// reading ([`parse_bool`]) would have refused it (a lenient read).
pub fn parse_bool_as_reference(s: &[u8]) -> (bool, bool) {
    match parse_bool(s) {
        Some(b) => (b, false),
        None => (true, true),
    }
}

/// Text values stock clients send that the strict reading refuses but the
/// reference stores: counted, so the server can log them, never dropped.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Leniency {
    /// Booleans read as the reference reads them (`yes`, `on`, `2` → true).
    pub bools: u64,
    /// Values cut at a NUL byte: the reference reads values as C strings,
    /// and its own client sometimes sends `-41.56221\0` in text mode.
    pub nul_cut: u64,
}

fn vector<T>(s: &[u8], elt: impl Fn(&[u8]) -> Option<T>) -> Result<Vec<T>, String> {
    let mut toks = s.split(|&b| b == b' ').filter(|t| !t.is_empty());
    let count = usize::from(
        toks.next()
            .and_then(num::<u16>)
            .ok_or_else(|| "vector must start with its element count (0..65535)".to_owned())?,
    );
    let mut out = Vec::with_capacity(count.min(s.len()));
    for tok in toks {
        if out.len() == count {
            return Err(format!(
                "vector has more than the {count} elements it announces"
            ));
        }
        out.push(
            elt(tok)
                .ok_or_else(|| format!("bad vector element {:?}", String::from_utf8_lossy(tok)))?,
        );
    }
    if out.len() != count {
        return Err(format!(
            "vector announces {count} elements but has {}",
            out.len()
        ));
    }
    Ok(out)
}

/// Parses one field of type `ty` (booleans leniently, as the reference).
pub fn parse_value(s: &[u8], ty: OmlType) -> Result<Value, String> {
    parse_counted(s, ty, &mut Leniency::default())
}

/// [`parse_value`], counting lenient reads into `lenient`.
fn parse_counted(s: &[u8], ty: OmlType, lenient: &mut Leniency) -> Result<Value, String> {
    // A NUL can never be part of a number, boolean or base64 value: cut
    // there, as the reference does. Strings keep their NULs (our own
    // encoder sends them raw and they round-trip exactly).
    let s = match memchr::memchr(0, s).filter(|_| ty != OmlType::String) {
        Some(nul) => {
            lenient.nul_cut += 1;
            &s[..nul]
        }
        None => s,
    };
    let bad = || format!("cannot read {:?} as {ty}", String::from_utf8_lossy(s));
    Ok(match ty {
        OmlType::Int32 => Value::Int32(num(s).ok_or_else(bad)?),
        OmlType::UInt32 => Value::UInt32(num(s).ok_or_else(bad)?),
        OmlType::Int64 => Value::Int64(num(s).ok_or_else(bad)?),
        OmlType::UInt64 => Value::UInt64(num(s).ok_or_else(bad)?),
        OmlType::Guid => Value::Guid(digits(s).ok_or_else(bad)?),
        OmlType::Double => Value::Double(parse_double(s).ok_or_else(bad)?),
        OmlType::Bool => {
            let (b, was_lenient) = parse_bool_as_reference(s);
            lenient.bools += u64::from(was_lenient);
            Value::Bool(b)
        }
        OmlType::String => {
            let raw = unescape(s).map_err(|_| "string ends with a lone backslash".to_owned())?;
            Value::String(
                String::from_utf8(raw)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            )
        }
        OmlType::Blob => Value::Blob(
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| format!("invalid base64: {e}"))?,
        ),
        OmlType::VecDouble => Value::VecDouble(vector(s, parse_double)?),
        OmlType::VecInt32 => Value::VecInt32(vector(s, num)?),
        OmlType::VecUInt32 => Value::VecUInt32(vector(s, num)?),
        OmlType::VecInt64 => Value::VecInt64(vector(s, num)?),
        OmlType::VecUInt64 => Value::VecUInt64(vector(s, num)?),
        OmlType::VecBool => {
            let v = vector(s, |t| Some(parse_bool_as_reference(t)))?;
            lenient.bools += v.iter().filter(|(_, l)| *l).count() as u64;
            Value::VecBool(v.into_iter().map(|(b, _)| b).collect())
        }
    })
}

/// Decodes one text line (without LF/CR).
pub(crate) fn decode_line(
    line: &[u8],
    table: &mut SchemaTable,
    lenient: &mut Leniency,
) -> Result<Sample, ErrorKind> {
    let mut fields = line.split(|&b| b == b'\t');
    let mut prefix = [&b""[..]; 3];
    for (i, p) in prefix.iter_mut().enumerate() {
        *p = fields.next().ok_or(ErrorKind::TooFewFields { found: i })?;
    }
    let bad = |what: &'static str, text: &[u8]| ErrorKind::BadPrefix {
        what,
        text: String::from_utf8_lossy(text).into_owned(),
    };
    let ts = parse_double(prefix[0]).ok_or_else(|| bad("timestamp", prefix[0]))?;
    let index: u32 = digits(prefix[1]).ok_or_else(|| bad("stream index", prefix[1]))?;
    let seq: i64 = num(prefix[2]).ok_or_else(|| bad("sequence number", prefix[2]))?;
    let schema = table
        .get(index)
        .ok_or(ErrorKind::UndeclaredStream { index })?;
    let mut values = Vec::with_capacity(schema.fields.len());
    let mut count = 0;
    for (i, raw) in fields.enumerate() {
        count += 1;
        let Some(f) = schema.fields.get(i) else {
            continue;
        };
        match parse_counted(raw, f.ty, lenient) {
            Ok(v) => values.push(v),
            Err(reason) => {
                return Err(ErrorKind::BadValue {
                    index,
                    error: ValueError {
                        field: i,
                        ty: f.ty,
                        reason,
                    },
                })
            }
        }
    }
    if count != schema.fields.len() {
        return Err(ErrorKind::ValueCount {
            index,
            name: schema.name.clone(),
            expected: schema.fields.len(),
            found: count,
        });
    }
    Ok(Sample {
        stream: index,
        seq,
        ts,
        values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bools() {
        for t in ["T", "t", "True", "TRUE", "tr", "1"] {
            assert_eq!(parse_bool(t.as_bytes()), Some(true), "{t}");
        }
        for f in ["F", "f", "False", "FALSE", "fal", "0", ""] {
            assert_eq!(parse_bool(f.as_bytes()), Some(false), "{f}");
        }
        for bad in ["FALSEx", "yes", "no", "2", "truex"] {
            assert_eq!(parse_bool(bad.as_bytes()), None, "{bad}");
            assert_eq!(
                parse_bool_as_reference(bad.as_bytes()),
                (true, true),
                "{bad}"
            );
        }
        assert_eq!(parse_bool_as_reference(b"fa"), (false, false));
        assert_eq!(parse_bool_as_reference(b"0"), (false, false));
    }

    /// What the reference stores for what stock clients send in text mode;
    /// each of these rows was refused before.
    #[test]
    fn lenient_values_are_read_and_counted() {
        let mut n = Leniency::default();
        assert_eq!(
            parse_counted(b"yes", OmlType::Bool, &mut n),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            parse_counted(b"on", OmlType::Bool, &mut n),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            parse_counted(b"no", OmlType::Bool, &mut n),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            parse_counted(b"F", OmlType::Bool, &mut n),
            Ok(Value::Bool(false))
        );
        assert_eq!(n.bools, 3);
        assert_eq!(
            parse_counted(b"-41.56221\0", OmlType::Double, &mut n),
            Ok(Value::Double(-41.56221))
        );
        assert_eq!(
            parse_counted(b"7\0\0x", OmlType::Int32, &mut n),
            Ok(Value::Int32(7))
        );
        assert_eq!(
            parse_counted(b"ab\0cd", OmlType::String, &mut n),
            Ok(Value::String("ab\0cd".into())),
            "strings keep their NULs"
        );
        assert_eq!(n.nul_cut, 2);
        assert_eq!(
            parse_counted(b"3 yes F 1", OmlType::VecBool, &mut n),
            Ok(Value::VecBool(vec![true, false, true]))
        );
        assert_eq!(n.bools, 4);
    }

    #[test]
    // 3.141593 is pi as liboml2's `%f` prints it, on purpose.
    #[allow(clippy::approx_constant)]
    fn doubles_as_the_reference_writes_them() {
        assert_eq!(parse_double(b"3.141593"), Some(3.141593));
        assert_eq!(parse_double(b"0.000000"), Some(0.0));
        assert!(parse_double(b"-nan").unwrap().is_nan());
        assert_eq!(parse_double(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_double(b"1e-300"), Some(1e-300));
        assert_eq!(parse_double(b"abc"), None);
        assert_eq!(parse_double(b""), None);
    }

    /// `num` must read exactly what `str::parse` reads.
    #[test]
    fn decimal_parsing_matches_std() {
        fn check<T: Decimal + std::str::FromStr + PartialEq + std::fmt::Debug>(s: &[u8]) {
            let std = std::str::from_utf8(s)
                .ok()
                .and_then(|s| s.parse::<T>().ok());
            assert_eq!(num::<T>(s), std, "{:?}", String::from_utf8_lossy(s));
        }
        fn all(s: &[u8]) {
            check::<u16>(s);
            check::<u32>(s);
            check::<u64>(s);
            check::<i32>(s);
            check::<i64>(s);
        }
        for s in [
            "",
            "+",
            "-",
            "0",
            "-0",
            "+0",
            "00",
            "007",
            "+-1",
            "-+1",
            "1-",
            " 1",
            "1 ",
            "1.0",
            "1e3",
            "0x10",
            "65535",
            "65536",
            "-1",
            "2147483647",
            "2147483648",
            "-2147483648",
            "-2147483649",
            "4294967295",
            "4294967296",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "18446744073709551615",
            "18446744073709551616",
            "99999999999999999999999",
            "000000000000000000000000000042",
            "-000000000000000000000000009223372036854775808",
            "\u{661}",
            "1\u{e9}",
        ] {
            all(s.as_bytes());
        }
        // Random strings over an alphabet that makes near misses likely.
        let alphabet = b"0123456789+- x\xff";
        let mut state = 0x1234_5678u32;
        for _ in 0..100_000 {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let len = (state % 24) as usize;
            let s: Vec<u8> = (0..len)
                .map(|i| {
                    let r = state.rotate_left(i as u32 * 5) as usize;
                    if i > 0 && !r.is_multiple_of(3) {
                        b'0' + (r % 10) as u8
                    } else {
                        alphabet[r % alphabet.len()]
                    }
                })
                .collect();
            all(&s);
        }
    }

    #[test]
    fn strict_integers() {
        assert!(parse_value(b"abc", OmlType::Int32).is_err());
        assert!(parse_value(b"", OmlType::Int32).is_err());
        assert!(parse_value(b"99999999999999", OmlType::Int32).is_err());
        assert!(parse_value(b"-1", OmlType::UInt32).is_err());
        assert!(parse_value(b"0x10", OmlType::Int64).is_err());
        assert_eq!(
            parse_value(b"18446744073709551615", OmlType::UInt64),
            Ok(Value::UInt64(u64::MAX))
        );
    }

    #[test]
    fn vectors_and_blobs() {
        assert_eq!(
            parse_value(b"3 True False True", OmlType::VecBool),
            Ok(Value::VecBool(vec![true, false, true]))
        );
        assert_eq!(
            parse_value(b"0", OmlType::VecInt32),
            Ok(Value::VecInt32(vec![]))
        );
        assert!(parse_value(b"2 1", OmlType::VecInt32).is_err());
        assert!(parse_value(b"1 1 2", OmlType::VecInt32).is_err());
        assert!(parse_value(b"", OmlType::VecInt32).is_err());
        assert_eq!(
            parse_value(b"AAEC/w==", OmlType::Blob),
            Ok(Value::Blob(vec![0, 1, 2, 255]))
        );
        assert_eq!(parse_value(b"", OmlType::Blob), Ok(Value::Blob(vec![])));
        for bad in ["QQ", "Q===", "not-b64"] {
            assert!(parse_value(bad.as_bytes(), OmlType::Blob).is_err(), "{bad}");
        }
    }
}
