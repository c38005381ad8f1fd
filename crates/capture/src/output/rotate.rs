//! Rolling packet files: rollover by time and size, a byte quota, owner-only
//! permissions, and a hand-off of every closed file.
//!
//! Files are named `{session}_{seq:06}_{YYYYmmddTHHMMSSZ}.{pcap|pcapng}`
//! (UTC time of the first packet). The sequence starts after the highest
//! one already in the directory (0 in an empty one), and files already
//! there count towards the quota, so a session restarted after a daemon
//! restart goes on where it was. Directories are created
//! with mode 0700 and files with mode 0600. A file is complete and valid
//! when it is closed; while open, it only grows by whole records once
//! flushed, so a crash leaves a readable prefix that
//! [`repair`](super::format::repair) trims to the last complete record.

use super::format::FileFormat;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// When to start a new file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rollover {
    /// Start a new file when the current one spans this many seconds.
    #[serde(default)]
    pub seconds: Option<u64>,
    /// Start a new file before it would exceed this many bytes.
    #[serde(default)]
    pub bytes: Option<u64>,
}

/// What to do when the session's files would exceed the quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuotaPolicy {
    /// Stop writing (later packets are counted as dropped by us).
    Stop,
    /// Delete the oldest closed files of this session until the data fits.
    DeleteOldest,
}

/// A byte quota over all files of one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quota {
    /// Maximum bytes of all files of the session on disk.
    pub bytes: u64,
    /// What happens at the quota.
    pub policy: QuotaPolicy,
}

/// A file that was closed and is complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosedFile {
    /// Where it is.
    pub path: PathBuf,
    /// Sequence number in the session.
    pub seq: u64,
    /// Size in bytes.
    pub bytes: u64,
    /// Packet records in the file.
    pub packets: u64,
    /// Timestamp of the first packet (ns since the epoch), 0 if empty.
    pub first_ns: u64,
    /// Timestamp of the last packet.
    pub last_ns: u64,
}

/// Why writing failed.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// Creating, writing or closing a file failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file or directory.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Result of [`RotatingWriter::write`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// The record was written.
    Stored,
    /// The quota (policy `stop`) refused the record.
    QuotaFull,
}

/// Settings of a [`RotatingWriter`].
#[derive(Debug, Clone)]
pub struct WriterConfig {
    /// Directory for the session's files (created 0700).
    pub dir: PathBuf,
    /// Session name, the file name prefix.
    pub session: String,
    /// pcap or pcapng.
    pub format: FileFormat,
    /// Snap length written into the file header.
    pub snaplen: u32,
    /// Link type number (LINKTYPE_*) written into the file header: the
    /// source's, so readers decode the frames as they were captured.
    pub linktype: u32,
    /// Interface name recorded in pcapng.
    pub interface: String,
    /// Rollover conditions.
    pub rollover: Rollover,
    /// Byte quota.
    pub quota: Option<Quota>,
}

/// The file being written.
struct Current {
    file: File,
    path: PathBuf,
    seq: u64,
    bytes: u64,
    packets: u64,
    first_ns: u64,
    last_ns: u64,
}

/// Writes packet records into rolling files.
pub struct RotatingWriter {
    /// Settings.
    cfg: WriterConfig,
    /// The open file, if any (opened on the first record).
    current: Option<Current>,
    /// Next sequence number.
    next_seq: u64,
    /// Closed files still on disk, oldest first (for delete-oldest).
    kept: VecDeque<(PathBuf, u64)>,
    /// Bytes of all files of this session on disk.
    on_disk: u64,
    /// Records encoded but not yet written (one `write` syscall per flush).
    buf: Vec<u8>,
    /// Closed files not yet taken by [`RotatingWriter::take_closed`].
    closed: Vec<ClosedFile>,
    /// The quota stopped writing (logged once).
    stopped: bool,
    /// Bytes written into files since start (headers and records).
    written: u64,
}

fn io<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> WriteError + 'a {
    move |source| WriteError::Io {
        op,
        path: path.display().to_string(),
        source,
    }
}

/// Buffered bytes above which records are written out.
const FLUSH_AT: usize = 64 * 1024;

impl RotatingWriter {
    /// Creates the directory (0700); no file is opened before the first
    /// record. Files of this session already in the directory are kept
    /// (counted in the quota, oldest deleted first) and numbering goes on
    /// after them.
    pub fn new(cfg: WriterConfig) -> Result<RotatingWriter, WriteError> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&cfg.dir)
            .map_err(io("create directory", &cfg.dir))?;
        std::fs::set_permissions(&cfg.dir, std::fs::Permissions::from_mode(0o700))
            .map_err(io("chmod", &cfg.dir))?;
        let existing = existing_files(&cfg);
        // Metadata left by a file already archived and deleted counts too:
        // reusing its sequence would truncate that metadata before upload.
        let next_seq = existing
            .last()
            .map(|(seq, _, _)| *seq)
            .max(highest_metadata_seq(&cfg))
            .map_or(0, |seq| seq + 1);
        let on_disk = existing.iter().map(|(_, _, len)| len).sum();
        let kept = existing.into_iter().map(|(_, p, len)| (p, len)).collect();
        Ok(RotatingWriter {
            cfg,
            current: None,
            next_seq,
            kept,
            on_disk,
            buf: Vec::with_capacity(FLUSH_AT * 2),
            closed: Vec::new(),
            stopped: false,
            written: 0,
        })
    }

    /// Bytes written into files since start (headers and records).
    pub fn bytes_written(&self) -> u64 {
        self.written
    }

    /// The settings.
    pub fn config(&self) -> &WriterConfig {
        &self.cfg
    }

    fn open(&mut self, ts_ns: u64) -> Result<(), WriteError> {
        let seq = self.next_seq;
        self.next_seq += 1;
        let name = format!(
            "{}_{seq:06}_{}.{}",
            self.cfg.session,
            crate::timefmt::compact(ts_ns),
            self.cfg.format.extension()
        );
        let path = self.cfg.dir.join(name);
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(io("create", &path))?;
        let header =
            self.cfg
                .format
                .header(self.cfg.snaplen, &self.cfg.interface, self.cfg.linktype);
        file.write_all(&header).map_err(io("write", &path))?;
        self.on_disk += header.len() as u64;
        self.written += header.len() as u64;
        self.current = Some(Current {
            file,
            path,
            seq,
            bytes: header.len() as u64,
            packets: 0,
            first_ns: ts_ns,
            last_ns: ts_ns,
        });
        Ok(())
    }

    /// Writes buffered records to the open file.
    pub fn flush(&mut self) -> Result<(), WriteError> {
        if let Some(c) = &mut self.current {
            if !self.buf.is_empty() {
                c.file.write_all(&self.buf).map_err(io("write", &c.path))?;
                self.buf.clear();
            }
        }
        Ok(())
    }

    /// Closes the open file (if any); it becomes available from `take_closed`.
    pub fn close(&mut self) -> Result<(), WriteError> {
        self.flush()?;
        if let Some(c) = self.current.take() {
            c.file.sync_all().map_err(io("sync", &c.path))?;
            self.kept.push_back((c.path.clone(), c.bytes));
            self.closed.push(ClosedFile {
                path: c.path,
                seq: c.seq,
                bytes: c.bytes,
                packets: c.packets,
                first_ns: if c.packets > 0 { c.first_ns } else { 0 },
                last_ns: c.last_ns,
            });
        }
        Ok(())
    }

    /// Files closed since the last call, oldest first.
    pub fn take_closed(&mut self) -> Vec<ClosedFile> {
        std::mem::take(&mut self.closed)
    }

    /// Path of the open file.
    pub fn current_path(&self) -> Option<&Path> {
        self.current.as_ref().map(|c| c.path.as_path())
    }

    fn make_room(&mut self, need: u64) -> Result<bool, WriteError> {
        let Some(q) = self.cfg.quota else {
            return Ok(true);
        };
        if self.on_disk + need <= q.bytes {
            return Ok(true);
        }
        match q.policy {
            QuotaPolicy::Stop => {
                if !self.stopped {
                    self.stopped = true;
                    tracing::warn!(session = %self.cfg.session, quota = q.bytes, "quota reached, policy stop: no more packets are written");
                }
                Ok(false)
            }
            QuotaPolicy::DeleteOldest => {
                while self.on_disk + need > q.bytes {
                    if let Some((path, bytes)) = self.kept.pop_front() {
                        tracing::warn!(session = %self.cfg.session, file = %path.display(), "quota reached, policy delete_oldest: deleting file");
                        std::fs::remove_file(&path).map_err(io("delete", &path))?;
                        // The metadata documents written beside it go too.
                        for ext in ["json", "xml"] {
                            let mut m = path.as_os_str().to_owned();
                            m.push(".");
                            m.push(ext);
                            let _ = std::fs::remove_file(m);
                        }
                        self.on_disk -= bytes;
                    } else if self.current.as_ref().is_some_and(|c| c.packets > 0) {
                        // Only the open file is left: close it so it can go.
                        self.close()?;
                    } else {
                        // A single record larger than the quota.
                        return Ok(false);
                    }
                }
                Ok(true)
            }
        }
    }

    /// Closes the open file when its time span is over even without traffic.
    pub fn tick(&mut self, now_ns: u64) -> Result<(), WriteError> {
        let over = match (&self.current, self.cfg.rollover.seconds) {
            (Some(c), Some(s)) => now_ns.saturating_sub(c.first_ns) >= s * 1_000_000_000,
            _ => false,
        };
        if over {
            self.close()?;
        }
        Ok(())
    }

    /// Writes one record (frame already cut), rolling over and applying the quota.
    pub fn write(&mut self, ts_ns: u64, data: &[u8], orig_len: u32) -> Result<Written, WriteError> {
        let rec = self.cfg.format.record_len(data.len()) as u64;
        if let Some(c) = &self.current {
            let r = self.cfg.rollover;
            let by_time = r
                .seconds
                .is_some_and(|s| ts_ns.saturating_sub(c.first_ns) >= s * 1_000_000_000);
            let by_size = r.bytes.is_some_and(|b| c.packets > 0 && c.bytes + rec > b);
            if by_time || by_size {
                self.close()?;
            }
        }
        let header = if self.current.is_none() {
            self.cfg
                .format
                .header(self.cfg.snaplen, &self.cfg.interface, self.cfg.linktype)
                .len() as u64
        } else {
            0
        };
        if !self.make_room(rec + header)? {
            return Ok(Written::QuotaFull);
        }
        if self.current.is_none() {
            self.open(ts_ns)?;
        }
        self.cfg.format.record(ts_ns, data, orig_len, &mut self.buf);
        if let Some(c) = &mut self.current {
            c.bytes += rec;
            c.packets += 1;
            c.last_ns = ts_ns;
        }
        self.on_disk += rec;
        self.written += rec;
        if self.buf.len() >= FLUSH_AT {
            self.flush()?;
        }
        Ok(Written::Stored)
    }
}

/// The session's packet files in its directory as (sequence, path, size),
/// by sequence.
fn existing_files(cfg: &WriterConfig) -> Vec<(u64, PathBuf, u64)> {
    let mut v = Vec::new();
    let Ok(rd) = std::fs::read_dir(&cfg.dir) else {
        return v;
    };
    let prefix = format!("{}_", cfg.session);
    let ext = format!(".{}", cfg.format.extension());
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(&prefix) else {
            continue;
        };
        if !name.ends_with(&ext) {
            continue;
        }
        let Some(seq) = rest.get(..6).and_then(|d| d.parse::<u64>().ok()) else {
            continue;
        };
        if rest.as_bytes().get(6) != Some(&b'_') {
            continue;
        }
        let len = e.metadata().map(|m| m.len()).unwrap_or(0);
        v.push((seq, e.path(), len));
    }
    v.sort();
    v
}

/// The highest sequence among the session's metadata documents
/// (`{session}_{seq:06}_….{ext}.json|xml`) in its directory.
fn highest_metadata_seq(cfg: &WriterConfig) -> Option<u64> {
    let ext = format!(".{}.", cfg.format.extension());
    std::fs::read_dir(&cfg.dir)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let meta = name.ends_with(".json") || name.ends_with(".xml");
            (meta && name.contains(&ext))
                .then(|| sequence_of(&cfg.session, &name))
                .flatten()
        })
        .max()
}

/// The sequence number in a packet file name `{session}_{seq:06}_…`.
pub fn sequence_of(session: &str, name: &str) -> Option<u64> {
    let rest = name.strip_prefix(session)?.strip_prefix('_')?;
    rest.get(..6)?.parse().ok()
}

impl Drop for RotatingWriter {
    /// Writes buffered records so a file left open (session dropped without
    /// `stop`) still ends on a complete record.
    fn drop(&mut self) {
        if let Err(e) = self.flush() {
            tracing::warn!(session = %self.cfg.session, error = %e, "flush on drop failed");
        }
    }
}
