//! No panic may unwind into C: every exported function runs its body
//! through [`ffi_guard`].

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `f`; if it panics, logs the panic and returns `fallback` instead.
pub(crate) fn ffi_guard<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            // Logging must not panic again across the boundary.
            let _ = catch_unwind(|| {
                crate::log::emit(
                    crate::log::O_LOG_ERROR,
                    &format!("internal error in liboml2 (streamgauge): {what}"),
                )
            });
            fallback
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_become_the_fallback() {
        assert_eq!(ffi_guard(-1, || panic!("boom")), -1);
        assert_eq!(ffi_guard(-1, || 3), 3);
    }
}
