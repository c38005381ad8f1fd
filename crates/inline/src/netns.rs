//! Network namespaces: run code inside a named namespace (`ip netns add`).
//!
//! Namespace membership is per thread, so [`run_in`] uses a short-lived
//! thread and leaves the caller's namespace alone; [`enter`] moves the
//! calling thread (the CLI's `--netns`, before it starts other threads).

use std::fs::File;
use std::path::PathBuf;

use nix::sched::{setns, CloneFlags};

use crate::error::ProgramError;

fn path_of(name: &str) -> PathBuf {
    if name.contains('/') {
        PathBuf::from(name)
    } else {
        PathBuf::from("/run/netns").join(name)
    }
}

/// Open a namespace by name (`/run/netns/NAME`) or path.
pub fn open(name: &str) -> Result<File, ProgramError> {
    File::open(path_of(name)).map_err(|source| ProgramError::Netns {
        name: name.to_owned(),
        source,
    })
}

/// The calling thread's current network namespace.
pub fn current() -> Result<File, ProgramError> {
    open("/proc/thread-self/ns/net")
}

/// Move the calling thread into the namespace held by `ns`.
pub fn enter_file(ns: &File, name: &str) -> Result<(), ProgramError> {
    setns(ns, CloneFlags::CLONE_NEWNET).map_err(|e| ProgramError::Netns {
        name: name.to_owned(),
        source: std::io::Error::from(e),
    })
}

/// Move the calling thread into namespace `name`.
pub fn enter(name: &str) -> Result<(), ProgramError> {
    enter_file(&open(name)?, name)
}

/// Run `f` on a new thread inside namespace `ns` and return its result.
pub fn run_in_file<T: Send>(ns: &File, f: impl FnOnce() -> T + Send) -> Result<T, ProgramError> {
    std::thread::scope(|s| {
        s.spawn(|| {
            enter_file(ns, "(saved namespace)")?;
            Ok(f())
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// Run `f` on a new thread inside namespace `name` and return its result.
pub fn run_in<T: Send>(name: &str, f: impl FnOnce() -> T + Send) -> Result<T, ProgramError> {
    run_in_file(&open(name)?, f)
}
