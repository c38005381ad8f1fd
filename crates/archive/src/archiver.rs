//! The public [`Archiver`]: durable queue + background worker.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::{broadcast, Notify};
use tokio::task::{JoinHandle, JoinSet};
use tracing::Instrument;

use crate::config::{ArchiverConfig, ConfigError, TargetConfig};
use crate::digest::digest_file;
use crate::events::{ArchiveEvent, ArchiveStats, Counters, InFlightGuard};
use crate::queue::{Job, JobStatus, Queue, QueueError};
use crate::s3::{S3Error, S3Target};
use crate::sftp::{SftpError, SftpTarget};
use crate::target::{AttemptError, Delivery, Target};

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

struct Inner {
    cfg: ArchiverConfig,
    queue: Queue,
    targets: BTreeMap<String, Target>,
    counters: Counters,
    events: broadcast::Sender<ArchiveEvent>,
    wake: Notify,
    in_flight: Mutex<HashSet<(i64, String)>>,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn valid_remote_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('/')
        && !name.chars().any(|c| c.is_control() || c == '\\')
        && name
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}

impl Archiver {
    /// Validates the configuration, loads keys and credentials, opens the
    /// queue and starts the worker (spawned on the current tokio runtime).
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
        let timeout = Duration::from_secs(cfg.attempt_timeout_secs);
        for (name, t) in &cfg.targets {
            let live = match t {
                TargetConfig::Sftp(c) => Target::Sftp(SftpTarget::new(c.clone()).map_err(
                    |source| OpenError::Sftp {
                        target: name.clone(),
                        source,
                    },
                )?),
                TargetConfig::S3(c) => {
                    Target::S3(S3Target::new(c, timeout).map_err(|source| OpenError::S3 {
                        target: name.clone(),
                        source,
                    })?)
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
            in_flight: Mutex::new(HashSet::new()),
        });
        let worker = tokio::spawn(run(inner.clone()));
        Ok(Archiver { inner, worker })
    }

    /// Queues `local_path` for upload as `remote_name` (relative, may contain
    /// `/`) to each named target. Durable when it returns. Enqueueing the same
    /// local path again only adds targets it did not have (a path whose file
    /// was already archived and deleted counts as a new file).
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
        match std::fs::metadata(local_path) {
            Ok(m) if m.is_file() => {}
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
        }
        let targets: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
        self.inner.queue.add(local_path, remote_name, &targets)?;
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

/// Scheduler: picks due jobs up to the concurrency limit and sleeps until
/// the next due time, an enqueue, or the end of an attempt.
async fn run(inner: Arc<Inner>) {
    sweep_completed(&inner);
    let mut tasks = JoinSet::new();
    loop {
        let max = inner.cfg.max_concurrent_uploads;
        let free = max.saturating_sub(tasks.len());
        if free > 0 {
            let due = {
                let in_flight = inner.in_flight.lock().unwrap_or_else(|p| p.into_inner());
                inner.queue.due(now_ms(), free, |f, t| {
                    in_flight.contains(&(f, t.to_string()))
                })
            };
            match due {
                Ok(jobs) => {
                    for job in jobs {
                        let lease =
                            now_ms() + inner.cfg.attempt_timeout_secs as i64 * 1000 + 60_000;
                        if let Err(e) = inner.queue.lease(job.file_id, &job.target, lease) {
                            tracing::error!(error = %e, "archive queue");
                        }
                        inner
                            .in_flight
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .insert((job.file_id, job.target.clone()));
                        let span = tracing::info_span!("archive_attempt",
                            file = %job.local_path.display(), target = %job.target);
                        tasks.spawn(attempt(inner.clone(), job).instrument(span));
                    }
                }
                Err(e) => tracing::error!(error = %e, "archive queue"),
            }
        }
        let wait = if tasks.len() < max {
            match inner.queue.next_due_ms() {
                Ok(Some(t)) => Duration::from_millis((t - now_ms()).clamp(0, 60_000) as u64),
                _ => Duration::from_secs(60),
            }
        } else {
            Duration::from_secs(3600)
        };
        tokio::select! {
            _ = inner.wake.notified() => {}
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// Deletes local copies of files every target confirmed (a crash may have
/// come between the last confirmation and the deletion).
fn sweep_completed(inner: &Inner) {
    match inner.queue.completed_undeleted() {
        Ok(files) => {
            for (id, path) in files {
                remove_local(inner, id, &path);
            }
        }
        Err(e) => tracing::error!(error = %e, "archive queue"),
    }
}

fn remove_local(inner: &Inner, file_id: i64, path: &Path) {
    if !inner.cfg.keep_local {
        match std::fs::remove_file(path) {
            Ok(()) => {
                Counters::add(&inner.counters.local_deleted, 1);
                let _ = inner.events.send(ArchiveEvent::LocalDeleted {
                    local_path: path.to_path_buf(),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "archive: cannot delete uploaded file");
                return;
            }
        }
    }
    if let Err(e) = inner.queue.set_local_deleted(file_id) {
        tracing::error!(error = %e, "archive queue");
    }
}

/// One attempt of one (file, target) job.
async fn attempt(inner: Arc<Inner>, job: Job) {
    let _guard = InFlightGuard::new(&inner.counters);
    let attempt_no = job.attempts + 1;
    let _ = inner.events.send(ArchiveEvent::Started {
        local_path: job.local_path.clone(),
        target: job.target.clone(),
        attempt: attempt_no,
    });
    let result = run_attempt(&inner, &job).await;
    inner
        .in_flight
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&(job.file_id, job.target.clone()));
    let q = &inner.queue;
    match result {
        Ok(delivery) => {
            // Counters first, so that a reader who sees the job done in the
            // queue also sees it counted.
            let event = match delivery {
                Delivery::Uploaded { bytes } => {
                    Counters::add(&inner.counters.uploaded_files, 1);
                    Counters::add(&inner.counters.uploaded_bytes, bytes);
                    tracing::info!(file = %job.local_path.display(), target = %job.target, bytes, "archived");
                    ArchiveEvent::Uploaded {
                        local_path: job.local_path.clone(),
                        target: job.target.clone(),
                        bytes,
                    }
                }
                Delivery::AlreadyPresent => {
                    Counters::add(&inner.counters.already_present, 1);
                    tracing::info!(file = %job.local_path.display(), target = %job.target, "already archived");
                    ArchiveEvent::AlreadyPresent {
                        local_path: job.local_path.clone(),
                        target: job.target.clone(),
                    }
                }
            };
            if let Err(e) = q.set_done(job.file_id, &job.target) {
                tracing::error!(error = %e, "archive queue");
                return;
            }
            let _ = inner.events.send(event);
            if q.file_complete(job.file_id).unwrap_or(false) {
                remove_local(&inner, job.file_id, &job.local_path);
            }
        }
        Err(e) => {
            Counters::add(&inner.counters.failed_attempts, 1);
            let give_up = inner.cfg.max_attempts.is_some_and(|m| attempt_no >= m);
            let delay = crate::backoff::delay(&inner.cfg.backoff, attempt_no);
            let error = e.to_string();
            tracing::warn!(file = %job.local_path.display(), target = %job.target,
                attempt = attempt_no, give_up, retry_in_ms = delay.as_millis() as u64, %error, "archive attempt failed");
            let next = now_ms() + delay.as_millis() as i64;
            if let Err(e) =
                q.set_failed_attempt(job.file_id, &job.target, attempt_no, next, give_up, &error)
            {
                tracing::error!(error = %e, "archive queue");
            }
            let _ = inner.events.send(ArchiveEvent::AttemptFailed {
                local_path: job.local_path.clone(),
                target: job.target.clone(),
                attempt: attempt_no,
                error,
                retry_in: (!give_up).then_some(delay),
            });
        }
    }
    inner.wake.notify_one();
}

async fn run_attempt(inner: &Inner, job: &Job) -> Result<Delivery, AttemptError> {
    let Some(target) = inner.targets.get(&job.target) else {
        return Err(AttemptError::Local {
            path: job.local_path.display().to_string(),
            source: std::io::Error::other(format!(
                "target `{}` is no longer configured",
                job.target
            )),
        });
    };
    let secs = inner.cfg.attempt_timeout_secs;
    let work = async {
        let path = job.local_path.clone();
        let part = target.part_size();
        let digest = tokio::task::spawn_blocking(move || digest_file(&path, part))
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))
            .and_then(|r| r)
            .map_err(|source| AttemptError::Local {
                path: job.local_path.display().to_string(),
                source,
            })?;
        target
            .deliver(&job.local_path, &job.remote_name, &digest)
            .await
    };
    tokio::time::timeout(Duration::from_secs(secs), work)
        .await
        .unwrap_or(Err(AttemptError::Timeout { secs }))
}

#[cfg(test)]
mod tests {
    use super::valid_remote_name;

    #[test]
    fn remote_names() {
        assert!(valid_remote_name("a.pcap"));
        assert!(valid_remote_name("session-1/2026/a.pcap"));
        for bad in ["", "/abs", "a/../b", "./a", "a//b", "a/", "a\nb", "a\\b"] {
            assert!(!valid_remote_name(bad), "{bad:?}");
        }
    }
}
