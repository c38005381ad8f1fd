//! The public [`Archiver`]: durable queue + background worker.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{broadcast, Notify};
use tokio::task::JoinHandle;

use crate::config::{ArchiverConfig, ConfigError, TargetConfig};
use crate::events::{ArchiveEvent, ArchiveStats, Counters};
use crate::queue::{JobStatus, Queue, QueueError};
use crate::s3::{S3Error, S3Target};
use crate::sftp::{SftpError, SftpTarget};
use crate::target::Target;
use crate::worker::{run, Inner};

/// Errors of [`Archiver::open`].
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The state directory could not be created.
    #[error("archive state directory {path}: {source}")]
    StateDir {
        /// The directory.
        path: PathBuf,
        /// I/O error.
        source: std::io::Error,
    },
    /// The queue database could not be opened.
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// An sftp target could not be set up (key file).
    #[error("archive target `{target}`: {source}")]
    Sftp {
        /// Target name.
        target: String,
        /// Cause.
        source: SftpError,
    },
    /// An S3 target could not be set up (credentials).
    #[error("archive target `{target}`: {source}")]
    S3 {
        /// Target name.
        target: String,
        /// Cause.
        source: S3Error,
    },
}

/// Errors of [`Archiver::enqueue`].
#[derive(Debug, thiserror::Error)]
pub enum EnqueueError {
    /// A target name is not in the configuration.
    #[error("unknown archive target `{0}`")]
    UnknownTarget(String),
    /// No target was given.
    #[error("no archive target given")]
    NoTarget,
    /// The remote name is empty, absolute or contains `.`/`..` components.
    #[error("invalid remote name `{0}`: use relative `a/b/c` names without `.` or `..`")]
    BadRemoteName(String),
    /// The local file does not exist or is not a regular file.
    #[error("local file {path}: {reason}")]
    LocalFile {
        /// The path given.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The queue database refused the write.
    #[error(transparent)]
    Queue(#[from] QueueError),
}

/// Uploads closed capture files to the configured targets in the background.
///
/// Dropping it stops the worker at once (in-flight attempts are abandoned
/// and retried — after a remote completeness check — by the next `Archiver`
/// opened on the same state directory).
pub struct Archiver {
    /// State shared with the worker.
    inner: Arc<Inner>,
    /// The scheduler task; aborted on drop, which aborts its attempts.
    worker: JoinHandle<()>,
}

fn valid_remote_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('/')
        && !name.chars().any(|c| c.is_control() || c == '\\')
        && name
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}

/// What tells a file apart from a later one at the same path: size,
/// modification time and inode. A closed capture file does not change, so
/// the same identity means the same file (found again by crash recovery);
/// a different one means a new file reusing the name.
fn file_identity(m: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    format!(
        "{}:{}.{}:{}:{}",
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.dev(),
        m.ino()
    )
}

impl Archiver {
    /// Validates the configuration, loads keys and credentials, checks that
    /// each S3 bucket exists (a missing one is an error naming it; a server
    /// that cannot be reached is only logged), opens the queue and starts
    /// the worker (spawned on the current tokio runtime).
    /// Fails if another `Archiver` keeps the same state directory for more
    /// than 5 s.
    pub async fn open(cfg: ArchiverConfig) -> Result<Archiver, OpenError> {
        cfg.validate()?;
        std::fs::create_dir_all(&cfg.state_dir).map_err(|source| OpenError::StateDir {
            path: cfg.state_dir.clone(),
            source,
        })?;
        let dir = cfg.state_dir.clone();
        // Blocking (SQLite, possibly waiting for a previous owner's lock):
        // off the async threads so the previous owner's tasks can finish.
        let queue = tokio::task::spawn_blocking(move || Queue::open(&dir, Duration::from_secs(5)))
            .await
            .map_err(|e| OpenError::StateDir {
                path: cfg.state_dir.clone(),
                source: std::io::Error::other(e.to_string()),
            })??;
        let mut targets = BTreeMap::new();
        for (name, t) in &cfg.targets {
            let timeout = Duration::from_secs(t.attempt_timeout_secs(cfg.attempt_timeout_secs));
            let live = match t {
                TargetConfig::Sftp(c) => Target::Sftp(SftpTarget::new(c.clone()).map_err(
                    |source| OpenError::Sftp {
                        target: name.clone(),
                        source,
                    },
                )?),
                TargetConfig::S3(c) => {
                    let err = |source| OpenError::S3 {
                        target: name.clone(),
                        source,
                    };
                    let t = S3Target::new(c, timeout).map_err(err)?;
                    t.check_bucket(name, timeout.min(Duration::from_secs(10)))
                        .await
                        .map_err(err)?;
                    Target::S3(t)
                }
            };
            targets.insert(name.clone(), live);
        }
        let inner = Arc::new(Inner {
            cfg,
            queue,
            targets,
            counters: Counters::default(),
            events: broadcast::channel(1024).0,
            wake: Notify::new(),
            outages: Default::default(),
            in_flight: Mutex::new(HashSet::new()),
        });
        let worker = tokio::spawn(run(inner.clone()));
        Ok(Archiver { inner, worker })
    }

    /// Queues `local_path` for upload as `remote_name` (relative, may contain
    /// `/`) to each named target. Durable when it returns. Enqueueing the same
    /// local path again only adds targets it did not have (a path whose file
    /// was already archived and then replaced counts as a new file).
    ///
    /// Remote names are never reused: if a file of this queue ever had
    /// `remote_name`, the new file gets `stem~N.rest` instead (see
    /// `docs/archive.md`; [`Archiver::status`] shows the name given).
    pub fn enqueue(
        &self,
        local_path: &Path,
        remote_name: &str,
        targets: &[&str],
    ) -> Result<(), EnqueueError> {
        if targets.is_empty() {
            return Err(EnqueueError::NoTarget);
        }
        if let Some(t) = targets
            .iter()
            .find(|t| !self.inner.targets.contains_key(**t))
        {
            return Err(EnqueueError::UnknownTarget(t.to_string()));
        }
        if !valid_remote_name(remote_name) {
            return Err(EnqueueError::BadRemoteName(remote_name.to_string()));
        }
        let identity = match std::fs::metadata(local_path) {
            Ok(m) if m.is_file() => file_identity(&m),
            Ok(_) => {
                return Err(EnqueueError::LocalFile {
                    path: local_path.to_path_buf(),
                    reason: "not a regular file".into(),
                })
            }
            Err(e) => {
                return Err(EnqueueError::LocalFile {
                    path: local_path.to_path_buf(),
                    reason: e.to_string(),
                })
            }
        };
        let targets: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
        self.inner
            .queue
            .add(local_path, remote_name, &identity, &targets)?;
        self.inner.wake.notify_one();
        Ok(())
    }

    /// Receives every event from now on (slow receivers lose the oldest).
    pub fn subscribe(&self) -> broadcast::Receiver<ArchiveEvent> {
        self.inner.events.subscribe()
    }

    /// Current counters.
    pub fn stats(&self) -> Result<ArchiveStats, QueueError> {
        let q = self.inner.queue.counts()?;
        let c = &self.inner.counters;
        Ok(ArchiveStats {
            queued: q.pending,
            in_flight: Counters::get(&c.in_flight),
            done: q.done,
            failed: q.failed,
            uploaded_files: Counters::get(&c.uploaded_files),
            uploaded_bytes: Counters::get(&c.uploaded_bytes),
            already_present: Counters::get(&c.already_present),
            failed_attempts: Counters::get(&c.failed_attempts),
            local_deleted: Counters::get(&c.local_deleted),
        })
    }

    /// Per-target status of one enqueued file (empty if unknown).
    pub fn status(&self, local_path: &Path) -> Result<Vec<JobStatus>, QueueError> {
        self.inner.queue.status(local_path)
    }

    /// Re-queues every job marked failed; returns how many.
    pub fn retry_failed(&self) -> Result<u64, QueueError> {
        let n = self.inner.queue.retry_failed()?;
        self.inner.wake.notify_one();
        Ok(n)
    }

    /// Stops the worker and waits until it is gone (in-flight attempts are
    /// abandoned, as on drop).
    pub async fn shutdown(self) {
        self.worker.abort();
        let _ = (&mut { self }.worker).await;
    }
}

impl Drop for Archiver {
    fn drop(&mut self) {
        self.worker.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::valid_remote_name;

    #[test]
    fn archiver_can_be_shared_across_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<super::Archiver>();
    }

    #[test]
    fn remote_names() {
        assert!(valid_remote_name("a.pcap"));
        assert!(valid_remote_name("session-1/2026/a.pcap"));
        for bad in ["", "/abs", "a/../b", "./a", "a//b", "a/", "a\nb", "a\\b"] {
            assert!(!valid_remote_name(bad), "{bad:?}");
        }
    }
}
