//! Text → `OmlValueU`, for `oml_value_from_s`: the forms `oml_value_to_s`
//! and the text encoding write.

use crate::alloc::dup_bytes;
use crate::types::*;

/// Parses `text` as C type `t`; owned storage comes from `oml_malloc`.
pub(crate) fn parse(text: &str, t: OmlValueT) -> Option<OmlValueU> {
    let mut u = OmlValueU::zeroed();
    match t {
        OML_LONG_VALUE => u.long_value = int(text)?.try_into().ok()?,
        OML_INT32_VALUE => u.int32_value = int(text)?.try_into().ok()?,
        OML_UINT32_VALUE => u.uint32_value = int(text)?.try_into().ok()?,
        OML_INT64_VALUE => u.int64_value = int(text)?.try_into().ok()?,
        OML_UINT64_VALUE => u.uint64_value = int(text)?.try_into().ok()?,
        OML_GUID_VALUE => u.guid_value = text.trim().parse().ok()?,
        OML_DOUBLE_VALUE => u.double_value = text.trim().parse().ok()?,
        OML_BOOL_VALUE => u.bool_value = u8::from(truth(text)),
        OML_STRING_VALUE => {
            let (ptr, len, size) = store(text.as_bytes())?;
            u.string_value = OmlString {
                ptr: ptr.cast(),
                length: len,
                size,
                is_const: 0,
            };
        }
        OML_BLOB_VALUE => {
            let text = text.strip_prefix("0x").unwrap_or(text);
            let bytes = hex(text)?;
            let (ptr, len, size) = store(&bytes)?;
            u.blob_value = OmlBlob {
                ptr,
                length: len,
                size,
            };
        }
        OML_VECTOR_DOUBLE_VALUE => {
            u.vector_value = vector(text, |s| s.parse::<f64>().ok().map(f64::to_ne_bytes))?
        }
        OML_VECTOR_INT32_VALUE => {
            u.vector_value = vector(text, |s| {
                int(s)
                    .and_then(|x| i32::try_from(x).ok())
                    .map(i32::to_ne_bytes)
            })?
        }
        OML_VECTOR_UINT32_VALUE => {
            u.vector_value = vector(text, |s| {
                int(s)
                    .and_then(|x| u32::try_from(x).ok())
                    .map(u32::to_ne_bytes)
            })?
        }
        OML_VECTOR_INT64_VALUE => {
            u.vector_value = vector(text, |s| {
                int(s)
                    .and_then(|x| i64::try_from(x).ok())
                    .map(i64::to_ne_bytes)
            })?
        }
        OML_VECTOR_UINT64_VALUE => {
            u.vector_value = vector(text, |s| {
                int(s)
                    .and_then(|x| u64::try_from(x).ok())
                    .map(u64::to_ne_bytes)
            })?
        }
        OML_VECTOR_BOOL_VALUE => u.vector_value = vector(text, |s| Some([u8::from(truth(s))]))?,
        _ => return None,
    }
    Some(u)
}

/// An integer in C `strtol` base-0 syntax: optional sign, then `0x` hex,
/// `0` octal or decimal.
fn int(text: &str) -> Option<i128> {
    let t = text.trim();
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i128::from_str_radix(h, 16).ok()?
    } else if t.len() > 1 && t.starts_with('0') {
        i128::from_str_radix(&t[1..], 8).ok()?
    } else {
        t.parse::<i128>().ok()?
    };
    Some(if neg { -v } else { v })
}

/// False only for a case-insensitive prefix of `false` (empty included).
fn truth(text: &str) -> bool {
    let t = text.trim().to_ascii_lowercase();
    !"false".starts_with(&t) && !matches!(t.as_str(), "0")
}

/// Bytes of an even-length hex string.
fn hex(text: &str) -> Option<Vec<u8>> {
    let b = text.trim().as_bytes();
    if !b.len().is_multiple_of(2) {
        return None;
    }
    b.chunks(2)
        .map(|c| u8::from_str_radix(std::str::from_utf8(c).ok()?, 16).ok())
        .collect()
}

/// A fresh owned copy: `(ptr, length, size)`.
fn store(bytes: &[u8]) -> Option<(*mut std::ffi::c_void, usize, usize)> {
    let p = dup_bytes(bytes);
    (!p.is_null()).then_some((p, bytes.len(), bytes.len() + 1))
}

/// `n e1 e2 …` into an owned vector of `N`-byte elements.
fn vector<const N: usize>(text: &str, elt: impl Fn(&str) -> Option<[u8; N]>) -> Option<OmlVector> {
    let mut words = text.split_whitespace();
    let n: usize = words.next()?.parse().ok()?;
    let n16 = u16::try_from(n).ok()?;
    let mut bytes = Vec::with_capacity(n * N);
    for _ in 0..n {
        bytes.extend_from_slice(&elt(words.next()?)?);
    }
    if words.next().is_some() {
        return None;
    }
    let (ptr, length, size) = store(&bytes)?;
    Some(OmlVector {
        ptr,
        length,
        size,
        nof_elts: n16,
        elt_sz: N as u16,
    })
}

#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use super::*;

    #[test]
    fn integers_like_strtol() {
        assert_eq!(int("0x10"), Some(16));
        assert_eq!(int("010"), Some(8));
        assert_eq!(int("-5"), Some(-5));
        assert_eq!(int("0"), Some(0));
        assert_eq!(int("x"), None);
    }

    #[test]
    fn bools() {
        for f in ["", "f", "FALSE", "fal", "0"] {
            assert!(!truth(f), "{f}");
        }
        for t in ["t", "true", "1", "falsey"] {
            assert!(truth(t), "{t}");
        }
    }

    #[test]
    fn values() {
        let u = parse("3 1 -2 7", OML_VECTOR_INT32_VALUE).unwrap();
        // SAFETY: a vector we just built; freed below.
        unsafe {
            let v = u.vector_value;
            assert_eq!((v.nof_elts, v.elt_sz), (3, 4));
            let got = std::slice::from_raw_parts(v.ptr.cast::<i32>(), 3);
            assert_eq!(got, [1, -2, 7]);
            crate::alloc::oml_free(v.ptr);
        }
        assert!(parse("2 1", OML_VECTOR_INT32_VALUE).is_none());
        assert!(parse("300", OML_UINT32_VALUE).is_some());
        assert!(parse("-1", OML_UINT32_VALUE).is_none());
    }
}
