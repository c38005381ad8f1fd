//! The durable queue: one SQLite database in the state directory.
//!
//! Two tables: `files` (one row per enqueued local file) and `jobs` (one row
//! per file and target, with its state). Every change is a committed
//! transaction with `synchronous=FULL`, so a SIGKILL or power loss loses no
//! acknowledged enqueue and no confirmed upload. "In flight" is deliberately
//! not persisted: after a restart an interrupted job is simply pending again,
//! and the worker first checks whether its remote copy is already complete.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{params, Connection, OptionalExtension};

/// Errors of the queue database.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// SQLite refused an operation (disk full, corrupt file, locked).
    #[error("archive queue database {path}: {source}")]
    Db {
        /// The database file.
        path: PathBuf,
        /// The SQLite error.
        source: rusqlite::Error,
    },
}

/// State of one (file, target) upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// Waiting for its first or next attempt.
    Pending,
    /// Remote copy confirmed (size and checksum).
    Done,
    /// Gave up after `max_attempts`; the local file is kept.
    Failed,
}

impl JobState {
    fn as_str(self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Done => "done",
            JobState::Failed => "failed",
        }
    }

    fn parse(s: &str) -> JobState {
        match s {
            "done" => JobState::Done,
            "failed" => JobState::Failed,
            _ => JobState::Pending,
        }
    }
}

/// A (file, target) upload to attempt.
#[derive(Debug, Clone)]
pub struct Job {
    /// Row id of the file.
    pub file_id: i64,
    /// Local file to upload.
    pub local_path: PathBuf,
    /// Name under the target's directory or prefix.
    pub remote_name: String,
    /// Target name from the configuration.
    pub target: String,
    /// Failed attempts so far.
    pub attempts: u32,
}

/// Per-target status of one file, for operators and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobStatus {
    /// Target name.
    pub target: String,
    /// Current state.
    pub state: JobState,
    /// Failed attempts so far.
    pub attempts: u32,
    /// Name on the target (relative to its directory or prefix); differs
    /// from the name asked for when that was taken (see `docs/archive.md`).
    pub remote_name: String,
    /// Reason of the last failure, if any.
    pub last_error: Option<String>,
}

/// Counts of jobs by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobCounts {
    /// Jobs waiting for an attempt (including those in flight).
    pub pending: u64,
    /// Jobs confirmed.
    pub done: u64,
    /// Jobs given up.
    pub failed: u64,
}

/// The SQLite-backed queue (cheap, short statements under a mutex).
pub struct Queue {
    /// Path of the database, for error messages.
    path: PathBuf,
    /// The single connection; statements are a few microseconds to
    /// milliseconds, so callers hold the lock only briefly.
    conn: Mutex<Connection>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    local_path TEXT NOT NULL UNIQUE,
    remote_name TEXT NOT NULL,
    local_deleted INTEGER NOT NULL DEFAULT 0,
    identity TEXT
);
CREATE TABLE IF NOT EXISTS jobs (
    file_id INTEGER NOT NULL REFERENCES files(id),
    target TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_ms INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    remote_name TEXT,
    PRIMARY KEY (file_id, target)
);
CREATE INDEX IF NOT EXISTS jobs_due ON jobs(state, next_attempt_ms);
CREATE TABLE IF NOT EXISTS names (remote_name TEXT PRIMARY KEY);
";

/// Adds the columns later versions introduced to a queue written by an
/// earlier one (`files.identity`, `jobs.remote_name`), then records its
/// names as taken.
fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    for (table, column) in [("files", "identity"), ("jobs", "remote_name")] {
        let has: bool = conn.query_row(
            &format!("SELECT COUNT(*) > 0 FROM pragma_table_info('{table}') WHERE name = ?1"),
            [column],
            |r| r.get(0),
        )?;
        if !has {
            conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} TEXT"))?;
        }
    }
    conn.execute_batch(crate::names::BACKFILL)
}

impl Queue {
    /// Opens (creating) `state_dir/queue.sqlite3`. Pending jobs become due
    /// at once: a restart is a good moment to retry.
    ///
    /// The database is held in SQLite's exclusive locking mode: a second
    /// process (or a second `Archiver`) on the same state directory waits up
    /// to `lock_wait` for the first to go away, then fails — two workers
    /// sharing one queue could upload the same file twice.
    pub fn open(state_dir: &Path, lock_wait: std::time::Duration) -> Result<Queue, QueueError> {
        let path = state_dir.join("queue.sqlite3");
        let err = |source| QueueError::Db {
            path: path.clone(),
            source,
        };
        let conn = Connection::open(&path).map_err(err)?;
        conn.busy_timeout(lock_wait).map_err(err)?;
        conn.pragma_update(None, "locking_mode", "EXCLUSIVE")
            .map_err(err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(err)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(err)?;
        // Take the exclusive lock now rather than at the first enqueue.
        conn.execute_batch("BEGIN IMMEDIATE; COMMIT;")
            .map_err(err)?;
        conn.execute_batch(SCHEMA).map_err(err)?;
        migrate(&conn).map_err(err)?;
        conn.execute(
            "UPDATE jobs SET next_attempt_ms = 0 WHERE state = 'pending'",
            [],
        )
        .map_err(err)?;
        Ok(Queue {
            path,
            conn: Mutex::new(conn),
        })
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, QueueError> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut conn).map_err(|source| QueueError::Db {
            path: self.path.clone(),
            source,
        })
    }

    /// Records a file for the given targets. Returns the file id and whether
    /// it was new; enqueueing the same local path again adds only missing
    /// targets (never a second upload of a confirmed one). A path that was
    /// archived and removed (or kept) before is the same file while its
    /// `identity` (size, mtime, inode) is unchanged — nothing to do — and
    /// otherwise a new file reusing the local name: it starts afresh.
    ///
    /// A new file gets `remote_name` only if no file of this queue ever had
    /// it, else its first free variant (see [`crate::names`]): an archived
    /// copy is never replaced by a later file of the same name.
    pub fn add(
        &self,
        local_path: &Path,
        remote_name: &str,
        identity: &str,
        targets: &[String],
    ) -> Result<(i64, bool), QueueError> {
        let local = local_path.to_string_lossy().into_owned();
        self.with(|c| {
            let tx = c.transaction()?;
            let existing: Option<(i64, bool, Option<String>)> = tx
                .query_row(
                    "SELECT id, local_deleted, identity FROM files WHERE local_path = ?1",
                    [&local],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()?;
            let (id, new) = match existing {
                // The same file (rows of old queues have no identity).
                Some((id, deleted, known))
                    if known.as_deref() == Some(identity) || (known.is_none() && !deleted) =>
                {
                    if deleted {
                        // Archived already (kept locally, or found again by
                        // crash recovery): nothing to do.
                        tx.commit()?;
                        return Ok((id, false));
                    }
                    (id, false)
                }
                // A new file reusing the local name: the earlier one was
                // archived and removed (perhaps by a process killed before
                // it could record that), so this one starts afresh.
                Some((id, _, _)) => {
                    let name = crate::names::claim(&tx, remote_name)?;
                    tx.execute(
                        "UPDATE files SET remote_name = ?2, local_deleted = 0, identity = ?3
                         WHERE id = ?1",
                        params![id, name, identity],
                    )?;
                    tx.execute("DELETE FROM jobs WHERE file_id = ?1", [id])?;
                    (id, true)
                }
                None => {
                    let name = crate::names::claim(&tx, remote_name)?;
                    tx.execute(
                        "INSERT INTO files (local_path, remote_name, identity) VALUES (?1, ?2, ?3)",
                        params![local, name, identity],
                    )?;
                    (tx.last_insert_rowid(), true)
                }
            };
            for t in targets {
                tx.execute(
                    "INSERT OR IGNORE INTO jobs (file_id, target, state) VALUES (?1, ?2, 'pending')",
                    params![id, t],
                )?;
            }
            tx.commit()?;
            Ok((id, new))
        })
    }

    /// Moves a job to a fresh remote name after its target found different
    /// content under the current one (see [`crate::names`]); due at once.
    /// Returns the new name.
    pub fn rename_job(
        &self,
        file_id: i64,
        target: &str,
        current: &str,
    ) -> Result<String, QueueError> {
        self.with(|c| {
            let tx = c.transaction()?;
            let name = crate::names::claim(&tx, &crate::names::original(current))?;
            tx.execute(
                "UPDATE jobs SET remote_name = ?3, next_attempt_ms = 0 WHERE file_id = ?1 AND target = ?2",
                params![file_id, target, name],
            )?;
            tx.commit()?;
            Ok(name)
        })
    }

    /// Up to `limit` pending jobs due at `now_ms` (of every target), oldest
    /// file first, skipping those for which `skip` returns true.
    #[cfg(test)]
    pub fn due(
        &self,
        now_ms: i64,
        limit: usize,
        skip: impl Fn(i64, &str) -> bool,
    ) -> Result<Vec<Job>, QueueError> {
        self.select_due(None, now_ms, limit, skip)
    }

    /// Up to `limit` pending jobs of `target` due at `now_ms`, oldest file
    /// first, skipping files for which `skip` returns true (in flight).
    pub fn due_for(
        &self,
        target: &str,
        now_ms: i64,
        limit: usize,
        skip: impl Fn(i64) -> bool,
    ) -> Result<Vec<Job>, QueueError> {
        self.select_due(Some(target), now_ms, limit, |f, _| skip(f))
    }

    fn select_due(
        &self,
        target: Option<&str>,
        now_ms: i64,
        limit: usize,
        skip: impl Fn(i64, &str) -> bool,
    ) -> Result<Vec<Job>, QueueError> {
        self.with(|c| {
            let mut st = c.prepare_cached(
                "SELECT j.file_id, f.local_path, COALESCE(j.remote_name, f.remote_name), j.target,
                        j.attempts
                 FROM jobs j JOIN files f ON f.id = j.file_id
                 WHERE j.state = 'pending' AND j.next_attempt_ms <= ?1
                   AND (?2 IS NULL OR j.target = ?2)
                 ORDER BY j.file_id, j.target",
            )?;
            let rows = st.query_map(params![now_ms, target], |r| {
                Ok(Job {
                    file_id: r.get(0)?,
                    local_path: PathBuf::from(r.get::<_, String>(1)?),
                    remote_name: r.get(2)?,
                    target: r.get(3)?,
                    attempts: r.get(4)?,
                })
            })?;
            let mut out = Vec::new();
            for job in rows {
                let job = job?;
                if !skip(job.file_id, &job.target) {
                    out.push(job);
                    if out.len() == limit {
                        break;
                    }
                }
            }
            Ok(out)
        })
    }

    /// Earliest `next_attempt_ms` among pending jobs of `target`.
    pub fn next_due_ms_for(&self, target: &str) -> Result<Option<i64>, QueueError> {
        self.with(|c| {
            c.query_row(
                "SELECT MIN(next_attempt_ms) FROM jobs WHERE state = 'pending' AND target = ?1",
                [target],
                |r| r.get(0),
            )
        })
    }

    /// Pushes a job's due time to `until_ms` while it is attempted, so the
    /// scheduler does not pick it again (reset to now by the next `open`).
    pub fn lease(&self, file_id: i64, target: &str, until_ms: i64) -> Result<(), QueueError> {
        self.with(|c| {
            c.execute(
                "UPDATE jobs SET next_attempt_ms = ?3 WHERE file_id = ?1 AND target = ?2",
                params![file_id, target, until_ms],
            )
            .map(drop)
        })
    }

    /// Marks a job confirmed.
    pub fn set_done(&self, file_id: i64, target: &str) -> Result<(), QueueError> {
        self.with(|c| {
            c.execute(
                "UPDATE jobs SET state = 'done', last_error = NULL WHERE file_id = ?1 AND target = ?2",
                params![file_id, target],
            )
            .map(drop)
        })
    }

    /// Records a failed attempt: pending again at `next_ms`, or failed for good.
    pub fn set_failed_attempt(
        &self,
        file_id: i64,
        target: &str,
        attempts: u32,
        next_ms: i64,
        give_up: bool,
        error: &str,
    ) -> Result<(), QueueError> {
        let state = if give_up {
            JobState::Failed
        } else {
            JobState::Pending
        };
        self.with(|c| {
            c.execute(
                "UPDATE jobs SET state = ?3, attempts = ?4, next_attempt_ms = ?5, last_error = ?6
                 WHERE file_id = ?1 AND target = ?2",
                params![file_id, target, state.as_str(), attempts, next_ms, error],
            )
            .map(drop)
        })
    }

    /// Files whose every job is done and whose local copy is still there.
    pub fn completed_undeleted(&self) -> Result<Vec<(i64, PathBuf)>, QueueError> {
        self.with(|c| {
            let mut st = c.prepare_cached(
                "SELECT f.id, f.local_path FROM files f WHERE f.local_deleted = 0
                 AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.file_id = f.id AND j.state != 'done')",
            )?;
            let rows = st.query_map([], |r| Ok((r.get(0)?, PathBuf::from(r.get::<_, String>(1)?))))?;
            rows.collect()
        })
    }

    /// Whether every job of the file is done.
    pub fn file_complete(&self, file_id: i64) -> Result<bool, QueueError> {
        self.with(|c| {
            c.query_row(
                "SELECT NOT EXISTS (SELECT 1 FROM jobs WHERE file_id = ?1 AND state != 'done')",
                [file_id],
                |r| r.get(0),
            )
        })
    }

    /// Records that the local copy was removed (or deliberately kept).
    pub fn set_local_deleted(&self, file_id: i64) -> Result<(), QueueError> {
        self.with(|c| {
            c.execute(
                "UPDATE files SET local_deleted = 1 WHERE id = ?1",
                [file_id],
            )
            .map(drop)
        })
    }

    /// Job counts by state.
    pub fn counts(&self) -> Result<JobCounts, QueueError> {
        self.with(|c| {
            let mut st = c.prepare_cached("SELECT state, COUNT(*) FROM jobs GROUP BY state")?;
            let mut out = JobCounts::default();
            let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, u64>(1)?)))?;
            for row in rows {
                let (state, n) = row?;
                match JobState::parse(&state) {
                    JobState::Pending => out.pending = n,
                    JobState::Done => out.done = n,
                    JobState::Failed => out.failed = n,
                }
            }
            Ok(out)
        })
    }

    /// Per-target status of the file enqueued from `local_path`.
    pub fn status(&self, local_path: &Path) -> Result<Vec<JobStatus>, QueueError> {
        let local = local_path.to_string_lossy().into_owned();
        self.with(|c| {
            let mut st = c.prepare_cached(
                "SELECT j.target, j.state, j.attempts, j.last_error,
                        COALESCE(j.remote_name, f.remote_name) FROM jobs j
                 JOIN files f ON f.id = j.file_id WHERE f.local_path = ?1 ORDER BY j.target",
            )?;
            let rows = st.query_map([local], |r| {
                Ok(JobStatus {
                    target: r.get(0)?,
                    state: JobState::parse(&r.get::<_, String>(1)?),
                    attempts: r.get(2)?,
                    last_error: r.get(3)?,
                    remote_name: r.get(4)?,
                })
            })?;
            rows.collect()
        })
    }

    /// Puts every failed job back in the queue (after fixing a target).
    pub fn retry_failed(&self) -> Result<u64, QueueError> {
        self.with(|c| {
            c.execute(
                "UPDATE jobs SET state = 'pending', attempts = 0, next_attempt_ms = 0
                 WHERE state = 'failed'",
                [],
            )
            .map(|n| n as u64)
        })
    }
}

#[cfg(test)]
#[path = "queue_tests.rs"]
mod tests;
