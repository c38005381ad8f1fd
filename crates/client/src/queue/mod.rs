//! The two queues a sample passes through.
//!
//! 1. [`ring`]: one single-producer/single-consumer byte ring per
//!    (application thread, client). `inject` copies the sample there and
//!    returns; the writer thread is the only consumer.
//! 2. [`dest`]: one bounded queue of encoded tuples per destination, between
//!    the writer thread (which runs filters and encodes) and the
//!    destination's sender thread (which does the I/O). Its byte budget and
//!    overload policy are the destination's.

mod chunk;
pub(crate) mod dest;
pub(crate) mod ring;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Bytes of queue memory (rings and destination buffers), reported in
/// `_client_instrumentation` as `bytes_allocated`, `bytes_freed`,
/// `bytes_in_use` and `bytes_max`.
#[derive(Debug, Default)]
pub(crate) struct Memory {
    /// Total ever allocated.
    allocated: AtomicU64,
    /// Total ever released.
    freed: AtomicU64,
    /// Highest `allocated − freed` seen.
    peak: AtomicU64,
}

/// Queue memory (per-thread rings and destination chunks), in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryStats {
    /// Bytes of queue memory allocated since start.
    pub allocated: u64,
    /// Bytes of queue memory released since start.
    pub freed: u64,
    /// Bytes of queue memory held now.
    pub in_use: u64,
    /// Most bytes of queue memory held at any time.
    pub max: u64,
}

impl Memory {
    /// Records an allocation of `n` bytes.
    pub(crate) fn alloc(&self, n: usize) {
        let n = n as u64;
        let allocated = self.allocated.fetch_add(n, Relaxed) + n;
        let in_use = allocated.saturating_sub(self.freed.load(Relaxed));
        self.peak.fetch_max(in_use, Relaxed);
    }

    /// Records that `n` bytes were released.
    pub(crate) fn free(&self, n: usize) {
        self.freed.fetch_add(n as u64, Relaxed);
    }

    /// Current figures.
    pub(crate) fn stats(&self) -> MemoryStats {
        let allocated = self.allocated.load(Relaxed);
        let freed = self.freed.load(Relaxed);
        MemoryStats {
            allocated,
            freed,
            in_use: allocated.saturating_sub(freed),
            max: self.peak.load(Relaxed),
        }
    }
}
