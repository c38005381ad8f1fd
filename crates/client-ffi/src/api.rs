//! `omlc_init`, `omlc_add_mp`, `omlc_start`, `omlc_close` (spec §8.1).
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, CStr};
use std::io::Write;
use std::ptr;

use crate::guard::ffi_guard;
use crate::log::{self, OLogFn};
use crate::mp::{self, NewMp, OmlMP};
use crate::runtime::{self, Init, Runtime};
use crate::state::{self, Phase};
use crate::types::{oml_type, type_name, OmlMPDef};

/// More fields than this means a missing `{NULL, 0}` terminator.
const MAX_FIELDS: usize = 4096;

/// `int omlc_init(const char *application, int *argc, const char **argv,
/// o_log_fn log_fn)`.
///
/// Returns 0, 1 for `--oml-noop`, −1 on error; `--oml-help` and
/// `--oml-list-filters` print to standard output and `exit(0)`. On success
/// the `--oml-*` options are removed from `argv` (which stays
/// NULL-terminated) and `*argc` is updated; on error `argv` is unchanged.
///
/// # Safety
/// `application` is NULL or a C string; `argc` is NULL or points to the
/// number of C strings in `argv`; `argv` is NULL or writable for `*argc`
/// entries.
#[no_mangle]
pub unsafe extern "C" fn omlc_init(
    application: *const c_char,
    argc: *mut c_int,
    argv: *mut *const c_char,
    log_fn: Option<OLogFn>,
) -> c_int {
    ffi_guard(-1, || {
        if log_fn.is_some() {
            // SAFETY: a function pointer supplied by the program.
            unsafe { log::o_set_log(log_fn) };
        }
        log::bridge::install();
        // SAFETY: argc/argv as documented.
        let args = unsafe { read_argv(argc, argv) };
        // SAFETY: NUL-terminated or NULL.
        let app =
            match unsafe { opt_str(application) }.or_else(|| args.first().map(|a| a.1.clone())) {
                Some(a) => a,
                None => {
                    log::error("omlc_init: no application name");
                    return -1;
                }
            };
        let mut lib = state::lock();
        if matches!(lib.phase, Phase::Configured | Phase::Running) {
            log::error("omlc_init: the library is already initialised (call omlc_close first)");
            return -1;
        }
        let mut remaining: Vec<String> = args.iter().map(|a| a.1.clone()).collect();
        let (init, warnings) = match runtime::parse_options(&app, &mut remaining) {
            Ok(r) => r,
            Err(msg) => {
                log::error(&format!("omlc_init: {msg}"));
                return -1;
            }
        };
        // SAFETY: argv is writable for the original entries.
        unsafe { compact_argv(&args, &remaining, argc, argv) };
        for w in &warnings {
            log::warn(w);
        }
        let (spec, code) = match init {
            Init::Help(text) => exit_printing(&text),
            Init::ListFilters(text) => exit_printing(&text),
            Init::Noop(spec) => {
                log::info("OML measurement disabled by --oml-noop");
                (spec, 1)
            }
            Init::Run(spec) => {
                // Only what the options say: a program's own earlier
                // o_set_log_level / o_set_log_file calls otherwise stand
                // (level 0 is the options' default).
                if spec.log_level != log::O_LOG_INFO {
                    log::set_level(spec.log_level);
                }
                if let Some(path) = spec.log_file.as_deref() {
                    if let Err(e) = log::set_file(Some(path)) {
                        log::error(&format!("cannot open log file {}: {e}", path.display()));
                    }
                }
                (spec, 0)
            }
        };
        let app_name = spec.app.clone();
        let noop = spec.noop;
        match Runtime::new(spec) {
            Ok(rt) => {
                lib.runtime = Some(rt);
                lib.app = app_name;
                lib.noop = noop;
                lib.mps.clear();
                lib.phase = Phase::Configured;
                code
            }
            Err(msg) => {
                log::error(&format!("omlc_init: {msg}"));
                lib.phase = Phase::Uninit;
                -1
            }
        }
    })
}

/// Prints `text` to standard output and exits successfully.
fn exit_printing(text: &str) -> ! {
    let mut out = std::io::stdout();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    std::process::exit(0)
}

/// A C string as Rust text (lossy), or `None` for NULL.
///
/// # Safety
/// `s` is NULL or NUL-terminated.
pub(crate) unsafe fn opt_str(s: *const c_char) -> Option<String> {
    // SAFETY: caller contract.
    (!s.is_null()).then(|| unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
}

/// The program's arguments with their original pointers.
///
/// # Safety
/// As [`omlc_init`].
unsafe fn read_argv(argc: *mut c_int, argv: *mut *const c_char) -> Vec<(*const c_char, String)> {
    if argc.is_null() || argv.is_null() {
        return Vec::new();
    }
    // SAFETY: caller contract.
    let n = usize::try_from(unsafe { *argc }).unwrap_or(0);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: `argv` has `n` entries.
        let p = unsafe { *argv.add(i) };
        if p.is_null() {
            break;
        }
        // SAFETY: a C string.
        out.push((p, unsafe { opt_str(p) }.unwrap_or_default()));
    }
    out
}

/// Removes from `argv` the entries that option parsing took out, keeping
/// the order of the others, and NULL-terminates it.
///
/// `remaining` is a subsequence of the original arguments' text, so a
/// greedy match finds which entries stay (equal texts are interchangeable).
///
/// # Safety
/// As [`omlc_init`].
unsafe fn compact_argv(
    original: &[(*const c_char, String)],
    remaining: &[String],
    argc: *mut c_int,
    argv: *mut *const c_char,
) {
    if original.len() == remaining.len() || argc.is_null() || argv.is_null() {
        return;
    }
    let mut kept = Vec::with_capacity(remaining.len());
    let mut next = remaining.iter().peekable();
    for (p, text) in original {
        if next.peek().is_some_and(|r| *r == text) {
            kept.push(*p);
            next.next();
        }
    }
    // SAFETY: `kept.len() < original.len()`, so every store stays within
    // the entries the program gave us.
    unsafe {
        for (i, p) in kept.iter().enumerate() {
            *argv.add(i) = *p;
        }
        *argv.add(kept.len()) = ptr::null();
        *argc = kept.len() as c_int;
    }
}

/// `OmlMP *omlc_add_mp(const char *mp_name, OmlMPDef *mp_def)`.
///
/// The name and definitions are copied (liboml2 referenced them). Returns
/// NULL before `omlc_init`, after `omlc_close`, or for invalid, duplicate or
/// missing names, an empty definition or an unsupported field type.
///
/// # Safety
/// `mp_name` is NULL or a C string; `mp_def` is NULL or an array ending
/// with an entry whose name is NULL.
#[no_mangle]
pub unsafe extern "C" fn omlc_add_mp(mp_name: *const c_char, mp_def: *mut OmlMPDef) -> *mut OmlMP {
    ffi_guard(ptr::null_mut(), || {
        // SAFETY: caller contract.
        let Some(name) = (unsafe { opt_str(mp_name) }) else {
            log::error("omlc_add_mp: NULL measurement point name");
            return ptr::null_mut();
        };
        // SAFETY: caller contract.
        let fields = match unsafe { read_defs(&name, mp_def) } {
            Ok(f) => f,
            Err(msg) => {
                log::error(&format!("omlc_add_mp: {msg}"));
                return ptr::null_mut();
            }
        };
        let mut lib = state::lock();
        let Some(rt) = lib.configurable() else {
            log::error(&format!(
                "omlc_add_mp({name}): call omlc_init first (and not after omlc_close)"
            ));
            return ptr::null_mut();
        };
        let typed: Vec<(&str, omsp::OmlType)> = fields
            .iter()
            .filter_map(|(n, t)| oml_type(*t).map(|t| (n.as_str(), t)))
            .collect();
        let handle = match rt.add_mp(&name, &typed) {
            Ok(h) => h,
            Err(msg) => {
                log::error(&format!("omlc_add_mp: {msg}"));
                return ptr::null_mut();
            }
        };
        let window = rt.window();
        let new = mp::create(NewMp {
            table: format!("{}_{name}", lib.app),
            name: &name,
            fields,
            handle,
            window,
            active: lib.phase == Phase::Running,
        });
        if let Some(&prev) = lib.mps.last() {
            mp::link(prev, new);
        }
        lib.mps.push(new);
        new.0
    })
}

/// The fields of an `OmlMPDef` table, checked for supported types.
///
/// # Safety
/// As [`omlc_add_mp`].
unsafe fn read_defs(mp: &str, defs: *const OmlMPDef) -> Result<Vec<(String, c_int)>, String> {
    if defs.is_null() {
        return Err(format!("{mp}: NULL field definitions"));
    }
    let mut out = Vec::new();
    loop {
        if out.len() > MAX_FIELDS {
            return Err(format!(
                "{mp}: more than {MAX_FIELDS} fields (missing {{NULL, 0}} terminator?)"
            ));
        }
        // SAFETY: the array runs up to its terminator (caller contract).
        let d = unsafe { *defs.add(out.len()) };
        // SAFETY: a C string when not NULL.
        let Some(name) = (unsafe { opt_str(d.name) }) else {
            break;
        };
        if oml_type(d.param_types).is_none() {
            return Err(format!(
                "{mp}: field {name} has unsupported type {} ({})",
                d.param_types,
                type_name(d.param_types)
            ));
        }
        out.push((name, d.param_types));
    }
    Ok(out)
}

/// `int omlc_start(void)`: 0, or −1 (not initialised, already started,
/// configuration error) or −3 (a destination or thread cannot be created).
#[no_mangle]
pub extern "C" fn omlc_start() -> c_int {
    ffi_guard(-1, || {
        let mut lib = state::lock();
        match lib.phase {
            Phase::Configured => {}
            Phase::Running => {
                log::warn("omlc_start: already started");
                return -1;
            }
            Phase::Uninit | Phase::Closed => {
                log::error("omlc_start: call omlc_init first");
                return -1;
            }
        }
        let Some(rt) = lib.runtime.as_ref() else {
            return -1;
        };
        if let Err(e) = rt.start() {
            log::error(&format!("omlc_start: {}", e.message));
            return e.code;
        }
        if !lib.noop {
            log::info(&format!(
                "OML client (streamgauge) started: {}",
                rt.describe()
            ));
            crate::signals::install();
            register_atexit();
        }
        lib.phase = Phase::Running;
        lib.set_active(true);
        0
    })
}

/// `int omlc_close(void)`: flushes every stream and destination (waiting
/// for them, up to a few seconds for a destination that makes no
/// progress) and stops. Always 0; idempotent.
#[no_mangle]
pub extern "C" fn omlc_close() -> c_int {
    ffi_guard(0, || {
        close_now();
        0
    })
}

/// Closes at process exit what the program left open, so that returning
/// from `main` without `omlc_close` loses nothing (liboml2 lost the
/// buffered samples). Registered once, at the first successful start.
fn register_atexit() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    extern "C" fn at_exit() {
        ffi_guard((), || {
            // Never wait at exit: if another thread holds the state (it is
            // closing, or exit was called from inside the library), skip.
            if let Some(lib) = state::try_lock() {
                close_locked(lib);
            }
        })
    }
    ONCE.call_once(|| {
        // SAFETY: registering a plain extern "C" function.
        if unsafe { libc::atexit(at_exit) } != 0 {
            log::warn("cannot register the exit handler; call omlc_close before exiting");
        }
    });
}

/// Closes the library if it is open (also used by the signal handlers).
pub(crate) fn close_now() {
    close_locked(state::lock());
}

/// Closes the library if it is open, with the state already locked.
fn close_locked(mut lib: std::sync::MutexGuard<'static, state::Lib>) {
    if !matches!(lib.phase, Phase::Configured | Phase::Running) {
        return;
    }
    if let Some(rt) = lib.runtime.as_ref() {
        if let Some(loss) = rt.close() {
            log::warn(&format!("omlc_close: {loss}"));
        }
    }
    lib.set_active(false);
    lib.phase = Phase::Closed;
}
