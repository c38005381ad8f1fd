//! The library's one global state: liboml2's API has no handle, so the
//! client and its measurement points live here between calls.
//!
//! `omlc_inject` does not take this lock: it reaches its MP's runtime handle
//! through the `OmlMP` pointer, and the runtime checks the lifecycle itself.

use std::sync::{Mutex, MutexGuard};

use crate::mp::MpPtr;
use crate::runtime::Runtime;

/// Where the library is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Before `omlc_init` (or after a failed one).
    Uninit,
    /// After `omlc_init`: MPs may be added.
    Configured,
    /// After `omlc_start`.
    Running,
    /// After `omlc_close`; `omlc_init` may start over.
    Closed,
}

/// Everything between calls.
pub(crate) struct Lib {
    /// Lifecycle.
    pub(crate) phase: Phase,
    /// The client, from `omlc_init` on.
    pub(crate) runtime: Option<Runtime>,
    /// The application name.
    pub(crate) app: String,
    /// `--oml-noop` was given.
    pub(crate) noop: bool,
    /// MPs of the current client, in registration order.
    pub(crate) mps: Vec<MpPtr>,
}

static LIB: Mutex<Lib> = Mutex::new(Lib {
    phase: Phase::Uninit,
    runtime: None,
    app: String::new(),
    noop: false,
    mps: Vec::new(),
});

/// Locks the state (a panic elsewhere does not make it unusable).
pub(crate) fn lock() -> MutexGuard<'static, Lib> {
    LIB.lock().unwrap_or_else(|e| e.into_inner())
}

/// Locks the state unless another thread holds it.
pub(crate) fn try_lock() -> Option<MutexGuard<'static, Lib>> {
    match LIB.try_lock() {
        Ok(g) => Some(g),
        Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

impl Lib {
    /// The runtime, if the phase allows configuration calls.
    pub(crate) fn configurable(&self) -> Option<&Runtime> {
        match self.phase {
            Phase::Configured | Phase::Running => self.runtime.as_ref(),
            Phase::Uninit | Phase::Closed => None,
        }
    }

    /// Marks every MP active or not.
    pub(crate) fn set_active(&self, active: bool) {
        for &mp in &self.mps {
            crate::mp::set_active(mp, active);
        }
    }
}
