//! The two system calls the source threads need beyond the ring itself:
//! entering a network namespace (for nodes whose tap interfaces live in
//! one) and asking whether an interface still exists there.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::os::fd::AsRawFd;

/// Moves the calling thread (only) into the network namespace `name`
/// (`/var/run/netns/<name>`, as created by `ip netns add`).
pub fn enter(name: &str) -> std::io::Result<()> {
    let f = std::fs::File::open(format!("/var/run/netns/{name}"))?;
    // SAFETY: setns on a valid descriptor; affects only this thread.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Whether `interface` exists in the calling thread's network namespace.
pub fn interface_exists(interface: &str) -> bool {
    let Ok(c) = CString::new(interface) else {
        return false;
    };
    // SAFETY: a valid NUL-terminated name.
    unsafe { libc::if_nametoindex(c.as_ptr()) != 0 }
}

/// CPU time (user + system) the calling thread has used, in seconds.
pub fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec for the kernel to fill.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}
