//! Termination signals, as liboml2 handles them (spec §8.1 `omlc_start`):
//! SIGINT, SIGTERM and SIGHUP close the library (flushing every stream)
//! before the process ends, and SIGPIPE is only logged.
//!
//! Safer than the reference: handlers are installed only for signals whose
//! disposition is still the default (an application's own handlers are
//! left alone); the handler itself only writes the signal number to a pipe
//! (async-signal-safe), and a watcher thread does the closing; after
//! closing, the default disposition is restored and the signal raised
//! again, so the parent sees the process die of that signal (liboml2 called
//! `exit(-signum)` from inside the handler).
#![allow(unsafe_code)]

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering::Relaxed};
use std::sync::Once;

use crate::log;

/// Write end of the signal pipe (−1 until installed).
static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);
static INSTALL: Once = Once::new();

/// The signals that close the library.
const CLOSING: [c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The handler: hands the signal number to the watcher thread.
extern "C" fn on_signal(sig: c_int) {
    let fd = PIPE_WRITE.load(Relaxed);
    if fd >= 0 {
        let b = sig as u8;
        // SAFETY: write(2) on a pipe is async-signal-safe; `b` outlives it.
        unsafe {
            libc::write(fd, std::ptr::addr_of!(b).cast(), 1);
        }
    }
}

/// Installs the handlers (once per process).
pub(crate) fn install() {
    INSTALL.call_once(|| {
        let mut fds = [0 as c_int; 2];
        // SAFETY: pipe2 with a valid two-element array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            log::warn("cannot create the signal pipe; SIGINT/SIGTERM will not flush OML streams");
            return;
        }
        let read_fd = fds[0];
        let spawned = std::thread::Builder::new()
            .name("oml-signals".into())
            .spawn(move || watch(read_fd));
        if spawned.is_err() {
            log::warn("cannot start the signal thread; SIGINT/SIGTERM will not flush OML streams");
            return;
        }
        PIPE_WRITE.store(fds[1], Relaxed);
        for sig in CLOSING.into_iter().chain([libc::SIGPIPE]) {
            install_if_default(sig);
        }
    });
}

/// Installs [`on_signal`] for `sig` if its disposition is the default.
fn install_if_default(sig: c_int) {
    // SAFETY: sigaction with valid pointers; a zeroed sigaction is a valid
    // starting point, and `on_signal` has the handler signature.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
            return;
        }
        if old.sa_sigaction != libc::SIG_DFL {
            return;
        }
        let mut new: libc::sigaction = std::mem::zeroed();
        new.sa_sigaction = on_signal as extern "C" fn(c_int) as libc::sighandler_t;
        new.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut new.sa_mask);
        libc::sigaction(sig, &new, std::ptr::null_mut());
    }
}

/// The watcher thread: closes the library on a closing signal, then lets
/// the signal take its default effect.
fn watch(fd: c_int) {
    loop {
        let mut b = 0u8;
        // SAFETY: read(2) into a one-byte buffer we own.
        let n = unsafe { libc::read(fd, std::ptr::addr_of_mut!(b).cast(), 1) };
        if n == 0 {
            return;
        }
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        let sig = c_int::from(b);
        if sig == libc::SIGPIPE {
            log::warn("received SIGPIPE (a destination closed its end); continuing");
            continue;
        }
        log::info(&format!("received signal {sig}; closing OML streams"));
        crate::api::close_now();
        // SAFETY: restoring the default disposition and re-raising the
        // signal for the whole process.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::kill(libc::getpid(), sig);
        }
    }
}
