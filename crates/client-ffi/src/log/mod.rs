//! libocomm's logging (spec §8.1, §8.8): levels, the output function
//! `o_log`, the log file, and the line format.
//!
//! - Standard error gets `LEVEL\tmessage`; a file gets
//!   `Mon DD HH:MM:SS LEVEL\tmessage` (`LEVEL\tmessage` after
//!   `o_set_simplified_logging`).
//! - The threshold filters before any output function is called, the
//!   application's own included.
//! - Messages from Rust (the client runtime's `tracing` events, see
//!   `bridge`) go through the same path, so an application's `o_log`
//!   sees them too.
#![allow(unsafe_code)]

pub(crate) mod bridge;
mod trampoline;

use std::ffi::{c_char, c_int, CStr, CString};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering::Relaxed};
use std::sync::Mutex;

use crate::guard::ffi_guard;

/// `O_LOG_ERROR`.
pub const O_LOG_ERROR: c_int = -2;
/// `O_LOG_WARN`.
pub const O_LOG_WARN: c_int = -1;
/// `O_LOG_INFO`.
pub const O_LOG_INFO: c_int = 0;
/// `O_LOG_DEBUG`.
pub const O_LOG_DEBUG: c_int = 1;

/// `o_log_fn`: `void (*)(int level, const char *fmt, ...)`.
pub type OLogFn = unsafe extern "C" fn(c_int, *const c_char, ...);

extern "C" {
    /// The library's own output function (csrc/log.c).
    fn sg_ffi_default_log(level: c_int, fmt: *const c_char, ...);
    /// Delivers a formatted message to the current `o_log` (csrc/log.c).
    fn sg_ffi_emit(level: c_int, msg: *const c_char);
}

/// `o_log_fn o_log`: the current output function, a C global that
/// programs may call or assign directly.
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static mut o_log: Option<OLogFn> = Some(sg_ffi_default_log);

/// Messages above this level are discarded.
static THRESHOLD: AtomicI32 = AtomicI32::new(O_LOG_INFO);
/// Drop the date from file lines.
static SIMPLE: AtomicBool = AtomicBool::new(false);
/// The log file; `None` = standard error.
static FILE: Mutex<Option<File>> = Mutex::new(None);

/// Logs `msg` at `level` through the current output function.
pub(crate) fn emit(level: c_int, msg: &str) {
    if level > THRESHOLD.load(Relaxed) {
        return;
    }
    let mut line = msg.replace('\0', "\\0");
    if !line.ends_with('\n') {
        line.push('\n');
    }
    if let Ok(c) = CString::new(line) {
        // SAFETY: `c` is a valid NUL-terminated string for the call.
        unsafe { sg_ffi_emit(level, c.as_ptr()) }
    }
}

/// Logs an error.
pub(crate) fn error(msg: &str) {
    emit(O_LOG_ERROR, msg);
}

/// Logs a warning.
pub(crate) fn warn(msg: &str) {
    emit(O_LOG_WARN, msg);
}

/// Logs an informational message.
pub(crate) fn info(msg: &str) {
    emit(O_LOG_INFO, msg);
}

/// Sets the threshold (used by `omlc_init` for `--oml-log-level`).
pub(crate) fn set_level(level: c_int) {
    THRESHOLD.store(level, Relaxed);
}

/// Opens `path` for appending as the log file (`None` = standard error).
pub(crate) fn set_file(path: Option<&std::path::Path>) -> std::io::Result<()> {
    let file = match path {
        Some(p) if p.as_os_str() != "-" => {
            Some(OpenOptions::new().create(true).append(true).open(p)?)
        }
        _ => None,
    };
    *FILE.lock().unwrap_or_else(|e| e.into_inner()) = file;
    Ok(())
}

/// `LEVEL` as printed in log lines.
fn level_name(level: c_int) -> String {
    match level {
        i32::MIN..=O_LOG_ERROR => "ERROR".to_owned(),
        O_LOG_WARN => "WARN".to_owned(),
        O_LOG_INFO => "INFO".to_owned(),
        O_LOG_DEBUG => "DEBUG".to_owned(),
        n => format!("DEBUG{n}"),
    }
}

/// `Mon DD HH:MM:SS` in local time.
fn date() -> String {
    let mut buf = [0u8; 32];
    // SAFETY: time/localtime_r/strftime with valid pointers and a buffer
    // length that strftime respects.
    let n = unsafe {
        let t = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return String::new();
        }
        libc::strftime(
            buf.as_mut_ptr().cast(),
            buf.len(),
            c"%b %d %H:%M:%S".as_ptr(),
            &tm,
        )
    };
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// Writes one line to the log file or standard error (called by C with
/// messages that passed the threshold).
///
/// # Safety
/// `msg` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn sg_ffi_log_write(level: c_int, msg: *const c_char) {
    ffi_guard((), || {
        if msg.is_null() {
            return;
        }
        // SAFETY: NUL-terminated (caller contract).
        let text = unsafe { CStr::from_ptr(msg) }.to_string_lossy();
        let nl = if text.ends_with('\n') { "" } else { "\n" };
        let mut file = FILE.lock().unwrap_or_else(|e| e.into_inner());
        match file.as_mut() {
            Some(f) => {
                let line = if SIMPLE.load(Relaxed) {
                    format!("{}\t{text}{nl}", level_name(level))
                } else {
                    format!("{} {}\t{text}{nl}", date(), level_name(level))
                };
                let _ = f.write_all(line.as_bytes());
            }
            None => {
                let line = format!("{}\t{text}{nl}", level_name(level));
                let _ = std::io::stderr().write_all(line.as_bytes());
            }
        }
    })
}

/// The current threshold (for csrc/log.c).
#[no_mangle]
pub extern "C" fn sg_ffi_log_threshold() -> c_int {
    THRESHOLD.load(Relaxed)
}

/// `void o_set_log_level(int level)`.
#[no_mangle]
pub extern "C" fn o_set_log_level(level: c_int) {
    set_level(level);
}

/// `int o_log_level_active(int level)`: 1 if messages at `level` are
/// written.
#[no_mangle]
pub extern "C" fn o_log_level_active(level: c_int) -> c_int {
    c_int::from(level <= THRESHOLD.load(Relaxed))
}

/// `void o_set_simplified_logging(void)`.
#[no_mangle]
pub extern "C" fn o_set_simplified_logging() {
    SIMPLE.store(true, Relaxed);
}

/// `void o_set_log_file(char *name)`: append to `name`; NULL or `-` means
/// standard error. If the file cannot be opened, logging stays on
/// standard error and an error is logged.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn o_set_log_file(name: *mut c_char) {
    ffi_guard((), || {
        let path = if name.is_null() {
            None
        } else {
            // SAFETY: NUL-terminated (caller contract).
            let s = unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned();
            Some(std::path::PathBuf::from(s))
        };
        if let Err(e) = set_file(path.as_deref()) {
            let _ = set_file(None);
            let p = path.map(|p| p.display().to_string()).unwrap_or_default();
            error(&format!(
                "cannot open log file {p}: {e}; logging to standard error"
            ));
        }
    })
}

/// `void o_set_log(o_log_fn fn)`: NULL restores the library's function.
///
/// # Safety
/// `f` is NULL or a valid `o_log_fn`.
#[no_mangle]
pub unsafe extern "C" fn o_set_log(f: Option<OLogFn>) {
    let f = f.or(Some(sg_ffi_default_log as OLogFn));
    // SAFETY: a pointer-sized store to the C global; C reads it without
    // synchronisation, as with liboml2.
    unsafe { std::ptr::addr_of_mut!(o_log).write_volatile(f) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_names() {
        assert_eq!(level_name(-2), "ERROR");
        assert_eq!(level_name(-1), "WARN");
        assert_eq!(level_name(0), "INFO");
        assert_eq!(level_name(1), "DEBUG");
        assert_eq!(level_name(3), "DEBUG3");
    }

    #[test]
    fn date_looks_like_syslog() {
        let d = date();
        assert_eq!(d.len(), 15, "{d}");
        assert_eq!(&d[9..10], ":");
    }
}
