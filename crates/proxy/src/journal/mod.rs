//! The append-only on-disk journal of one client stream.
//!
//! A journal is a directory `<journal dir>/<id>` holding:
//!
//! - `header`: the client's header, byte for byte as received;
//! - `seg-<offset>`: the data after the header, in segment files that each
//!   start at a tuple boundary (offsets count data bytes from 0, as in
//!   spec §3.6);
//! - `schemas`: streams declared through schema 0, with the offset after
//!   each declaration (for resumed upstream headers);
//! - `meta`: what the upstream acknowledged, whether the client closed,
//!   and up to where the data was last known complete and synced.
//!
//! Only whole tuples are appended. After a crash, [`Journal::open`]
//! decodes the bytes after the last recorded boundary and keeps them only
//! up to the last complete tuple, so a torn write is never forwarded.
//! Segments wholly below the acknowledged offset are deleted.
//!
//! The journal does blocking file I/O and no locking: the proxy wraps it
//! in a mutex and runs the slow part of a sync ([`SyncJob::run`]) outside.

pub mod meta;
mod recover;
pub mod schemas;
pub mod segment;

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use omsp::Header;

use crate::config::FsyncPolicy;
use meta::{sync_dir, Meta};
use omsp::session::{is_session_key, Offer, SessionRequest};
use schemas::Declaration;
use segment::Segment;

/// How journals write.
#[derive(Debug, Clone)]
pub struct JournalOptions {
    /// When data is forced to disk.
    pub fsync: FsyncPolicy,
    /// Segment files roll over once they reach this size.
    pub segment_size: u64,
    /// Bytes held by all journals together (for the quota).
    pub usage: Arc<AtomicU64>,
}

impl JournalOptions {
    /// Whether anything is ever forced to disk.
    fn syncs(&self) -> bool {
        self.fsync != FsyncPolicy::Never
    }
}

/// Why a journal could not be created or loaded.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// A file operation failed.
    #[error("journal {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The directory does not hold a journal this proxy can read.
    #[error("journal {path}: {reason}")]
    Corrupt {
        /// The directory.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> JournalError + '_ {
    move |source| JournalError::Io {
        path: path.to_owned(),
        source,
    }
}

/// A sync to run without holding the journal: forces the listed files
/// (and the directory, for new segments) to disk.
#[derive(Debug)]
pub struct SyncJob {
    /// Segment files written since the last sync.
    files: Vec<File>,
    /// The directory, when segments were created since the last sync.
    dir: Option<PathBuf>,
    /// Data offset the job makes durable.
    pub end: u64,
    /// Whether to fsync at all (policy `never`: only the metadata is written).
    sync: bool,
}

impl SyncJob {
    /// Does the slow part (fdatasync).
    pub fn run(&self) -> std::io::Result<()> {
        if !self.sync {
            return Ok(());
        }
        for f in &self.files {
            f.sync_data()?;
        }
        if let Some(d) = &self.dir {
            sync_dir(d)?;
        }
        Ok(())
    }
}

/// One client stream on disk.
#[derive(Debug)]
pub struct Journal {
    /// Its directory.
    dir: PathBuf,
    /// Its number (the directory name), part of the upstream session id.
    id: u64,
    /// The client's header, as received.
    header: Vec<u8>,
    /// The same, parsed.
    parsed: Header,
    /// Schema-0 declarations, in data order.
    decls: Vec<Declaration>,
    /// Segment files, in offset order.
    segments: VecDeque<Segment>,
    /// Append handle on the last segment.
    append: Option<File>,
    /// Read handle (segment start, file) kept for sequential reads.
    reader: Option<(u64, File)>,
    /// Data offset after the last byte written.
    end: u64,
    /// Data offset up to which the data is durable per the fsync policy.
    durable: u64,
    /// Persistent state.
    meta: Meta,
    /// `meta` changed since it was last stored.
    meta_dirty: bool,
    /// Data written since the last sync.
    dirty: bool,
    /// A segment was created since the last sync (the directory needs one).
    dir_dirty: bool,
    /// Segments closed for appending but written since the last sync.
    unsynced: Vec<File>,
    /// Settings.
    opts: JournalOptions,
}

impl Journal {
    /// Creates journal `id` under `root` for a client whose header is
    /// `header` (complete, up to and including the empty line).
    pub fn create(
        root: &Path,
        id: u64,
        header: &[u8],
        client_session: Option<&str>,
        opts: JournalOptions,
    ) -> Result<Journal, JournalError> {
        let parsed = match Header::parse(header) {
            Ok(Some((h, _))) => h,
            _ => {
                return Err(JournalError::Corrupt {
                    path: root.to_owned(),
                    reason: "not a complete header".into(),
                })
            }
        };
        let tmp = root.join(format!("tmp-{id:08}"));
        let dir = root.join(format!("{id:08}"));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).map_err(io(&tmp))?;
        std::fs::write(tmp.join("header"), header).map_err(io(&tmp))?;
        let meta = Meta {
            client_session: client_session.map(str::to_owned),
            ..Meta::default()
        };
        meta.store(&tmp, false).map_err(io(&tmp))?;
        if opts.syncs() {
            File::open(tmp.join("header"))
                .and_then(|f| f.sync_data())
                .and_then(|()| File::open(tmp.join("meta"))?.sync_data())
                .map_err(io(&tmp))?;
        }
        std::fs::rename(&tmp, &dir).map_err(io(&dir))?;
        if opts.syncs() {
            sync_dir(root).map_err(io(root))?;
        }
        opts.usage.fetch_add(header.len() as u64, Ordering::Relaxed);
        Ok(Journal {
            dir,
            id,
            header: header.to_vec(),
            parsed,
            decls: Vec::new(),
            segments: VecDeque::new(),
            append: None,
            reader: None,
            end: 0,
            durable: 0,
            meta,
            meta_dirty: false,
            dirty: false,
            dir_dirty: false,
            unsynced: Vec::new(),
            opts,
        })
    }

    /// Appends whole tuples, after recording the declarations they carry.
    pub fn append(&mut self, data: &[u8], decls: Vec<Declaration>) -> std::io::Result<()> {
        if !decls.is_empty() {
            schemas::append(&self.dir, &decls, self.opts.syncs())?;
            self.decls.extend(decls);
        }
        if data.is_empty() {
            return Ok(());
        }
        let roll = match self.segments.back() {
            None => true,
            Some(s) => s.len >= self.opts.segment_size || self.append.is_none(),
        };
        if roll {
            if let Some(f) = self.append.take() {
                if self.dirty {
                    self.unsynced.push(f);
                }
            }
            let p = segment::path(&self.dir, self.end);
            let f = OpenOptions::new()
                .create(true)
                .truncate(true)
                .write(true)
                .open(&p)?;
            self.append = Some(f);
            self.segments.push_back(Segment {
                start: self.end,
                len: 0,
            });
            self.dir_dirty = true;
        }
        let (Some(f), Some(seg)) = (self.append.as_mut(), self.segments.back_mut()) else {
            return Err(std::io::Error::other("no segment to append to"));
        };
        if let Err(e) = f.write_all(data) {
            // Leave no partial tuple behind (e.g. on a full disk).
            let _ = f.set_len(seg.len);
            return Err(e);
        }
        seg.len += data.len() as u64;
        self.end += data.len() as u64;
        self.dirty = true;
        self.opts
            .usage
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        if self.opts.fsync == FsyncPolicy::Never {
            self.durable = self.end;
        }
        Ok(())
    }

    /// What a sync has to do now, if anything (data written, metadata changed).
    pub fn sync_job(&mut self) -> Option<SyncJob> {
        if !self.dirty && !self.dir_dirty && self.unsynced.is_empty() && !self.meta_dirty {
            return None;
        }
        let mut files = std::mem::take(&mut self.unsynced);
        if self.dirty {
            if let Some(f) = self.append.as_ref().and_then(|f| f.try_clone().ok()) {
                files.push(f);
            }
        }
        let job = SyncJob {
            files,
            dir: self.dir_dirty.then(|| self.dir.clone()),
            end: self.end,
            sync: self.opts.syncs(),
        };
        self.dirty = false;
        self.dir_dirty = false;
        Some(job)
    }

    /// Records a finished [`SyncJob`]: its data is durable; the metadata
    /// is stored.
    pub fn complete_sync(&mut self, job_end: u64) -> std::io::Result<()> {
        if self.header.is_empty() {
            return Ok(()); // deleted meanwhile
        }
        self.durable = self.durable.max(job_end);
        self.meta.boundary = self.durable;
        self.store_meta(self.opts.syncs())
    }

    /// Syncs now, holding the journal (tests, shutdown, policy `always`).
    pub fn sync(&mut self) -> std::io::Result<()> {
        if let Some(job) = self.sync_job() {
            job.run()?;
            self.complete_sync(job.end)?;
        }
        Ok(())
    }

    fn store_meta(&mut self, sync: bool) -> std::io::Result<()> {
        self.meta.store(&self.dir, sync)?;
        self.meta_dirty = false;
        Ok(())
    }

    /// Reads data at `offset` into `buf`; 0 at the end. Offsets below
    /// [`Journal::start`] were freed or dropped: an error.
    pub fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        if offset >= self.end {
            return Ok(0);
        }
        let Some(seg) = self
            .segments
            .iter()
            .find(|s| s.start <= offset && offset < s.end())
            .copied()
        else {
            return Err(std::io::Error::other(format!(
                "offset {offset} is no longer in the journal"
            )));
        };
        if self.reader.as_ref().map(|(s, _)| *s) != Some(seg.start) {
            let f = File::open(segment::path(&self.dir, seg.start))?;
            self.reader = Some((seg.start, f));
        }
        let want = buf.len().min((seg.end() - offset) as usize);
        let Some((_, f)) = self.reader.as_ref() else {
            return Ok(0);
        };
        f.read_at(&mut buf[..want], offset - seg.start)
    }

    /// The upstream acknowledged everything before `offset`: frees the
    /// segments wholly below it. Returns the bytes freed.
    pub fn ack(&mut self, offset: u64) -> std::io::Result<u64> {
        let offset = offset.min(self.end);
        if offset <= self.meta.acked {
            return Ok(0);
        }
        self.meta.acked = offset;
        self.meta_dirty = true;
        let mut freed = 0;
        // The segment being appended to goes too once all of it is
        // acknowledged (the next append starts a new one).
        while self
            .segments
            .front()
            .is_some_and(|s| s.end() <= offset && (self.segments.len() > 1 || offset >= self.end))
        {
            if self.segments.len() == 1 {
                self.before_emptying()?;
            }
            freed += self.remove_first()?;
        }
        Ok(freed)
    }

    /// Stores where the data ends before the last segment goes: with no
    /// segment left, the metadata alone says where the next byte belongs,
    /// and offsets must never be reused after a restart.
    fn before_emptying(&mut self) -> std::io::Result<()> {
        self.meta.boundary = self.meta.boundary.max(self.end);
        self.store_meta(self.opts.syncs())
    }

    /// [`Journal::ack`], with the metadata stored at once (plain
    /// forwarding: a restart must not send again what was written).
    pub fn ack_now(&mut self, offset: u64) -> std::io::Result<u64> {
        let freed = self.ack(offset)?;
        if self.meta_dirty {
            self.store_meta(false)?;
        }
        Ok(freed)
    }

    fn remove_first(&mut self) -> std::io::Result<u64> {
        let Some(seg) = self.segments.pop_front() else {
            return Ok(0);
        };
        if self.reader.as_ref().is_some_and(|(s, _)| *s == seg.start) {
            self.reader = None;
        }
        if self.segments.is_empty() {
            // Its data is acknowledged or given up: nothing left to sync.
            self.append = None;
            self.unsynced.clear();
        }
        std::fs::remove_file(segment::path(&self.dir, seg.start))?;
        self.dir_dirty = true;
        self.opts.usage.fetch_sub(seg.len, Ordering::Relaxed);
        Ok(seg.len)
    }

    /// Deletes every segment once everything is acknowledged (a delivered
    /// stream kept only so that its client can still resume it).
    pub fn free_all(&mut self) -> std::io::Result<u64> {
        if self.meta.acked < self.end {
            return Ok(0);
        }
        if !self.segments.is_empty() {
            self.before_emptying()?;
        }
        self.append = None;
        let mut freed = 0;
        while !self.segments.is_empty() {
            freed += self.remove_first()?;
        }
        Ok(freed)
    }

    /// Deletes the oldest segment even though it is not acknowledged (quota
    /// policy drop-oldest), the one being appended to included. Returns the
    /// bytes lost, or `None` when the journal holds no data. The stream
    /// continues in a new upstream session from the next segment.
    pub fn drop_oldest(&mut self) -> std::io::Result<Option<u64>> {
        let Some(seg) = self.segments.front().copied() else {
            return Ok(None);
        };
        let lost = seg.end().saturating_sub(seg.start.max(self.meta.acked));
        if self.segments.len() == 1 {
            self.meta.boundary = self.meta.boundary.max(self.end);
        }
        if lost > 0 {
            self.meta.lost += lost;
            // Stored before the data goes (new_epoch stores the metadata).
            self.new_epoch(seg.end())?;
        } else if self.segments.len() == 1 {
            self.before_emptying()?;
        }
        self.remove_first()?;
        Ok(Some(lost))
    }

    /// Starts a new upstream session at data offset `base` (everything
    /// before it is given up), and stores that at once: reusing the old
    /// session's offsets for other data would corrupt the upstream.
    pub fn new_epoch(&mut self, base: u64) -> std::io::Result<()> {
        self.meta.epoch += 1;
        self.meta.epoch_base = base;
        self.meta.acked = self.meta.acked.max(base).min(self.end);
        self.store_meta(self.opts.syncs())
    }

    /// Counts bytes the upstream will never get (a gap it reported).
    pub fn record_loss(&mut self, bytes: u64) {
        self.meta.lost += bytes;
        self.meta_dirty = true;
    }

    /// The client ended its session: no more data will come.
    pub fn close(&mut self) -> std::io::Result<()> {
        self.meta.closed = true;
        self.store_meta(self.opts.syncs())
    }

    /// The client resumed a session it had closed: more data may come.
    pub fn reopen(&mut self) -> std::io::Result<()> {
        self.meta.closed = false;
        self.store_meta(self.opts.syncs())
    }

    /// Deletes the journal (its data has been delivered). The value must
    /// not be used afterwards.
    pub fn delete(&mut self) -> std::io::Result<()> {
        let bytes = self.disk_bytes();
        self.segments.clear();
        self.append = None;
        self.reader = None;
        self.unsynced.clear();
        self.dirty = false;
        self.dir_dirty = false;
        self.meta_dirty = false;
        self.header.clear();
        self.opts.usage.fetch_sub(bytes, Ordering::Relaxed);
        std::fs::remove_dir_all(&self.dir)
    }

    /// The upstream header for a connection of epoch `epoch` that starts at
    /// upstream offset `offset`: the client's header without its own
    /// session keys, with every stream declared before that point, and the
    /// proxy's session keys (spec §3.6).
    pub fn upstream_header(&self, session: &str, offset: u64) -> Vec<u8> {
        let mut h = self.parsed.clone();
        // Control messages travel on a session's back-channel only.
        let feedback = matches!(
            Offer::from_header(&h),
            Ok(Some(Offer {
                session: Some(_),
                feedback: true
            }))
        );
        h.extra.retain(|(k, _)| !is_session_key(k));
        schemas::apply(&mut h, &self.decls, self.meta.epoch_base + offset);
        let offer = Offer {
            session: Some(SessionRequest {
                id: session.to_owned(),
                offset,
            }),
            feedback,
        };
        h.extra.extend(offer.keys());
        let mut out = Vec::with_capacity(self.header.len() + 128);
        h.write(&mut out);
        out
    }

    /// The client's header as it stands at data offset `offset`: every
    /// stream declared before it, without session keys.
    pub fn header_at(&self, offset: u64) -> Vec<u8> {
        let mut h = self.parsed.clone();
        h.extra.retain(|(k, _)| !is_session_key(k));
        schemas::apply(&mut h, &self.decls, offset);
        let mut out = Vec::with_capacity(self.header.len());
        h.write(&mut out);
        out
    }

    /// Whether a stream is declared in data offsets `(a, b]` (either order).
    pub fn declares_between(&self, a: u64, b: u64) -> bool {
        let (lo, hi) = (a.min(b), a.max(b));
        self.decls.iter().any(|d| d.end > lo && d.end <= hi)
    }

    /// Journal number.
    pub fn id(&self) -> u64 {
        self.id
    }
    /// The client's header as received.
    pub fn header(&self) -> &[u8] {
        &self.header
    }
    /// The client's header, parsed.
    pub fn parsed(&self) -> &Header {
        &self.parsed
    }
    /// Data offset after the last byte written.
    pub fn end(&self) -> u64 {
        self.end
    }
    /// Data offset up to which data is durable per the fsync policy.
    pub fn durable(&self) -> u64 {
        self.durable
    }
    /// Data offset the upstream acknowledged.
    pub fn acked(&self) -> u64 {
        self.meta.acked
    }
    /// First data offset still held.
    pub fn start(&self) -> u64 {
        self.segments.front().map_or(self.end, |s| s.start)
    }
    /// The client ended its session.
    pub fn closed(&self) -> bool {
        self.meta.closed
    }
    /// Upstream session generation.
    pub fn epoch(&self) -> u32 {
        self.meta.epoch
    }
    /// Data offset of upstream offset 0.
    pub fn epoch_base(&self) -> u64 {
        self.meta.epoch_base
    }
    /// Bytes lost (dropped before acknowledgement, or gaps).
    pub fn lost(&self) -> u64 {
        self.meta.lost
    }
    /// The client's own session id, if it sent one.
    pub fn client_session(&self) -> Option<&str> {
        self.meta.client_session.as_deref()
    }
    /// Bytes on disk (header and segments).
    pub fn disk_bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.len).sum::<u64>() + self.header.len() as u64
    }
    /// Segment files held.
    pub fn segments(&self) -> usize {
        self.segments.len()
    }
}
