//! Loading a journal after a restart or a crash: the data after the last
//! boundary known to be complete is decoded with the OMSP decoder and kept
//! only up to its last whole tuple, so a torn write is never forwarded.

use std::collections::VecDeque;
use std::fs::OpenOptions;
use std::path::Path;
use std::sync::atomic::Ordering;

use omsp::Header;

use super::meta::Meta;
use super::schemas::{self, Declaration};
use super::segment::{self, Segment};
use super::{io, Journal, JournalError, JournalOptions};
use crate::framer::{Framer, Frames};

impl Journal {
    /// Loads the journal in `dir`, cutting an incomplete tail.
    pub fn open(dir: &Path, opts: JournalOptions) -> Result<Journal, JournalError> {
        let corrupt = |reason: String| JournalError::Corrupt {
            path: dir.to_owned(),
            reason,
        };
        let id = dir
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| corrupt("directory name is not a journal number".into()))?;
        let header = std::fs::read(dir.join("header")).map_err(io(dir))?;
        let parsed = match Header::parse(&header) {
            Ok(Some((h, _))) => h,
            _ => return Err(corrupt("header file is not a complete header".into())),
        };
        let mut meta = Meta::load(dir).map_err(corrupt)?;
        let mut decls = schemas::load(dir).map_err(io(dir))?;
        let segs = segment::list(dir).map_err(io(dir))?;
        for pair in segs.windows(2) {
            if pair[0].end() != pair[1].start {
                return Err(corrupt(format!(
                    "segments are not contiguous at offset {}",
                    pair[0].end()
                )));
            }
        }
        let mut segments: VecDeque<Segment> = segs.into();
        let seg_end = segments.back().map_or(
            meta.acked.max(meta.epoch_base).max(meta.boundary),
            Segment::end,
        );
        let first = segments.front().map_or(seg_end, |s| s.start);
        let mut journal = Journal {
            dir: dir.to_owned(),
            id,
            header,
            parsed,
            decls: Vec::new(),
            segments: VecDeque::new(),
            append: None,
            reader: None,
            end: seg_end,
            durable: 0,
            meta: meta.clone(),
            meta_dirty: false,
            dirty: false,
            dir_dirty: false,
            unsynced: Vec::new(),
            opts,
        };
        // Decode the tail after the last boundary known to be complete (or
        // the whole last segment, if that boundary is not on disk).
        let last_start = segments.back().map_or(seg_end, |s| s.start);
        let from = if meta.boundary <= seg_end && meta.boundary >= first {
            meta.boundary
        } else {
            last_start
        };
        journal.segments = segments.clone();
        journal.decls = decls.clone();
        let (valid, found) = journal.valid_end(from, seg_end).map_err(io(dir))?;
        for d in found {
            if !decls.iter().any(|x| x.end == d.end) {
                decls.push(d);
            }
        }
        decls.sort_by_key(|d| d.end);
        let before = decls.len();
        decls.retain(|d| d.end <= valid);
        if decls.len() != before || decls != journal.decls {
            schemas::rewrite(dir, &decls).map_err(io(dir))?;
        }
        if valid < seg_end {
            tracing::warn!(
                journal = id,
                cut = seg_end - valid,
                offset = valid,
                "journal ends with an incomplete tuple (torn write): cut"
            );
            while let Some(last) = segments.back().copied() {
                if last.end() <= valid {
                    break;
                }
                let p = segment::path(dir, last.start);
                if last.start >= valid && segments.len() > 1 {
                    std::fs::remove_file(&p).map_err(io(&p))?;
                    segments.pop_back();
                } else {
                    let f = OpenOptions::new().write(true).open(&p).map_err(io(&p))?;
                    f.set_len(valid - last.start).map_err(io(&p))?;
                    f.sync_all().map_err(io(&p))?;
                    if let Some(s) = segments.back_mut() {
                        s.len = valid - last.start;
                    }
                }
            }
        }
        let end = valid;
        if let Some(last) = segments.back() {
            let p = segment::path(dir, last.start);
            let f = OpenOptions::new().append(true).open(&p).map_err(io(&p))?;
            // What a killed process left in the page cache becomes durable
            // before anything of it is acknowledged.
            if journal.opts.syncs() {
                f.sync_data().map_err(io(&p))?;
            }
            journal.append = Some(f);
        }
        meta.boundary = end;
        meta.acked = meta.acked.min(end);
        let bytes: u64 = segments.iter().map(|s| s.len).sum::<u64>() + journal.header.len() as u64;
        journal.opts.usage.fetch_add(bytes, Ordering::Relaxed);
        journal.segments = segments;
        journal.decls = decls;
        journal.end = end;
        journal.durable = end;
        journal.meta = meta;
        journal
            .meta
            .store(dir, journal.opts.syncs())
            .map_err(io(dir))?;
        // Segments wholly acknowledged before the crash can go now.
        let acked = journal.meta.acked;
        journal.meta.acked = 0;
        journal.ack(acked).map_err(io(dir))?;
        Ok(journal)
    }

    /// The data offset after the last whole tuple in `from..to`, and the
    /// declarations found there.
    fn valid_end(&mut self, from: u64, to: u64) -> std::io::Result<(u64, Vec<Declaration>)> {
        if from >= to {
            return Ok((from.min(to), Vec::new()));
        }
        let mut h = self.parsed.clone();
        schemas::apply(&mut h, &self.decls, from);
        let mut text = Vec::new();
        h.write(&mut text);
        let Ok(mut framer) = Framer::with_header(omsp::Limits::default(), &text, from, false)
        else {
            return Ok((from, Vec::new()));
        };
        let mut frames = Frames {
            boundary: from,
            ..Frames::default()
        };
        let mut buf = vec![0u8; 256 << 10];
        let mut at = from;
        while at < to {
            let n = self.read_at(at, &mut buf)?;
            if n == 0 {
                break;
            }
            framer.feed(&buf[..n]);
            at += n as u64;
            if framer.drain(&mut frames).is_err() {
                return Ok((frames.boundary, frames.declarations));
            }
        }
        framer.finish();
        let _ = framer.drain(&mut frames);
        let decls = frames
            .declarations
            .into_iter()
            .filter(|d| d.end <= frames.boundary)
            .collect();
        Ok((frames.boundary, decls))
    }
}
