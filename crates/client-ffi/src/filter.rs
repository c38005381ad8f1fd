//! `omlf_register_filter`: custom filters written in C are not supported
//! (yet); streamgauge's filters are Rust (`--oml-list-filters`).
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};

use crate::guard::ffi_guard;

/// `int omlf_register_filter(const char *name, create, set, input, output,
/// newwindow, meta, OmlFilterDef *def)`: logs an error and returns −1.
///
/// # Safety
/// `name` is NULL or a C string; the other arguments are not used.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn omlf_register_filter(
    name: *const c_char,
    _create: *const c_void,
    _set: *const c_void,
    _input: *const c_void,
    _output: *const c_void,
    _newwindow: *const c_void,
    _meta: *const c_void,
    _def: *const c_void,
) -> c_int {
    ffi_guard(-1, || {
        // SAFETY: caller contract.
        let name = unsafe { crate::api::opt_str(name) }.unwrap_or_default();
        crate::log::error(&format!(
            "omlf_register_filter({name}): custom C filters are not supported by this \
             liboml2 (streamgauge); use a built-in filter (--oml-list-filters)"
        ));
        -1
    })
}
