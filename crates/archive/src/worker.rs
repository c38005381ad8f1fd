//! The background worker: scheduler loop and one attempt of one job.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::{broadcast, Notify};
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::config::ArchiverConfig;
use crate::digest::digest_file;
use crate::events::{ArchiveEvent, Counters, InFlightGuard};
use crate::queue::{Job, Queue};
use crate::target::{AttemptError, Delivery, Target};

/// State shared by the [`crate::Archiver`] handle, the scheduler and the
/// attempts.
pub(crate) struct Inner {
    /// Validated configuration.
    pub(crate) cfg: ArchiverConfig,
    /// The durable queue.
    pub(crate) queue: Queue,
    /// Live targets by name.
    pub(crate) targets: BTreeMap<String, Target>,
    /// Counters of this process for `stats()`.
    pub(crate) counters: Counters,
    /// Event fan-out for `subscribe()`.
    pub(crate) events: broadcast::Sender<ArchiveEvent>,
    /// Wakes the scheduler (enqueue, end of an attempt, retry_failed).
    pub(crate) wake: Notify,
    /// Outage in progress per target, for one log line at its start and end.
    pub(crate) outages: crate::outage::Outages,
    /// Jobs being attempted now, so the scheduler never starts one twice.
    pub(crate) in_flight: Mutex<HashSet<(i64, String)>>,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Scheduler: picks due jobs, at most `max_concurrent_uploads` per target,
/// and sleeps until the next due time, an enqueue, or the end of an attempt.
///
/// Slots are per target so that a target that hangs (every attempt running
/// into `attempt_timeout_secs`) or is down never delays the others.
pub(crate) async fn run(inner: Arc<Inner>) {
    sweep_completed(&inner);
    let mut tasks = JoinSet::new();
    let max = inner.cfg.max_concurrent_uploads;
    loop {
        let mut waits = Vec::new();
        for target in inner.targets.keys() {
            let free = max.saturating_sub(running(&inner, target));
            if free == 0 {
                continue;
            }
            let due = {
                let in_flight = inner.in_flight.lock().unwrap_or_else(|p| p.into_inner());
                inner.queue.due_for(target, now_ms(), free, |f| {
                    in_flight.contains(&(f, target.clone()))
                })
            };
            let jobs = match due {
                Ok(jobs) => jobs,
                Err(e) => {
                    tracing::error!(error = %e, "archive queue");
                    continue;
                }
            };
            let started = jobs.len();
            for job in jobs {
                start(&inner, &mut tasks, job);
            }
            if started < free {
                match inner.queue.next_due_ms_for(target) {
                    Ok(Some(t)) => waits.push(t),
                    Ok(None) => {}
                    Err(e) => tracing::error!(error = %e, "archive queue"),
                }
            }
        }
        let wait = waits
            .into_iter()
            .min()
            .map_or(Duration::from_secs(60), |t| {
                Duration::from_millis((t - now_ms()).clamp(0, 60_000) as u64)
            });
        tokio::select! {
            _ = inner.wake.notified() => {}
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// Attempts running now for `target`.
fn running(inner: &Inner, target: &str) -> usize {
    inner
        .in_flight
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter(|(_, t)| t == target)
        .count()
}

/// Bound of one attempt on `target`: its own setting or the archiver's.
fn attempt_timeout_secs(inner: &Inner, target: &str) -> u64 {
    let default = inner.cfg.attempt_timeout_secs;
    inner
        .cfg
        .targets
        .get(target)
        .map_or(default, |t| t.attempt_timeout_secs(default))
}

/// Leases `job` and spawns its attempt.
fn start(inner: &Arc<Inner>, tasks: &mut JoinSet<()>, job: Job) {
    let secs = attempt_timeout_secs(inner, &job.target);
    let lease = now_ms() + secs as i64 * 1000 + 60_000;
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
    if result.is_ok() {
        inner.outages.succeeded(&job.target);
    }
    match result {
        Ok(Delivery::NameTaken) => match q.rename_job(job.file_id, &job.target, &job.remote_name) {
            Ok(new_name) => {
                tracing::warn!(file = %job.local_path.display(), target = %job.target,
                    taken = %job.remote_name, %new_name,
                    "archive: different content already under this name; left alone, uploading under a new name");
                let _ = inner.events.send(ArchiveEvent::NameTaken {
                    local_path: job.local_path.clone(),
                    target: job.target.clone(),
                    taken: job.remote_name.clone(),
                    new_name,
                });
            }
            Err(e) => tracing::error!(error = %e, "archive queue"),
        },
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
                Delivery::AlreadyPresent | Delivery::NameTaken => {
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
            if give_up {
                tracing::warn!(file = %job.local_path.display(), target = %job.target,
                    attempt = attempt_no, %error, "archive: giving up on this file after max_attempts; the local file is kept (retry_failed() after fixing the target)");
            }
            inner.outages.failed(&job.target, &error, delay);
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
    let secs = attempt_timeout_secs(inner, &job.target);
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
