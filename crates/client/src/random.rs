//! The one source of randomness for identifiers a client makes (session
//! ids, the C API's GUIDs): the operating system's generator, through the
//! `getrandom` crate.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A random 64-bit value from the operating system's generator. Should it
/// fail (Linux: never after boot), the standard library's randomly keyed
/// hasher over the time, the process id and a counter stands in, with a
/// warning: an identifier must still be made, and two calls still differ.
pub fn u64() -> u64 {
    getrandom::u64().unwrap_or_else(|e| {
        tracing::warn!(error = %e, "no random value from the OS; using a hashed time");
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(COUNTER.fetch_add(1, Relaxed));
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        h.write_u32(std::process::id());
        h.finish()
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn values_differ() {
        let v: std::collections::HashSet<u64> = (0..64).map(|_| super::u64()).collect();
        assert_eq!(v.len(), 64);
    }
}
