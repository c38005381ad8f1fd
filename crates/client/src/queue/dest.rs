//! A destination's queue of encoded tuples, between the writer thread and
//! the destination's sender thread.
//!
//! The writer encodes tuples into a [`Chunk`] and hands whole chunks over;
//! the sender takes whole chunks and hands them back for reuse, so bytes
//! are copied once (by the encoder) and nothing is allocated in the steady
//! state. Each chunk keeps the length and accounting slot of every tuple
//! in it, so that drops are counted per measurement point and a partly
//! written chunk can be resumed at a tuple boundary.
//!
//! The byte budget counts the bytes waiting in the queue; the chunk the
//! sender is writing is not counted (it is at most one chunk).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub(crate) use super::chunk::{
    slot_of_mp, Chunk, Counters, SlotCounters, SLOT_CLOCK, SLOT_INSTR, SLOT_SCHEMA0,
};
use super::ring::lock;
use super::Memory;

/// Recycled chunks kept per destination.
const FREE_CHUNKS: usize = 8;

/// How the writer hands a chunk over.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Admission {
    /// Queue it whatever the budget (drop-newest already filtered).
    Always,
    /// Make room by dropping the oldest queued tuples.
    DropOldest,
    /// Wait for room; after `stall` without progress, drop the oldest
    /// until the sender moves again.
    Block {
        /// `None`: wait as long as it takes.
        stall: Option<Duration>,
    },
}

/// What the sender got from [`DestQueue::take`].
#[derive(Debug)]
pub(crate) enum Take {
    /// Tuples to write.
    Chunk(Chunk),
    /// Nothing arrived within the wait.
    Idle,
    /// Nothing left and the client is closing.
    Finished,
}

#[derive(Debug)]
struct State {
    /// Chunks waiting for the sender, oldest first.
    chunks: VecDeque<Chunk>,
    /// Bytes waiting in `chunks`.
    queued: usize,
    /// Empty chunks for the writer to reuse.
    free: Vec<Chunk>,
    /// The writer will hand over nothing more.
    closing: bool,
    /// The sender gave up (close timeout): everything is dropped.
    abandoned: bool,
    /// Last time the sender wrote bytes (or the queue started).
    last_progress: Instant,
    /// Set while a blocking destination drops for lack of progress.
    stalled_at: Option<Instant>,
    counters: Counters,
}

/// The queue between the writer and one destination's sender.
#[derive(Debug)]
pub(crate) struct DestQueue {
    state: Mutex<State>,
    /// Signals the sender: data or closing.
    data: Condvar,
    /// Signals the writer: room was made.
    room: Condvar,
    /// Byte budget (the destination's `bufsize`).
    budget: usize,
    /// Chunk memory is reported in `_client_instrumentation`.
    memory: Arc<Memory>,
    /// For log messages.
    label: String,
    /// Control messages from the receiver (spec §3.7), for the writer.
    controls: Mutex<Vec<ControlMsg>>,
    /// `controls` is not empty.
    has_controls: AtomicBool,
    /// The receiver asked the destination to pause: the sender writes
    /// nothing and the queue fills under the overload policy.
    paused: AtomicBool,
}

/// One `streamgauge-control <id> <json>` line from the receiver.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ControlMsg {
    /// The receiver's message id.
    pub(crate) id: u64,
    /// The JSON object, unparsed.
    pub(crate) json: String,
}

impl DestQueue {
    /// An empty queue of `budget` bytes.
    pub(crate) fn new(budget: usize, memory: Arc<Memory>, label: String) -> DestQueue {
        DestQueue {
            state: Mutex::new(State {
                chunks: VecDeque::new(),
                queued: 0,
                free: Vec::new(),
                closing: false,
                abandoned: false,
                last_progress: Instant::now(),
                stalled_at: None,
                counters: Counters::default(),
            }),
            data: Condvar::new(),
            room: Condvar::new(),
            budget,
            memory,
            label,
            controls: Mutex::new(Vec::new()),
            has_controls: AtomicBool::new(false),
            paused: AtomicBool::new(false),
        }
    }

    /// The sender received a control message (the caller wakes the writer).
    pub(crate) fn push_control(&self, msg: ControlMsg) {
        lock(&self.controls).push(msg);
        self.has_controls.store(true, Ordering::Release);
    }

    /// Control messages received since the last call (cheap when none).
    pub(crate) fn take_controls(&self) -> Vec<ControlMsg> {
        if !self.has_controls.swap(false, Ordering::AcqRel) {
            return Vec::new();
        }
        std::mem::take(&mut *lock(&self.controls))
    }

    /// Pauses or resumes the sender.
    pub(crate) fn set_paused(&self, paused: bool) {
        self.paused.store(paused, Ordering::Release);
        self.data.notify_all();
    }

    /// True while the receiver has paused this destination.
    pub(crate) fn is_paused(&self) -> bool {
        self.paused.load(Ordering::Acquire)
    }

    /// The byte budget.
    pub(crate) fn budget(&self) -> usize {
        self.budget
    }

    /// Bytes waiting for the sender.
    pub(crate) fn queued(&self) -> usize {
        lock(&self.state).queued
    }

    /// A copy of the counters.
    pub(crate) fn counters(&self) -> Counters {
        lock(&self.state).counters.clone()
    }

    /// Runs `f` on the counters (the writer adds drops and truncations).
    pub(crate) fn with_counters<R>(&self, f: impl FnOnce(&mut Counters) -> R) -> R {
        f(&mut lock(&self.state).counters)
    }

    /// Hands `chunk` to the sender under `admission`; returns an empty
    /// chunk to encode into next.
    pub(crate) fn push(&self, mut chunk: Chunk, admission: Admission) -> Chunk {
        if chunk.capacity_grew() {
            self.memory.alloc(chunk.bytes.capacity() - chunk.accounted);
            chunk.accounted = chunk.bytes.capacity();
        }
        let need = chunk.pending_bytes();
        let mut st = lock(&self.state);
        for t in &chunk.tuples[chunk.first..] {
            st.counters.slot(t.slot as usize).emitted += 1;
        }
        if st.abandoned {
            for t in &chunk.tuples[chunk.first..] {
                st.counters.drop_tuple(t.slot as usize);
            }
            chunk.clear();
            return chunk;
        }
        match admission {
            Admission::Always => {}
            Admission::DropOldest => self.evict(&mut st, need),
            Admission::Block { stall } => st = self.wait_for_room(st, need, stall),
        }
        if need > 0 {
            st.queued += need;
            st.chunks.push_back(chunk);
            self.data.notify_one();
            st.free.pop().unwrap_or_default()
        } else {
            chunk.clear();
            chunk
        }
    }

    fn wait_for_room<'a>(
        &self,
        mut st: std::sync::MutexGuard<'a, State>,
        need: usize,
        stall: Option<Duration>,
    ) -> std::sync::MutexGuard<'a, State> {
        let began = Instant::now();
        loop {
            if st.queued == 0 || st.queued + need <= self.budget || st.abandoned {
                return st;
            }
            if let Some(at) = st.stalled_at {
                if st.last_progress > at {
                    st.stalled_at = None;
                    tracing::info!(destination = %self.label, "destination moves again; blocking instead of dropping");
                    continue;
                }
                self.evict(&mut st, need);
                return st;
            }
            let Some(limit) = stall else {
                st = self.room.wait(st).unwrap_or_else(|e| e.into_inner());
                continue;
            };
            let quiet = Instant::now() - st.last_progress.max(began);
            if quiet >= limit {
                tracing::warn!(destination = %self.label, stall_ms = limit.as_millis() as u64,
                    "destination made no progress; dropping the oldest tuples until it moves");
                st.stalled_at = Some(Instant::now());
                self.evict(&mut st, need);
                return st;
            }
            st = self
                .room
                .wait_timeout(st, limit - quiet)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Drops the oldest droppable tuples until `need` more bytes fit.
    fn evict(&self, st: &mut State, need: usize) {
        let mut i = 0;
        while st.queued + need > self.budget && i < st.chunks.len() {
            if st.chunks[i].pinned {
                i += 1;
                continue;
            }
            let State {
                chunks,
                queued,
                counters,
                ..
            } = st;
            let c = &mut chunks[i];
            while c.first < c.tuples.len() && *queued + need > self.budget {
                let t = c.tuples[c.first];
                c.first += 1;
                c.offset += t.len as usize;
                *queued -= t.len as usize;
                counters.drop_tuple(t.slot as usize);
            }
            if c.is_done() {
                if let Some(done) = st.chunks.remove(i) {
                    self.recycle_locked(st, done);
                }
            } else {
                i += 1;
            }
        }
    }

    /// Marks the end of input: the sender finishes what is queued.
    pub(crate) fn close(&self) {
        lock(&self.state).closing = true;
        self.data.notify_all();
    }

    /// Waits up to `wait` for a chunk to write.
    pub(crate) fn take(&self, wait: Duration) -> Take {
        let mut st = lock(&self.state);
        if st.chunks.is_empty() && !st.closing {
            st = self
                .data
                .wait_timeout(st, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        match st.chunks.pop_front() {
            Some(c) => {
                st.queued -= c.pending_bytes();
                self.room.notify_all();
                Take::Chunk(c)
            }
            None if st.closing => Take::Finished,
            None => Take::Idle,
        }
    }

    /// True once the writer has closed the queue.
    pub(crate) fn is_closing(&self) -> bool {
        lock(&self.state).closing
    }

    /// True once the writer has closed the queue and the sender took
    /// everything.
    pub(crate) fn is_drained(&self) -> bool {
        let st = lock(&self.state);
        st.closing && st.chunks.is_empty()
    }

    /// The sender wrote `bytes` bytes (progress for stall detection).
    pub(crate) fn progress(&self, bytes: usize) {
        let mut st = lock(&self.state);
        st.last_progress = Instant::now();
        st.counters.bytes_written += bytes as u64;
        drop(st);
        self.room.notify_all();
    }

    /// Last time the sender made progress.
    pub(crate) fn last_progress(&self) -> Instant {
        lock(&self.state).last_progress
    }

    /// The sender completely wrote tuples `chunk.first..upto`.
    pub(crate) fn written(&self, chunk: &mut Chunk, upto: usize) {
        let mut st = lock(&self.state);
        for t in &chunk.tuples[chunk.first..upto] {
            st.counters.slot(t.slot as usize).written += 1;
            chunk.offset += t.len as usize;
        }
        chunk.first = upto;
    }

    /// Counts the unwritten tuples of `c` as dropped (a failed file write).
    pub(crate) fn drop_rest(&self, c: &mut Chunk) {
        let mut st = lock(&self.state);
        while c.first < c.tuples.len() {
            let t = c.tuples[c.first];
            st.counters.drop_tuple(t.slot as usize);
            c.offset += t.len as usize;
            c.first += 1;
        }
    }

    /// One more connection (or file opened).
    pub(crate) fn connected(&self) {
        lock(&self.state).counters.connections += 1;
    }

    /// Returns a finished chunk for reuse.
    pub(crate) fn recycle(&self, chunk: Chunk) {
        let mut st = lock(&self.state);
        self.recycle_locked(&mut st, chunk);
    }

    fn recycle_locked(&self, st: &mut State, mut chunk: Chunk) {
        if st.free.len() < FREE_CHUNKS {
            chunk.clear();
            st.free.push(chunk);
        } else {
            self.memory.free(chunk.accounted);
        }
    }

    /// The sender gives up (close timeout): drops the rest of `current`
    /// and everything queued, and every later chunk.
    pub(crate) fn abandon(&self, current: Option<Chunk>) -> u64 {
        let mut st = lock(&self.state);
        st.abandoned = true;
        let mut rest: Vec<Chunk> = st.chunks.drain(..).collect();
        rest.extend(current);
        let mut n = 0;
        for c in rest {
            for t in &c.tuples[c.first..] {
                st.counters.drop_tuple(t.slot as usize);
                n += 1;
            }
            self.recycle_locked(&mut st, c);
        }
        st.queued = 0;
        drop(st);
        self.room.notify_all();
        n
    }

    /// Drops since the last report, and resets that count.
    pub(crate) fn take_dropped_since_report(&self) -> u64 {
        std::mem::take(&mut lock(&self.state).counters.dropped_since_report)
    }

    /// Releases the memory of every chunk (the destination is finished).
    pub(crate) fn release(&self) {
        let mut st = lock(&self.state);
        let n: usize = st.free.drain(..).map(|c| c.accounted).sum();
        self.memory.free(n);
    }
}
