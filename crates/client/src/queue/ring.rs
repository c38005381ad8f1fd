//! Per-thread sample rings: the injection fast path.
//!
//! Each application thread that injects into a client gets its own
//! [`rtrb`] ring (single producer, single consumer) on its first inject; the
//! producer end lives in a thread-local table keyed by client id, the
//! consumer end is handed to the writer thread. An inject therefore touches
//! only memory owned by its thread plus the ring's tail index: no lock, no
//! syscall, no allocation once the thread's scratch buffer has grown.
//!
//! When a ring is full the client's ring policy applies: with any blocking
//! destination the thread waits for the writer (spinning, then yielding,
//! then sleeping 50 µs at a time); otherwise the sample is dropped and
//! counted against its measurement point. A producer cannot discard the
//! oldest entries of an SPSC ring, so drop-oldest destinations drop the
//! newest sample *here*; they drop the oldest tuples in their own queue.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::Thread;
use std::time::Duration;

use omsp::ValueRef;
use rtrb::{Consumer, Producer, RingBuffer};

use super::Memory;
use crate::record;

/// Source of client ids for the thread-local table.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// This thread's producers, one per client it has injected into.
struct Local {
    /// Which client the ring belongs to.
    client: u64,
    /// The ring's write end.
    producer: Producer<u8>,
    /// The record being built (kept to avoid allocating per inject).
    scratch: Vec<u8>,
    /// Samples dropped per MP since that MP's last queued record.
    skipped: Vec<(u32, u32)>,
}

thread_local! {
    static LOCAL: RefCell<Vec<Local>> = const { RefCell::new(Vec::new()) };
}

/// What happened to one sample (small on purpose: it is returned on the
/// fast path, where a large `Result` costs copies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// In the ring.
    Queued,
    /// The ring was full and the client does not block.
    Dropped,
    /// The client closed (or the thread is exiting).
    Closed,
    /// The record is larger than a ring.
    TooLarge(usize),
}

/// The client side of the rings: hands new consumers to the writer.
#[derive(Debug)]
pub(crate) struct Rings {
    /// Key of this client in the thread-local tables.
    id: u64,
    /// Bytes per ring.
    capacity: usize,
    /// Wait for room (some destination blocks) instead of dropping.
    blocking: bool,
    /// Rings created since the writer last looked.
    pending: Mutex<Vec<Consumer<u8>>>,
    /// Ring memory is reported in `_client_instrumentation`.
    memory: Arc<Memory>,
    /// The writer thread, woken when a ring is created or full.
    writer: OnceLock<Thread>,
}

impl Rings {
    /// Rings of `capacity` bytes; `blocking` selects the ring-full policy.
    pub(crate) fn new(capacity: usize, blocking: bool, memory: Arc<Memory>) -> Rings {
        Rings {
            id: NEXT_ID.fetch_add(1, Relaxed),
            capacity,
            blocking,
            pending: Mutex::new(Vec::new()),
            memory,
            writer: OnceLock::new(),
        }
    }

    /// Registers the writer thread (to be woken).
    pub(crate) fn set_writer(&self, t: Thread) {
        let _ = self.writer.set(t);
    }

    /// Bytes per ring.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Wakes the writer thread if it sleeps.
    pub(crate) fn wake_writer(&self) {
        if let Some(t) = self.writer.get() {
            t.unpark();
        }
    }

    /// Consumers created since the last call.
    pub(crate) fn take_new(&self) -> Vec<Consumer<u8>> {
        std::mem::take(&mut *lock(&self.pending))
    }

    /// Copies one sample (a record of `size` bytes, see
    /// [`record::checked_size`]) into this thread's ring. `is_open` is polled
    /// while waiting for room, so that `close` ends the wait.
    pub(crate) fn push(
        &self,
        mp: u32,
        ts: u64,
        size: usize,
        values: &[ValueRef<'_>],
        is_open: impl Fn() -> bool,
    ) -> Pushed {
        LOCAL
            .try_with(|cell| {
                let mut locals = cell.borrow_mut();
                let i = match locals.iter().position(|l| l.client == self.id) {
                    Some(i) => i,
                    None => self.register(&mut locals),
                };
                let local = &mut locals[i];
                let pending = if local.skipped.is_empty() {
                    None
                } else {
                    local.skipped.iter().position(|s| s.0 == mp)
                };
                let skipped = pending.map_or(0, |p| local.skipped[p].1);
                record::write(&mut local.scratch, size, mp, skipped, ts, values);
                let pushed = self.push_record(&mut local.producer, &local.scratch[..size], is_open);
                match (pushed, pending) {
                    (Pushed::Queued, Some(p)) => {
                        local.skipped.swap_remove(p);
                    }
                    (Pushed::Dropped, Some(p)) => local.skipped[p].1 += 1,
                    (Pushed::Dropped, None) => local.skipped.push((mp, 1)),
                    _ => {}
                }
                pushed
            })
            // Thread-local storage is being torn down: the thread is exiting.
            .unwrap_or(Pushed::Closed)
    }

    fn push_record(
        &self,
        producer: &mut Producer<u8>,
        rec: &[u8],
        is_open: impl Fn() -> bool,
    ) -> Pushed {
        if producer.push_entire_slice(rec).is_ok() {
            return Pushed::Queued;
        }
        self.push_slow(producer, rec, is_open)
    }

    /// The ring is full: wait or drop, by policy.
    #[cold]
    fn push_slow(
        &self,
        producer: &mut Producer<u8>,
        rec: &[u8],
        is_open: impl Fn() -> bool,
    ) -> Pushed {
        if rec.len() > self.capacity {
            return Pushed::TooLarge(rec.len());
        }
        let mut waits = 0u32;
        loop {
            if producer.push_entire_slice(rec).is_ok() {
                return Pushed::Queued;
            }
            if producer.is_abandoned() || !is_open() {
                return Pushed::Closed;
            }
            if !self.blocking {
                return Pushed::Dropped;
            }
            self.wake_writer();
            match waits {
                0..=63 => std::hint::spin_loop(),
                64..=127 => std::thread::yield_now(),
                _ => std::thread::sleep(Duration::from_micros(50)),
            }
            waits = waits.saturating_add(1);
        }
    }

    /// Creates this thread's ring for this client; returns its slot.
    fn register(&self, locals: &mut Vec<Local>) -> usize {
        // Rings of closed clients: their writer has dropped the consumer.
        locals.retain(|l| !l.producer.is_abandoned());
        let (producer, consumer) = RingBuffer::new(self.capacity);
        self.memory.alloc(self.capacity);
        lock(&self.pending).push(consumer);
        self.wake_writer();
        locals.push(Local {
            client: self.id,
            producer,
            scratch: Vec::with_capacity(256),
            skipped: Vec::new(),
        });
        locals.len() - 1
    }
}

/// Locks a mutex, ignoring poisoning: every critical section here leaves
/// its data consistent, so a panic elsewhere must not cascade.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The writer's end of one ring.
#[derive(Debug)]
pub(crate) struct RingReader {
    /// The read end.
    consumer: Consumer<u8>,
}

impl RingReader {
    /// Wraps a consumer handed over by [`Rings::take_new`].
    pub(crate) fn new(consumer: Consumer<u8>) -> RingReader {
        RingReader { consumer }
    }

    /// Moves every complete record in the ring to the end of `out` and
    /// frees their space; returns the number of bytes moved. Producers
    /// commit whole records, so the bytes available are whole records.
    pub(crate) fn drain_into(&mut self, out: &mut Vec<u8>) -> usize {
        let n = self.consumer.slots();
        if n == 0 {
            return 0;
        }
        match self.consumer.read_chunk(n) {
            Ok(chunk) => {
                let (a, b) = chunk.as_slices();
                out.extend_from_slice(a);
                out.extend_from_slice(b);
                chunk.commit_all();
                n
            }
            Err(_) => 0,
        }
    }

    /// True when the producing thread has exited and the ring is empty.
    pub(crate) fn is_finished(&self) -> bool {
        self.consumer.is_abandoned() && self.consumer.is_empty()
    }

    /// The ring's capacity in bytes.
    pub(crate) fn capacity(&self) -> usize {
        self.consumer.buffer().capacity()
    }
}
