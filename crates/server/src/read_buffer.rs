//! The buffer a connection reads its socket into, sized by what arrives.
//!
//! A connection that has sent nothing (or a few header bytes) holds
//! [`START`] bytes, not a full read chunk: thousands of idle or half-open
//! connections then cost a few KiB each. A read that fills the buffer
//! doubles it, up to the configured chunk, so a fast sender reaches full
//! chunks after a few reads; a run of reads that use little of it halves it
//! again, so the room goes back when a sender slows down.

/// Bytes a new connection reads into.
pub const START: usize = 1024;

/// Consecutive reads using at most a quarter of the buffer before it is
/// halved.
const SMALL_READS: u32 = 8;

/// A socket read buffer that grows with full reads and shrinks with small ones.
#[derive(Debug)]
pub struct ReadBuffer {
    /// The bytes (all initialised; `len` is the current size).
    buf: Vec<u8>,
    /// Largest size: the server's read chunk.
    max: usize,
    /// Reads in a row that used at most a quarter of the buffer.
    small: u32,
}

impl ReadBuffer {
    /// A buffer of [`START`] bytes (or `max`, if smaller) that may grow to `max`.
    pub fn new(max: usize) -> ReadBuffer {
        let max = max.max(START);
        ReadBuffer {
            buf: vec![0; START],
            max,
            small: 0,
        }
    }

    /// Where the next read goes.
    pub fn room(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    /// The first `n` bytes of the last read.
    pub fn filled(&self, n: usize) -> &[u8] {
        &self.buf[..n.min(self.buf.len())]
    }

    /// Adjusts the size after a read of `n` bytes.
    pub fn record(&mut self, n: usize) {
        let size = self.buf.len();
        if n == size && size < self.max {
            self.buf = vec![0; (size * 2).min(self.max)];
            self.small = 0;
        } else if n <= size / 4 && size > START {
            self.small += 1;
            if self.small >= SMALL_READS {
                self.buf = vec![0; (size / 2).max(START)];
                self.small = 0;
            }
        } else {
            self.small = 0;
        }
    }

    /// Current size in bytes.
    #[cfg(test)]
    fn size(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_with_full_reads_and_shrinks_with_small_ones() {
        let mut b = ReadBuffer::new(64 * 1024);
        assert_eq!(b.size(), START);
        let mut reads = 0;
        while b.size() < 64 * 1024 {
            let n = b.room().len();
            b.record(n);
            reads += 1;
        }
        assert_eq!(reads, 6, "1 KiB to 64 KiB in doublings");
        b.record(64 * 1024);
        assert_eq!(b.size(), 64 * 1024, "never beyond the chunk");
        b.record(30_000);
        for _ in 0..SMALL_READS - 1 {
            b.record(100);
        }
        assert_eq!(b.size(), 64 * 1024, "a few small reads change nothing");
        for _ in 0..SMALL_READS * 10 {
            b.record(100);
        }
        assert_eq!(b.size(), START, "a trickle shrinks it back");
    }

    #[test]
    fn a_chunk_below_the_start_size_is_raised_to_it() {
        let mut b = ReadBuffer::new(100);
        assert_eq!(b.room().len(), START);
        b.record(START);
        assert_eq!(b.size(), START);
    }
}
