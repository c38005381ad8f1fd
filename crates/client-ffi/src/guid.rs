//! GUIDs: `omlc_guid_generate`, `omlc_guid_to_string`,
//! `omlc_string_to_guid`.
#![allow(unsafe_code)]

use std::ffi::{c_char, CStr};

use crate::guard::ffi_guard;

/// `oml_guid_t omlc_guid_generate(void)`: random, never 0
/// (`OMLC_GUID_NULL`).
#[no_mangle]
pub extern "C" fn omlc_guid_generate() -> u64 {
    ffi_guard(1, || loop {
        let g = client::random::u64();
        if g != 0 {
            return g;
        }
    })
}

/// `size_t omlc_guid_to_string(oml_guid_t in, char *out)`: the decimal
/// form and a NUL into `out` (at least `MAX_GUID_STRING_SZ` = 21 bytes);
/// returns the digits written (0 if `out` is NULL).
///
/// # Safety
/// `out` is NULL or writable for 21 bytes.
#[no_mangle]
pub unsafe extern "C" fn omlc_guid_to_string(guid: u64, out: *mut c_char) -> usize {
    ffi_guard(0, || {
        if out.is_null() {
            return 0;
        }
        let s = guid.to_string();
        // SAFETY: at most 20 digits and a NUL fit the 21 bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(s.as_ptr().cast::<c_char>(), out, s.len());
            out.add(s.len()).write(0);
        }
        s.len()
    })
}

/// `ssize_t omlc_string_to_guid(const char *in, oml_guid_t *out)`: parses
/// a decimal GUID (leading spaces allowed); returns the characters read,
/// or −1 (and `*out = 0`) if there is no number or it is 2^64 or more.
///
/// # Safety
/// `s` is NULL or a C string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn omlc_string_to_guid(s: *const c_char, out: *mut u64) -> isize {
    ffi_guard(-1, || {
        let parsed = if s.is_null() {
            None
        } else {
            // SAFETY: a C string (caller contract).
            parse(unsafe { CStr::from_ptr(s) }.to_bytes())
        };
        let (value, used) = parsed.unwrap_or((0, -1));
        if !out.is_null() {
            // SAFETY: writable (caller contract).
            unsafe { out.write(value) };
        }
        used
    })
}

/// `(value, bytes consumed)` of a decimal number after optional spaces.
fn parse(b: &[u8]) -> Option<(u64, isize)> {
    let start = b.iter().take_while(|c| c.is_ascii_whitespace()).count();
    let digits = b[start..].iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let text = std::str::from_utf8(&b[start..start + digits]).ok()?;
    let v = text.parse::<u64>().ok()?;
    Some((v, (start + digits) as isize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut buf = [0 as c_char; 21];
        for g in [1, u64::MAX, omlc_guid_generate()] {
            // SAFETY: buffers of the documented sizes.
            unsafe {
                let n = omlc_guid_to_string(g, buf.as_mut_ptr());
                let mut back = 0;
                assert_eq!(omlc_string_to_guid(buf.as_ptr(), &mut back), n as isize);
                assert_eq!(back, g);
            }
        }
        assert_eq!(parse(b"18446744073709551616"), None);
        assert_eq!(parse(b" 12x"), Some((12, 3)));
        assert_eq!(parse(b"x"), None);
        assert_ne!(omlc_guid_generate(), omlc_guid_generate());
    }
}
