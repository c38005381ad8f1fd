//! `OmlMP`: the measurement-point object C programs hold pointers to.
//!
//! The public fields come first, in liboml2's order (spec §8.2), so code
//! that reads `mp->name` or `mp->param_count` keeps working; the private
//! part follows and is invisible to C. Objects are allocated once and never
//! freed (C may keep the pointer for the life of the process; an inject
//! after `omlc_close` must fail cleanly, not touch freed memory).
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, CString};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use crate::runtime::MpHandle;
use crate::types::{OmlMPDef, OmlMStream, OmlValueT};

/// Marks a live `OmlMP` (a cheap check against foreign pointers).
const MAGIC: u64 = 0x5347_4d50_4f4d_4c32; // "SGMPOML2"

/// `OmlMP`. Fields up to `default_ms` are the C declaration.
#[repr(C)]
pub struct OmlMP {
    /// `name`: the MP name (our copy).
    pub name: *const c_char,
    /// `param_defs`: the fields (our copy, terminated by `{NULL, 0}`).
    pub param_defs: *mut OmlMPDef,
    /// `param_count`.
    pub param_count: c_int,
    /// `table_count`: 1 (the default stream).
    pub table_count: c_int,
    /// `streams`: the default stream.
    pub streams: *mut OmlMStream,
    /// `active`: 1 while the library is started.
    pub active: c_int,
    /// `mutexP`: points at `mutex`.
    pub mutex_p: *mut libc::pthread_mutex_t,
    /// `mutex`: not used by the library (injection needs no lock).
    pub mutex: libc::pthread_mutex_t,
    /// `next`: the next MP in registration order.
    pub next: *mut OmlMP,
    /// `default_ms`: the default stream.
    pub default_ms: *mut OmlMStream,
    /// Not visible from C.
    private: Private,
}

/// The part of an MP that C does not see. Immutable after creation apart
/// from atomics, so shared references to it are sound while C reads or
/// writes the public fields.
pub(crate) struct Private {
    /// [`MAGIC`] while valid.
    magic: u64,
    /// Field types as declared in C (read by inject).
    pub(crate) c_types: Vec<OmlValueT>,
    /// The MP name.
    pub(crate) mp_name: String,
    /// The runtime's MP.
    pub(crate) handle: MpHandle,
    /// A NULL-pointer warning was already logged for this MP.
    pub(crate) warned: AtomicBool,
    /// Backing storage for the C-visible pointers.
    _storage: Storage,
}

/// Memory the public pointers point into.
struct Storage {
    _name: CString,
    _field_names: Vec<CString>,
    _defs: Vec<OmlMPDef>,
    _stream: Box<OmlMStream>,
}

/// A pointer to a leaked `OmlMP`, shareable between threads (the object is
/// never freed, and its private part is immutable).
#[derive(Clone, Copy)]
pub(crate) struct MpPtr(pub(crate) *mut OmlMP);

// SAFETY: see the type's documentation.
unsafe impl Send for MpPtr {}

/// What an MP is made of.
pub(crate) struct NewMp<'a> {
    pub(crate) name: &'a str,
    pub(crate) fields: Vec<(String, OmlValueT)>,
    pub(crate) handle: MpHandle,
    /// `<app>_<mp>` for the stream's `table_name`.
    pub(crate) table: String,
    /// `(samples, interval)` of the default stream.
    pub(crate) window: (i64, f64),
    pub(crate) active: bool,
}

/// Allocates (and leaks) the C object of a new MP.
pub(crate) fn create(new: NewMp<'_>) -> MpPtr {
    let name = cstring(new.name);
    let field_names: Vec<CString> = new.fields.iter().map(|(n, _)| cstring(n)).collect();
    let mut defs: Vec<OmlMPDef> = field_names
        .iter()
        .zip(&new.fields)
        .map(|(n, (_, t))| OmlMPDef {
            name: n.as_ptr(),
            param_types: *t,
        })
        .collect();
    defs.push(OmlMPDef {
        name: ptr::null(),
        param_types: 0,
    });
    let mut stream = Box::new(stream(&new.table, new.window));
    let stream_ptr: *mut OmlMStream = &mut *stream;
    let mp = Box::new(OmlMP {
        name: name.as_ptr(),
        param_defs: defs.as_mut_ptr(),
        param_count: new.fields.len() as c_int,
        table_count: 1,
        streams: stream_ptr,
        active: c_int::from(new.active),
        mutex_p: ptr::null_mut(),
        mutex: libc::PTHREAD_MUTEX_INITIALIZER,
        next: ptr::null_mut(),
        default_ms: stream_ptr,
        private: Private {
            magic: MAGIC,
            c_types: new.fields.iter().map(|(_, t)| *t).collect(),
            mp_name: new.name.to_owned(),
            handle: new.handle,
            warned: AtomicBool::new(false),
            _storage: Storage {
                _name: name,
                _field_names: field_names,
                _defs: defs,
                _stream: stream,
            },
        },
    });
    let raw = Box::into_raw(mp);
    // SAFETY: `raw` is a fresh, leaked allocation that nothing else sees yet.
    unsafe {
        (*raw).mutex_p = ptr::addr_of_mut!((*raw).mutex);
        (*stream_ptr).mp = raw;
    }
    MpPtr(raw)
}

/// The informational stream object of an MP.
fn stream(table: &str, (samples, interval): (i64, f64)) -> OmlMStream {
    let mut table_name = [0 as c_char; 64];
    for (d, s) in table_name.iter_mut().zip(table.bytes().take(63)) {
        *d = s as c_char;
    }
    // SAFETY: every field is plain data or a pointer, for which all-zero
    // bytes are valid (pthread types are zero-initialisable on the
    // platforms we build for, and the library never uses them).
    let mut s: OmlMStream = unsafe { std::mem::zeroed() };
    s.table_name = table_name;
    s.sample_thres = samples.clamp(0, i64::from(c_int::MAX)) as c_int;
    s.sample_interval = interval;
    s
}

/// A name without interior NULs (already validated as an OML name).
fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}

/// The private part of `mp`, if it is one of ours.
///
/// # Safety
/// `mp` must be NULL or point to readable memory at least as large as an
/// `OmlMP` (any pointer returned by `omlc_add_mp` qualifies).
pub(crate) unsafe fn private<'a>(mp: *const OmlMP) -> Option<&'a Private> {
    if mp.is_null() {
        return None;
    }
    // SAFETY: readable memory (caller contract); `Private` is never mutated
    // after creation except through atomics, and our objects live forever.
    let p = unsafe { &*ptr::addr_of!((*mp).private) };
    (p.magic == MAGIC).then_some(p)
}

/// Sets the C-visible `active` flag.
pub(crate) fn set_active(mp: MpPtr, active: bool) {
    // SAFETY: `mp` is one of our live objects; a plain int store, as C
    // itself would do.
    unsafe { ptr::addr_of_mut!((*mp.0).active).write_volatile(c_int::from(active)) }
}

/// Links `prev.next = next`.
pub(crate) fn link(prev: MpPtr, next: MpPtr) {
    // SAFETY: both are our live objects; `next` is a plain pointer field.
    unsafe { ptr::addr_of_mut!((*prev.0).next).write(next.0) }
}

impl Private {
    /// Logs a NULL-pointer warning once per MP, later ones at debug level.
    pub(crate) fn warn_once(&self, msg: &str) {
        if self.warned.swap(true, Relaxed) {
            crate::log::emit(crate::log::O_LOG_DEBUG, msg);
        } else {
            crate::log::warn(&format!("{msg} (reported once per measurement point)"));
        }
    }
}
