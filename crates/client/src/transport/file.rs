//! `file:`, `flushfile:` and standard output.
//!
//! `file:` appends through a 64 KiB buffer, flushed whenever the queue has
//! been idle for 100 ms and at close; `flushfile:` and standard output
//! write every chunk as soon as it arrives. A write error (disk full…)
//! drops the tuples of the chunk being written, counted, and the sender
//! carries on with the next chunk.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::{give_up, mark_written, CloseClock, SenderCtx, IDLE_WAIT};
use crate::queue::dest::Take;

/// An opened file destination.
#[derive(Debug)]
pub(crate) enum FileSink {
    /// Buffered (`file:`).
    Buffered(BufWriter<File>),
    /// Unbuffered (`flushfile:`).
    Flushed(File),
    /// Standard output.
    Stdout,
}

impl FileSink {
    /// Opens `path` for appending, creating it if needed.
    pub(crate) fn open(path: &Path, flush: bool) -> io::Result<FileSink> {
        let f = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(if flush {
            FileSink::Flushed(f)
        } else {
            FileSink::Buffered(BufWriter::with_capacity(64 << 10, f))
        })
    }

    /// Standard output.
    pub(crate) fn stdout() -> FileSink {
        FileSink::Stdout
    }

    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        match self {
            FileSink::Buffered(w) => w.write_all(b),
            FileSink::Flushed(f) => f.write_all(b),
            FileSink::Stdout => {
                let mut out = io::stdout().lock();
                out.write_all(b)?;
                out.flush()
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            FileSink::Buffered(w) => w.flush(),
            _ => Ok(()),
        }
    }
}

/// The sender loop of a file destination.
pub(super) fn run(mut sink: FileSink, ctx: SenderCtx) {
    let q = &ctx.queue;
    match sink.write_all(&ctx.header) {
        Ok(()) => {
            q.connected();
            q.progress(ctx.header.len());
        }
        Err(e) => tracing::error!(destination = %ctx.label, error = %e, "cannot write the header"),
    }
    let mut clock = CloseClock::default();
    loop {
        match q.take(IDLE_WAIT) {
            Take::Chunk(mut c) => {
                let pending = c.pending_bytes();
                match sink.write_all(&c.bytes[c.offset..]) {
                    Ok(()) => {
                        q.progress(pending);
                        mark_written(&mut c, pending, q, None);
                        q.recycle(c);
                    }
                    Err(e) => {
                        tracing::error!(destination = %ctx.label, error = %e, tuples = c.tuples.len() - c.first,
                            "write failed; dropping these tuples");
                        q.drop_rest(&mut c);
                        q.recycle(c);
                    }
                }
            }
            Take::Idle => {
                if let Err(e) = sink.flush() {
                    tracing::error!(destination = %ctx.label, error = %e, "flush failed");
                }
                if clock.expired(&ctx) {
                    give_up(&ctx, None);
                    break;
                }
            }
            Take::Finished => break,
        }
    }
    if let Err(e) = sink.flush() {
        tracing::error!(destination = %ctx.label, error = %e, "final flush failed");
    }
}
