//! What the archiver reports: events on a broadcast channel and counters for
//! the daemon's metrics.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// One thing that happened to a queued file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArchiveEvent {
    /// An attempt began.
    Started {
        /// Local file.
        local_path: PathBuf,
        /// Target name.
        target: String,
        /// 1 for the first attempt.
        attempt: u32,
    },
    /// The file was uploaded and verified on the target.
    Uploaded {
        /// Local file.
        local_path: PathBuf,
        /// Target name.
        target: String,
        /// Bytes sent.
        bytes: u64,
    },
    /// A verified copy was already on the target (resume); nothing was sent.
    AlreadyPresent {
        /// Local file.
        local_path: PathBuf,
        /// Target name.
        target: String,
    },
    /// Different content already held the remote name; nothing was replaced
    /// and the file will be uploaded as `new_name` instead.
    NameTaken {
        /// Local file.
        local_path: PathBuf,
        /// Target name.
        target: String,
        /// The name found taken.
        taken: String,
        /// The name used from now on.
        new_name: String,
    },
    /// An attempt failed.
    AttemptFailed {
        /// Local file.
        local_path: PathBuf,
        /// Target name.
        target: String,
        /// Number of this attempt.
        attempt: u32,
        /// The reason, as shown to operators.
        error: String,
        /// Delay before the next attempt; `None` means the job was marked
        /// failed (max attempts reached) and will not be retried.
        retry_in: Option<Duration>,
    },
    /// Every target confirmed the file and the local copy was deleted.
    LocalDeleted {
        /// Local file.
        local_path: PathBuf,
    },
}

/// Snapshot of the archiver's state, for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ArchiveStats {
    /// (file, target) jobs waiting, including those in flight (from the queue).
    pub queued: u64,
    /// Jobs being attempted right now.
    pub in_flight: u64,
    /// Jobs confirmed, over the queue's whole life (from the queue).
    pub done: u64,
    /// Jobs given up after `max_attempts` (from the queue).
    pub failed: u64,
    /// Uploads completed since this archiver was opened.
    pub uploaded_files: u64,
    /// Bytes of those uploads.
    pub uploaded_bytes: u64,
    /// Jobs found already complete remotely since open (not re-sent).
    pub already_present: u64,
    /// Failed attempts since open.
    pub failed_attempts: u64,
    /// Local files deleted after confirmation since open.
    pub local_deleted: u64,
}

/// Monotonic counters of this process (reset by a restart, like any metric).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub in_flight: AtomicU64,
    pub uploaded_files: AtomicU64,
    pub uploaded_bytes: AtomicU64,
    pub already_present: AtomicU64,
    pub failed_attempts: AtomicU64,
    pub local_deleted: AtomicU64,
}

impl Counters {
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }
}

/// Decrements `in_flight` when an attempt ends, however it ends (even when
/// the task is aborted by a shutdown).
pub(crate) struct InFlightGuard<'a>(pub &'a Counters);

impl<'a> InFlightGuard<'a> {
    pub(crate) fn new(c: &'a Counters) -> Self {
        c.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlightGuard(c)
    }
}

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}
