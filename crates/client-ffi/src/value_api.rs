//! The `oml_value_*` helpers and `oml_type_to_s` / `oml_type_from_s`.
//!
//! An `OmlValue` owns its string, blob or vector storage when the `size`
//! field is non-zero; the storage comes from `oml_malloc`, exactly as the
//! header macros manage it, so C and these helpers can be mixed freely.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::fmt::Write as _;

use crate::alloc::{dup_bytes, oml_free};
use crate::guard::ffi_guard;
use crate::log;
use crate::types::*;

/// Releases what `u` (of type `t`) owns; the value is left zeroed.
///
/// # Safety
/// `u`'s owned pointers come from `oml_malloc`.
unsafe fn release(u: &mut OmlValueU, t: OmlValueT) {
    // SAFETY: reading plain union members; owned pointers are ours.
    unsafe {
        let (ptr, size) = match t {
            OML_STRING_VALUE => (u.string_value.ptr.cast::<c_void>(), u.string_value.size),
            OML_BLOB_VALUE => (u.blob_value.ptr, u.blob_value.size),
            t if (OML_VECTOR_DOUBLE_VALUE..=OML_VECTOR_BOOL_VALUE).contains(&t) => {
                (u.vector_value.ptr, u.vector_value.size)
            }
            _ => (std::ptr::null_mut(), 0),
        };
        if size > 0 {
            oml_free(ptr);
        }
    }
    *u = OmlValueU::zeroed();
}

/// `void oml_value_init(OmlValue *v)`.
///
/// # Safety
/// `v` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn oml_value_init(v: *mut OmlValue) {
    // SAFETY: same contract.
    unsafe { oml_value_array_init(v, 1) }
}

/// `void oml_value_array_init(OmlValue *v, unsigned int n)`: zeroes.
///
/// # Safety
/// `v` is NULL or writable for `n` values.
#[no_mangle]
pub unsafe extern "C" fn oml_value_array_init(v: *mut OmlValue, n: c_uint) {
    if !v.is_null() {
        // SAFETY: writable for n values (caller contract); zero is valid.
        unsafe { std::ptr::write_bytes(v, 0, n as usize) }
    }
}

/// `int oml_value_reset(OmlValue *v)`: frees owned storage, zeroes.
///
/// # Safety
/// `v` is NULL or a valid value.
#[no_mangle]
pub unsafe extern "C" fn oml_value_reset(v: *mut OmlValue) -> c_int {
    ffi_guard(-1, || {
        // SAFETY: caller contract.
        if let Some(v) = unsafe { v.as_mut() } {
            // SAFETY: owned storage is from oml_malloc.
            unsafe { release(&mut v.value, v.type_) };
            v.type_ = 0;
        }
        0
    })
}

/// `void oml_value_array_reset(OmlValue *v, unsigned int n)`.
///
/// # Safety
/// `v` is NULL or `n` valid values.
#[no_mangle]
pub unsafe extern "C" fn oml_value_array_reset(v: *mut OmlValue, n: c_uint) {
    for i in 0..n as usize {
        // SAFETY: caller contract.
        unsafe { oml_value_reset(v.wrapping_add(i)) };
        if v.is_null() {
            return;
        }
    }
}

/// `void oml_value_set_type(OmlValue *v, OmlValueT type)`.
///
/// # Safety
/// `v` is NULL or a valid value.
#[no_mangle]
pub unsafe extern "C" fn oml_value_set_type(v: *mut OmlValue, t: OmlValueT) {
    // SAFETY: caller contract.
    if let Some(val) = unsafe { v.as_mut() } {
        if val.type_ != t {
            // SAFETY: as above.
            unsafe { oml_value_reset(v) };
            val.type_ = t;
        }
    }
}

/// `OmlValueT oml_value_get_type(OmlValue *v)`.
///
/// # Safety
/// `v` is NULL or a valid value.
#[no_mangle]
pub unsafe extern "C" fn oml_value_get_type(v: *mut OmlValue) -> OmlValueT {
    // SAFETY: caller contract.
    unsafe { v.as_ref() }.map_or(OML_UNKNOWN_VALUE, |v| v.type_)
}

/// `OmlValueU *oml_value_get_value(OmlValue *v)`.
///
/// # Safety
/// `v` is NULL or a valid value.
#[no_mangle]
pub unsafe extern "C" fn oml_value_get_value(v: *mut OmlValue) -> *mut OmlValueU {
    if v.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: a valid value (caller contract).
    unsafe { std::ptr::addr_of_mut!((*v).value) }
}

/// `int oml_value_set(OmlValue *to, const OmlValueU *value, OmlValueT
/// type)`: deep copy. −1 for NULL arguments, a NULL string or blob pointer,
/// or an unknown type.
///
/// # Safety
/// `to` is NULL or a valid value; `value` is NULL or a value of `type`.
#[no_mangle]
pub unsafe extern "C" fn oml_value_set(
    to: *mut OmlValue,
    value: *const OmlValueU,
    t: OmlValueT,
) -> c_int {
    ffi_guard(-1, || {
        // SAFETY: caller contract.
        let (Some(dst), Some(src)) = (unsafe { to.as_mut() }, unsafe { value.as_ref() }) else {
            return -1;
        };
        let src = *src;
        // SAFETY: as above.
        unsafe { oml_value_set_type(to, t) };
        // SAFETY: the old storage is ours; `src` is a value of type `t`.
        unsafe { release(&mut dst.value, t) };
        // SAFETY: union members of plain data; pointers valid per contract.
        unsafe {
            match t {
                OML_STRING_VALUE => {
                    let s = src.string_value;
                    if s.ptr.is_null() {
                        log::warn("oml_value_set: NULL string");
                        return -1;
                    }
                    let bytes = std::slice::from_raw_parts(s.ptr.cast::<u8>(), s.length);
                    own(&mut dst.value, bytes, t);
                }
                OML_BLOB_VALUE => {
                    let b = src.blob_value;
                    if b.ptr.is_null() {
                        log::warn("oml_value_set: NULL blob");
                        return -1;
                    }
                    own(
                        &mut dst.value,
                        std::slice::from_raw_parts(b.ptr.cast(), b.length),
                        t,
                    );
                }
                t if (OML_VECTOR_DOUBLE_VALUE..=OML_VECTOR_BOOL_VALUE).contains(&t) => {
                    let v = src.vector_value;
                    let n = usize::from(v.nof_elts) * usize::from(v.elt_sz);
                    let bytes: &[u8] = if v.ptr.is_null() || n == 0 {
                        &[]
                    } else {
                        std::slice::from_raw_parts(v.ptr.cast(), n)
                    };
                    own(&mut dst.value, bytes, t);
                    dst.value.vector_value.nof_elts = if bytes.is_empty() { 0 } else { v.nof_elts };
                    dst.value.vector_value.elt_sz = v.elt_sz;
                }
                t if oml_type(t).is_some() => dst.value = src,
                _ => {
                    log::error(&format!("oml_value_set: unknown type {t}"));
                    return -1;
                }
            }
        }
        0
    })
}

/// Stores a fresh owned copy of `bytes` in `u` as type `t`.
fn own(u: &mut OmlValueU, bytes: &[u8], t: OmlValueT) {
    let p = dup_bytes(bytes);
    let (len, size) = if p.is_null() {
        (0, 0)
    } else {
        (bytes.len(), bytes.len() + 1)
    };
    match t {
        OML_STRING_VALUE => {
            u.string_value = OmlString {
                ptr: p.cast(),
                length: len,
                size,
                is_const: 0,
            }
        }
        OML_BLOB_VALUE => {
            u.blob_value = OmlBlob {
                ptr: p,
                length: len,
                size,
            }
        }
        _ => {
            u.vector_value = OmlVector {
                ptr: p,
                length: len,
                size,
                nof_elts: 0,
                elt_sz: 0,
            }
        }
    }
}

/// `int oml_value_duplicate(OmlValue *dst, OmlValue *src)`.
///
/// # Safety
/// Both NULL or valid values.
#[no_mangle]
pub unsafe extern "C" fn oml_value_duplicate(dst: *mut OmlValue, src: *mut OmlValue) -> c_int {
    if src.is_null() {
        return -1;
    }
    // SAFETY: caller contract.
    unsafe { oml_value_set(dst, std::ptr::addr_of!((*src).value), (*src).type_) }
}

/// `const char *oml_type_to_s(OmlValueT type)`.
#[no_mangle]
pub extern "C" fn oml_type_to_s(t: OmlValueT) -> *const c_char {
    let name: &'static CStr = match t {
        OML_LONG_VALUE => c"long",
        OML_INT32_VALUE => c"int32",
        OML_UINT32_VALUE => c"uint32",
        OML_INT64_VALUE => c"int64",
        OML_UINT64_VALUE => c"uint64",
        OML_DOUBLE_VALUE => c"double",
        OML_STRING_VALUE => c"string",
        OML_BLOB_VALUE => c"blob",
        OML_GUID_VALUE => c"guid",
        OML_BOOL_VALUE => c"bool",
        OML_VECTOR_DOUBLE_VALUE => c"[double]",
        OML_VECTOR_INT32_VALUE => c"[int32]",
        OML_VECTOR_UINT32_VALUE => c"[uint32]",
        OML_VECTOR_INT64_VALUE => c"[int64]",
        OML_VECTOR_UINT64_VALUE => c"[uint64]",
        OML_VECTOR_BOOL_VALUE => c"[bool]",
        _ => c"unknown",
    };
    name.as_ptr()
}

/// `OmlValueT oml_type_from_s(const char *s)`.
///
/// # Safety
/// `s` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn oml_type_from_s(s: *const c_char) -> OmlValueT {
    // SAFETY: caller contract.
    match unsafe { crate::api::opt_str(s) } {
        Some(name) => type_from_name(&name),
        None => OML_UNKNOWN_VALUE,
    }
}

/// Text form of a value (what `oml_value_to_s` writes), or `None` for
/// unknown types.
///
/// # Safety
/// `u` is a valid value of type `t`.
unsafe fn to_text(u: &OmlValueU, t: OmlValueT) -> Option<String> {
    let mut odd = None;
    // SAFETY: caller contract.
    let arg = unsafe { crate::values::read(u, t, &mut odd) };
    let mut s = String::new();
    use omsp::ValueRef as V;
    fn list<T: std::fmt::Display>(s: &mut String, v: &[T]) {
        let _ = write!(s, "{}", v.len());
        for x in v {
            let _ = write!(s, " {x}");
        }
    }
    if t == OML_LONG_VALUE {
        // SAFETY: plain data.
        return Some(unsafe { u.long_value }.to_string());
    }
    oml_type(t)?;
    match arg.as_ref() {
        V::Int32(x) => s = x.to_string(),
        V::UInt32(x) => s = x.to_string(),
        V::Int64(x) => s = x.to_string(),
        V::UInt64(x) | V::Guid(x) => s = x.to_string(),
        V::Double(x) => s = format!("{x:.6}"),
        V::String(x) => s = x.to_owned(),
        V::Blob(b) => {
            s.push_str("0x");
            for x in b {
                let _ = write!(s, "{x:02x}");
            }
        }
        V::Bool(b) => s = b.to_string(),
        V::VecDouble(v) => list(&mut s, v),
        V::VecInt32(v) => list(&mut s, v),
        V::VecUInt32(v) => list(&mut s, v),
        V::VecInt64(v) => list(&mut s, v),
        V::VecUInt64(v) => list(&mut s, v),
        V::VecBool(v) => list(&mut s, v),
    }
    Some(s)
}

/// `char *oml_value_to_s(OmlValue *value, char *buf, size_t size)`: the
/// text form, truncated to fit and NUL-terminated. NULL for an unknown
/// type or no buffer.
///
/// # Safety
/// `value` is NULL or valid; `buf` is NULL or writable for `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn oml_value_to_s(
    value: *mut OmlValue,
    buf: *mut c_char,
    size: usize,
) -> *mut c_char {
    ffi_guard(std::ptr::null_mut(), || {
        // SAFETY: caller contract.
        let Some(v) = (unsafe { value.as_ref() }) else {
            return std::ptr::null_mut();
        };
        if buf.is_null() || size == 0 {
            return std::ptr::null_mut();
        }
        // SAFETY: a valid value.
        let Some(text) = (unsafe { to_text(&v.value, v.type_) }) else {
            return std::ptr::null_mut();
        };
        let n = text.len().min(size - 1);
        // SAFETY: n + 1 <= size bytes are writable.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), buf, n);
            buf.add(n).write(0);
        }
        buf
    })
}

/// `int oml_value_from_s(OmlValue *value, const char *s)`: parses `s` as
/// the value's current type (integers accept `0x` hex; bools are false for
/// any prefix of `false`, as the server reads them). Returns 0 or −1.
///
/// # Safety
/// `value` is NULL or valid; `s` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn oml_value_from_s(value: *mut OmlValue, s: *const c_char) -> c_int {
    ffi_guard(-1, || {
        // SAFETY: caller contract.
        let (Some(v), Some(text)) = (unsafe { value.as_mut() }, unsafe { crate::api::opt_str(s) })
        else {
            return -1;
        };
        let t = v.type_;
        // SAFETY: the value's old storage is ours.
        unsafe { release(&mut v.value, t) };
        match crate::value_parse::parse(&text, t) {
            Some(parsed) => {
                // SAFETY: `parsed` is a plain value or owns oml_malloc storage.
                v.value = parsed;
                0
            }
            None => {
                log::error(&format!("cannot read {text:?} as {}", type_name(t)));
                -1
            }
        }
    })
}

/// `int oml_value_from_typed_s(OmlValue *value, const char *type_s, const
/// char *s)`.
///
/// # Safety
/// As [`oml_value_from_s`]; `type_s` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn oml_value_from_typed_s(
    value: *mut OmlValue,
    type_s: *const c_char,
    s: *const c_char,
) -> c_int {
    // SAFETY: caller contract.
    unsafe {
        oml_value_set_type(value, oml_type_from_s(type_s));
        oml_value_from_s(value, s)
    }
}

/// `double oml_value_to_double(OmlValue *value)`: 0 for non-numeric types.
///
/// # Safety
/// `value` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn oml_value_to_double(value: *mut OmlValue) -> f64 {
    // SAFETY: caller contract; numeric members are plain data.
    let Some(v) = (unsafe { value.as_ref() }) else {
        return 0.0;
    };
    // SAFETY: as above.
    unsafe {
        match v.type_ {
            OML_LONG_VALUE => v.value.long_value as f64,
            OML_INT32_VALUE => f64::from(v.value.int32_value),
            OML_UINT32_VALUE => f64::from(v.value.uint32_value),
            OML_INT64_VALUE => v.value.int64_value as f64,
            OML_UINT64_VALUE => v.value.uint64_value as f64,
            OML_DOUBLE_VALUE => v.value.double_value,
            _ => 0.0,
        }
    }
}

/// `int oml_value_to_int(OmlValue *value)`: 0 for non-numeric types.
///
/// # Safety
/// `value` is NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn oml_value_to_int(value: *mut OmlValue) -> c_int {
    // SAFETY: caller contract; numeric members are plain data.
    let Some(v) = (unsafe { value.as_ref() }) else {
        return 0;
    };
    // SAFETY: as above.
    unsafe {
        match v.type_ {
            OML_LONG_VALUE => v.value.long_value as c_int,
            OML_INT32_VALUE => v.value.int32_value,
            OML_UINT32_VALUE => v.value.uint32_value as c_int,
            OML_INT64_VALUE => v.value.int64_value as c_int,
            OML_UINT64_VALUE => v.value.uint64_value as c_int,
            OML_DOUBLE_VALUE => v.value.double_value as c_int,
            _ => 0,
        }
    }
}
