//! `omlc_inject`, `omlc_process` and `omlc_inject_metadata` (spec §8.1).
//!
//! Injection takes no global lock: the `OmlMP` pointer leads to the
//! runtime's MP handle, which copies the sample into the calling thread's
//! queue and returns.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int};
use std::mem::MaybeUninit;

use crate::api::opt_str;
use crate::guard::ffi_guard;
use crate::log;
use crate::mp::{self, OmlMP};
use crate::runtime::InjectError;
use crate::state;
use crate::types::{OmlValueT, OmlValueU, OML_STRING_VALUE};
use crate::values::{self, Arg, Oddity};

/// At most this many values go on the stack; wider MPs allocate.
const INLINE: usize = 16;

/// `int omlc_inject(OmlMP *mp, OmlValueU *values)`.
///
/// `values[i]` is read as field `i`'s declared type and copied before the
/// call returns. Returns 0 (also when the overload policy dropped the
/// sample), or −1 for NULL arguments, a pointer that is not an MP, before
/// `omlc_start` or after `omlc_close`.
///
/// # Safety
/// `mp` is NULL or a pointer from `omlc_add_mp`; `values` is NULL or has
/// one initialised value per field.
#[no_mangle]
pub unsafe extern "C" fn omlc_inject(mp: *mut OmlMP, values: *mut OmlValueU) -> c_int {
    ffi_guard(-1, || {
        // SAFETY: caller contract.
        let Some(p) = (unsafe { mp::private(mp) }) else {
            log::warn("omlc_inject: NULL or invalid measurement point");
            return -1;
        };
        if values.is_null() {
            log::warn(&format!("omlc_inject({}): NULL values", p.mp_name));
            return -1;
        }
        // SAFETY: one value per field (caller contract).
        let values = unsafe { std::slice::from_raw_parts(values.cast_const(), p.c_types.len()) };
        let mut refs = [const { MaybeUninit::uninit() }; INLINE];
        // SAFETY: values as the macros leave them (caller contract).
        if let Some(refs) = unsafe { borrowed(values, &p.c_types, &mut refs) } {
            return finish(p, p.handle.inject(refs));
        }
        // SAFETY: as above.
        unsafe { inject_converted(p, values) }
    })
}

/// The values as the runtime takes them, borrowed from C memory without a
/// copy, in the common case where that is possible: at most [`INLINE`]
/// fields, none a vector, no NULL string or blob pointer, every string
/// valid UTF-8 without an embedded NUL. `None` sends the sample through
/// [`inject_converted`], which handles everything else (and logs).
///
/// This is the hot path: no allocation, no `Arg` array to fill
/// and drop, one pass over the fields. The values go into the caller's
/// uninitialised `refs`: returning the 400-byte array by value cost a
/// `memcpy` per inject (7 % of the application thread in the profile), and
/// initialising it first 10 ns per inject.
///
/// # Safety
/// As [`values::read`], for every value.
#[inline]
unsafe fn borrowed<'a, 'r>(
    values: &'a [OmlValueU],
    types: &[OmlValueT],
    refs: &'r mut [MaybeUninit<omsp::ValueRef<'a>>; INLINE],
) -> Option<&'r [omsp::ValueRef<'a>]> {
    let n = values.len();
    let slots = refs.get_mut(..n)?;
    for (r, (v, &t)) in slots.iter_mut().zip(values.iter().zip(types)) {
        // SAFETY: caller contract.
        r.write(unsafe { values::read_borrowed(v, t) }?);
    }
    // SAFETY: the first `n` elements were written just above (`ValueRef` is
    // `Copy`: nothing to drop when an early return leaves some unwritten).
    Some(unsafe { std::slice::from_raw_parts(refs.as_ptr().cast::<omsp::ValueRef<'a>>(), n) })
}

/// Converts and injects what [`borrowed`] could not take as it is: wide
/// MPs, vectors, NULL pointers, strings that need cutting or repairing.
///
/// # Safety
/// As [`values::read`], for every value.
#[cold]
unsafe fn inject_converted(p: &mp::Private, values: &[OmlValueU]) -> c_int {
    let mut odd = None;
    let n = values.len();
    let result = if n <= INLINE {
        let mut args: [Option<Arg<'_>>; INLINE] = Default::default();
        for (slot, (v, &t)) in args.iter_mut().zip(values.iter().zip(&p.c_types)) {
            // SAFETY: caller contract.
            *slot = Some(unsafe { values::read(v, t, &mut odd) });
        }
        let mut refs = [omsp::ValueRef::Int32(0); INLINE];
        for (r, a) in refs.iter_mut().zip(args.iter().flatten()) {
            *r = a.as_ref();
        }
        p.handle.inject(&refs[..n])
    } else {
        let args: Vec<Arg<'_>> = values
            .iter()
            .zip(&p.c_types)
            // SAFETY: as above.
            .map(|(v, &t)| unsafe { values::read(v, t, &mut odd) })
            .collect();
        let refs: Vec<omsp::ValueRef<'_>> = args.iter().map(Arg::as_ref).collect();
        p.handle.inject(&refs)
    };
    match odd.filter(|_| result.is_ok()) {
        Some(Oddity::NullPointer) => p.warn_once(&format!(
            "omlc_inject({}): a string, blob or vector had a NULL pointer; sent empty",
            p.mp_name
        )),
        Some(Oddity::BadElementSize(n)) => p.warn_once(&format!(
            "omlc_inject({}): a vector had elements of {n} bytes, which its type cannot take; sent empty",
            p.mp_name
        )),
        None => {}
    }
    finish(p, result)
}

/// The return code of an inject, logging failures.
fn finish(p: &mp::Private, r: Result<(), InjectError>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(InjectError::NotRunning(when)) => {
            log::emit(
                log::O_LOG_DEBUG,
                &format!("omlc_inject({}): ignored {when}", p.mp_name),
            );
            -1
        }
        Err(InjectError::Other(msg)) => {
            log::error(&format!("omlc_inject({}): {msg}", p.mp_name));
            -1
        }
    }
}

/// `void omlc_process(OmlMP *mp, OmlValueU *values)`: deprecated alias of
/// [`omlc_inject`].
///
/// # Safety
/// As [`omlc_inject`].
#[no_mangle]
pub unsafe extern "C" fn omlc_process(mp: *mut OmlMP, values: *mut OmlValueU) {
    // SAFETY: same contract.
    unsafe {
        omlc_inject(mp, values);
    }
}

/// `int omlc_inject_metadata(OmlMP *mp, const char *key, const OmlValueU
/// *value, OmlValueT type, const char *fname)`.
///
/// With `mp`, the subject is `.<app>_<mp>` (or `.<app>_<mp>.<fname>`, and
/// the field must exist); with a NULL `mp`, `.` (the application). Only
/// `OML_STRING_VALUE` values are accepted and `key` must be a valid name.
/// Allowed from `omlc_init` on; returns 0 or −1.
///
/// # Safety
/// `mp` is NULL or from `omlc_add_mp`; `key`, `fname` are NULL or C
/// strings; `value` is NULL or a string value as the macros leave it.
#[no_mangle]
pub unsafe extern "C" fn omlc_inject_metadata(
    mp: *mut OmlMP,
    key: *const c_char,
    value: *const OmlValueU,
    type_: OmlValueT,
    fname: *const c_char,
) -> c_int {
    ffi_guard(-1, || {
        if type_ != OML_STRING_VALUE {
            log::error(&format!(
                "omlc_inject_metadata: only OML_STRING_VALUE metadata is supported, not {}",
                crate::types::type_name(type_)
            ));
            return -1;
        }
        // SAFETY: caller contract.
        let (Some(key), false) = (unsafe { opt_str(key) }, value.is_null()) else {
            log::error("omlc_inject_metadata: NULL key or value");
            return -1;
        };
        // SAFETY: a string value (caller contract).
        let s = unsafe { (*value).string_value };
        if s.ptr.is_null() {
            log::error(&format!("omlc_inject_metadata({key}): NULL string"));
            return -1;
        }
        let mut odd = None;
        // SAFETY: as above.
        let text = match unsafe { values::read(&*value, OML_STRING_VALUE, &mut odd) } {
            Arg::Str(t) => t.into_owned(),
            _ => String::new(),
        };
        // SAFETY: caller contract.
        let field = unsafe { opt_str(fname) };
        let r = if mp.is_null() {
            if field.is_some() {
                log::error("omlc_inject_metadata: a field name needs a measurement point");
                return -1;
            }
            match state::lock().configurable() {
                Some(rt) => rt.inject_metadata(&key, &text),
                None => Err("call omlc_init first".to_owned()),
            }
        } else {
            // SAFETY: caller contract.
            match unsafe { mp::private(mp) } {
                Some(p) => p.handle.inject_metadata(&key, &text, field.as_deref()),
                None => Err("invalid measurement point".to_owned()),
            }
        };
        match r {
            Ok(()) => 0,
            Err(msg) => {
                log::error(&format!("omlc_inject_metadata({key}): {msg}"));
                -1
            }
        }
    })
}
