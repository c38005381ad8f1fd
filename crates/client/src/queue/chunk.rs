//! Chunks of encoded tuples, and the counters kept per accounting slot.

/// Accounting slot of schema-0 tuples (declarations, metadata).
pub(crate) const SLOT_SCHEMA0: usize = 0;
/// Accounting slot of `_client_instrumentation` tuples.
pub(crate) const SLOT_INSTR: usize = 1;
/// Accounting slot of `_client_clock` tuples.
pub(crate) const SLOT_CLOCK: usize = 2;
/// Accounting slot of a measurement point.
pub(crate) fn slot_of_mp(mp: u32) -> usize {
    mp as usize + 3
}

/// One encoded tuple in a chunk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TupleMeta {
    /// Encoded length.
    pub(crate) len: u32,
    /// Accounting slot ([`SLOT_SCHEMA0`], [`SLOT_INSTR`], [`SLOT_CLOCK`], [`slot_of_mp`]).
    pub(crate) slot: u32,
}

/// Encoded tuples, handed between threads as a unit.
#[derive(Debug, Default)]
pub(crate) struct Chunk {
    /// The tuples' bytes, back to back.
    pub(crate) bytes: Vec<u8>,
    /// One entry per tuple, in order.
    pub(crate) tuples: Vec<TupleMeta>,
    /// First tuple not yet written or dropped.
    pub(crate) first: usize,
    /// Byte offset of `tuples[first]`.
    pub(crate) offset: usize,
    /// Holds schema-0 tuples, which are never dropped (a lost declaration
    /// would make its stream unreadable); such chunks hold nothing else.
    pub(crate) pinned: bool,
    /// The stream this (pinned) chunk's schema-0 tuple declares, for a
    /// resumable session's header (spec §3.6).
    pub(crate) declares: Option<omsp::Schema>,
    /// Capacity already reported to [`Memory`].
    pub(super) accounted: usize,
}

impl Chunk {
    /// Bytes not yet written or dropped.
    pub(crate) fn pending_bytes(&self) -> usize {
        self.bytes.len() - self.offset
    }

    /// True when every tuple is written or dropped.
    pub(crate) fn is_done(&self) -> bool {
        self.first == self.tuples.len()
    }

    /// Appends a tuple encoded at `bytes[start..]`.
    pub(crate) fn record(&mut self, start: usize, slot: usize) {
        self.tuples.push(TupleMeta {
            len: (self.bytes.len() - start) as u32,
            slot: slot as u32,
        });
    }

    /// Rewrites the tuples not yet written with their scalar doubles as the
    /// reference encodes them (for a receiver that has not confirmed exact
    /// doubles, spec §3.8). On error the chunk is unchanged.
    pub(crate) fn rewrite_reference_doubles(&mut self) -> Result<(), omsp::binary::TranscodeError> {
        let mut out = Vec::with_capacity(self.bytes.len());
        out.extend_from_slice(&self.bytes[..self.offset]);
        let mut lens = Vec::with_capacity(self.tuples.len() - self.first);
        let mut at = self.offset;
        for t in &self.tuples[self.first..] {
            let end = at + t.len as usize;
            let start = out.len();
            omsp::binary::to_reference(&self.bytes[at..end], &mut out)?;
            lens.push((out.len() - start) as u32);
            at = end;
        }
        for (t, len) in self.tuples[self.first..].iter_mut().zip(lens) {
            t.len = len;
        }
        self.bytes = out;
        Ok(())
    }

    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.tuples.clear();
        self.first = 0;
        self.offset = 0;
        self.pinned = false;
        self.declares = None;
    }
}

/// Tuples counted for one accounting slot of one destination.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SlotCounters {
    /// Encoded for the destination.
    pub(crate) emitted: u64,
    /// Completely written to the destination.
    pub(crate) written: u64,
    /// Dropped by the overload policy or at close.
    pub(crate) dropped: u64,
}

/// A destination's counters.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counters {
    /// Per accounting slot.
    pub(crate) slots: Vec<SlotCounters>,
    /// Bytes written (header and replays included).
    pub(crate) bytes_written: u64,
    /// Connections made (TCP) or files opened.
    pub(crate) connections: u64,
    /// Strings cut to fit a binary tuple.
    pub(crate) truncated: u64,
    /// Drops not yet reported in `_client_instrumentation`.
    pub(crate) dropped_since_report: u64,
}

impl Counters {
    pub(crate) fn slot(&mut self, slot: usize) -> &mut SlotCounters {
        if self.slots.len() <= slot {
            self.slots.resize(slot + 1, SlotCounters::default());
        }
        &mut self.slots[slot]
    }

    /// Counts one dropped tuple.
    pub(crate) fn drop_tuple(&mut self, slot: usize) {
        self.drop_tuples(slot, 1);
    }

    /// Counts `n` dropped tuples.
    pub(crate) fn drop_tuples(&mut self, slot: usize, n: u64) {
        self.slot(slot).dropped += n;
        self.dropped_since_report += n;
    }
}

impl Chunk {
    pub(super) fn capacity_grew(&self) -> bool {
        self.bytes.capacity() > self.accounted
    }
}
