//! `oml_malloc` and friends: the allocator behind the value macros.
//!
//! Each block starts with a 16-byte header holding the requested size, so
//! `oml_malloc_usable_size` is exact and portable (liboml2 asked the C
//! library instead). The header keeps the malloc alignment of the data.
//! Blocks must be released with `oml_free`, never `free`, and only blocks
//! from these functions may be passed to them.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_void};
use std::ptr;

use crate::guard::ffi_guard;

/// Bytes before the data: the size, padded to 16 for alignment.
const HEADER: usize = 16;

/// The block start of data pointer `p`.
///
/// # Safety
/// `p` must come from [`oml_malloc`] (or calloc/realloc/strndup here).
unsafe fn block(p: *mut c_void) -> *mut u8 {
    // SAFETY: `p` is HEADER bytes into a block we allocated (caller contract).
    unsafe { p.cast::<u8>().sub(HEADER) }
}

/// Allocates `size` bytes (at least one) with a size header; NULL on
/// failure.
fn alloc(size: usize, zero: bool) -> *mut c_void {
    let Some(total) = size.checked_add(HEADER) else {
        return ptr::null_mut();
    };
    // SAFETY: plain C allocation; the result is checked before use.
    let b = unsafe {
        if zero {
            libc::calloc(1, total)
        } else {
            libc::malloc(total)
        }
    };
    if b.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: `b` holds at least HEADER bytes, aligned for usize (malloc
    // alignment); the data starts HEADER bytes in.
    unsafe {
        b.cast::<usize>().write(size);
        b.cast::<u8>().add(HEADER).cast()
    }
}

/// `void *oml_malloc(size_t size)`.
#[no_mangle]
pub extern "C" fn oml_malloc(size: usize) -> *mut c_void {
    ffi_guard(ptr::null_mut(), || alloc(size, false))
}

/// `void *oml_calloc(size_t count, size_t size)`: zeroed.
#[no_mangle]
pub extern "C" fn oml_calloc(count: usize, size: usize) -> *mut c_void {
    ffi_guard(ptr::null_mut(), || match count.checked_mul(size) {
        Some(n) => alloc(n, true),
        None => ptr::null_mut(),
    })
}

/// `void *oml_realloc(void *ptr, size_t size)`.
///
/// # Safety
/// `p` is NULL or a live block from these functions.
#[no_mangle]
pub unsafe extern "C" fn oml_realloc(p: *mut c_void, size: usize) -> *mut c_void {
    ffi_guard(ptr::null_mut(), || {
        if p.is_null() {
            return alloc(size, false);
        }
        let Some(total) = size.checked_add(HEADER) else {
            return ptr::null_mut();
        };
        // SAFETY: `p` is a live block (caller contract); realloc keeps the
        // header bytes, which we then update.
        unsafe {
            let b = libc::realloc(block(p).cast(), total);
            if b.is_null() {
                return ptr::null_mut();
            }
            b.cast::<usize>().write(size);
            b.cast::<u8>().add(HEADER).cast()
        }
    })
}

/// `void oml_free(void *ptr)`; NULL is ignored.
///
/// # Safety
/// `p` is NULL or a live block from these functions.
#[no_mangle]
pub unsafe extern "C" fn oml_free(p: *mut c_void) {
    ffi_guard((), || {
        if !p.is_null() {
            // SAFETY: a live block from `alloc` (caller contract).
            unsafe { libc::free(block(p).cast()) }
        }
    })
}

/// `size_t oml_malloc_usable_size(void *ptr)`: the size requested for the
/// block (0 for NULL).
///
/// # Safety
/// `p` is NULL or a live block from these functions.
#[no_mangle]
pub unsafe extern "C" fn oml_malloc_usable_size(p: *mut c_void) -> usize {
    ffi_guard(0, || {
        if p.is_null() {
            0
        } else {
            // SAFETY: the header of a live block (caller contract).
            unsafe { block(p).cast::<usize>().read() }
        }
    })
}

/// `char *oml_strndup(const char *s, size_t len)`: at most `len`
/// characters of `s`, NUL-terminated, in a block from `oml_malloc`.
///
/// # Safety
/// `s` is NULL or points to at least `len` bytes or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn oml_strndup(s: *const c_char, len: usize) -> *mut c_char {
    ffi_guard(ptr::null_mut(), || {
        if s.is_null() {
            return ptr::null_mut();
        }
        // SAFETY: `s` is readable up to its NUL or `len` bytes (contract).
        let n = unsafe { libc::strnlen(s, len) };
        let d = alloc(n + 1, false).cast::<c_char>();
        if !d.is_null() {
            // SAFETY: `d` has n + 1 bytes; `s` has n readable bytes.
            unsafe {
                ptr::copy_nonoverlapping(s, d, n);
                d.add(n).write(0);
            }
        }
        d
    })
}

/// Copies `bytes` into a fresh block (for owned strings and blobs built by
/// the value helpers), NUL-terminated for convenience. NULL on failure.
pub(crate) fn dup_bytes(bytes: &[u8]) -> *mut c_void {
    let d = alloc(bytes.len() + 1, false);
    if !d.is_null() {
        // SAFETY: `d` has len + 1 bytes, disjoint from `bytes`.
        unsafe {
            ptr::copy_nonoverlapping(bytes.as_ptr(), d.cast::<u8>(), bytes.len());
            d.cast::<u8>().add(bytes.len()).write(0);
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_pair_up() {
        // SAFETY: every pointer comes from these functions and is freed once.
        unsafe {
            let p = oml_malloc(10);
            assert_eq!(oml_malloc_usable_size(p), 10);
            let p = oml_realloc(p, 100);
            assert_eq!(oml_malloc_usable_size(p), 100);
            assert_eq!(p as usize % 8, 0);
            oml_free(p);
            let z = oml_calloc(4, 4);
            assert_eq!(std::slice::from_raw_parts(z.cast::<u8>(), 16), &[0; 16]);
            oml_free(z);
            oml_free(ptr::null_mut());
            assert_eq!(oml_malloc_usable_size(ptr::null_mut()), 0);
            assert!(oml_calloc(usize::MAX, 2).is_null());
            let s = oml_strndup(c"hello".as_ptr(), 3);
            assert_eq!(std::ffi::CStr::from_ptr(s).to_str().unwrap(), "hel");
            oml_free(s.cast());
        }
    }
}
