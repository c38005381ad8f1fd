//! One reader per followed request, however many clients follow it.
//!
//! Ten browsers tailing the same stream with the same fields would
//! otherwise read every new row ten times and turn it into JSON ten times,
//! on the cores that also store the rows. A [`Hub`] keeps one shared
//! reader ([`Shared`]) per (domain, stream, request): it reads each new
//! batch once, renders it once as SSE text, and broadcasts that text to
//! every subscriber. A subscriber that cannot keep up loses nothing: it notices
//! the broadcast lag and falls back to reading on its own connection from
//! where it is (see [`super::run`]), which is also how it catches up after
//! joining.
//!
//! Joining is gapless because a subscriber subscribes *before* it catches
//! up: every batch broadcast before that holds rows up to the reader's
//! position at that moment, which the subscriber's own reads cover; every
//! later batch it receives. Rows it gets twice it skips by id. Its own
//! reads stop at that position, not at the end of the table: while
//! ingestion runs faster than one reader, a subscriber that chased the end
//! would never join, and ten of them would read every row ten times.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::{broadcast, Notify};

use super::frames::Frames;
use super::{round, Tail};
use crate::state::QueryState;

/// Batches a subscriber may fall behind before it reads on its own.
const CAPACITY: usize = 64;

/// Rows read together and rendered once as events.
pub type Batch = Arc<Frames>;

/// The shared readers, by request.
#[derive(Default)]
pub struct Hub {
    /// Live readers; an entry whose reader ended no longer upgrades.
    readers: Mutex<HashMap<String, Weak<Shared>>>,
}

/// One shared reader's output: every batch read, in order.
pub struct Shared {
    tx: broadcast::Sender<Batch>,
    /// Id of the last row the reader has read (set before its batch is
    /// broadcast).
    pos: AtomicI64,
    /// Woken when a subscriber leaves, so a reader nobody follows any
    /// more ends at once rather than at its next commit (it holds a
    /// connection and, while reading, a thread).
    left: Arc<Notify>,
}

/// Batches sent from the moment of subscribing on, and the reader's
/// position then: every row after it arrives in those batches.
pub type Subscription = (Follower, i64);

/// A subscriber's end of a shared reader.
pub struct Follower {
    /// The batches. Declared before `_left`: fields drop in order, so the
    /// reader, once woken, no longer counts this receiver.
    rx: broadcast::Receiver<Batch>,
    /// Tells the reader this subscriber left.
    _left: Leaving,
}

/// Wakes the reader when dropped.
struct Leaving(Arc<Notify>);

impl Drop for Leaving {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

impl Follower {
    /// The next batch (see [`broadcast::Receiver::recv`]).
    pub async fn recv(&mut self) -> Result<Batch, broadcast::error::RecvError> {
        self.rx.recv().await
    }
}

impl Hub {
    /// Subscribes to the reader of `key`, if one runs.
    pub fn subscribe(&self, key: &str) -> Option<Subscription> {
        let shared = lock(&self.readers).get(key)?.upgrade()?;
        Some(shared.subscribe())
    }

    /// Starts the reader of `key` on `tail` (a connection of its own,
    /// positioned at the end of the stream) and subscribes to it. If
    /// another subscriber started one meanwhile, that one is used and
    /// `tail` is dropped.
    pub fn start(
        &self,
        key: String,
        state: QueryState,
        domain: String,
        tail: Tail,
    ) -> Subscription {
        let mut readers = lock(&self.readers);
        if let Some(shared) = readers.get(&key).and_then(Weak::upgrade) {
            return shared.subscribe();
        }
        let shared = Arc::new(Shared {
            tx: broadcast::channel(CAPACITY).0,
            pos: AtomicI64::new(tail.last),
            left: Arc::default(),
        });
        readers.retain(|_, w| w.strong_count() > 0);
        readers.insert(key, Arc::downgrade(&shared));
        let sub = shared.subscribe();
        tokio::spawn(read(state, domain, tail, shared));
        sub
    }
}

impl Shared {
    fn subscribe(&self) -> Subscription {
        // Subscribe first: a batch whose position is not seen below is
        // then received.
        let rx = self.tx.subscribe();
        let follower = Follower {
            rx,
            _left: Leaving(Arc::clone(&self.left)),
        };
        (follower, self.pos.load(Ordering::SeqCst))
    }
}

/// The shared reader: reads new rows whenever the domain commits (and, on
/// PostgreSQL, at least every [`super::OTHER_WRITERS`] while idle, for
/// the commits of other servers), until
/// nobody follows any more (noticed as the last subscriber leaves, even
/// with no commit to wake it), or on a database error (the subscribers
/// then read on their own and report it).
async fn read(state: QueryState, domain: String, mut t: Tail, shared: Arc<Shared>) {
    let mut feed = state.feed.as_ref().map(|f| f.subscribe(&domain));
    let others = t.others();
    loop {
        let began = std::time::Instant::now();
        let r = tokio::task::spawn_blocking(move || {
            let r = round(&mut t);
            (t, r)
        })
        .await;
        let Ok((back, Ok(super::Round { rows, full, .. }))) = r else {
            return;
        };
        t = back;
        tracing::debug!(last = t.last, new = !rows.is_empty(), full, took = ?began.elapsed(), "shared tail reader round");
        shared.pos.store(t.last, Ordering::SeqCst);
        if !rows.is_empty() && shared.tx.send(Arc::new(rows)).is_err() {
            return; // Nobody follows.
        }
        if shared.tx.receiver_count() == 0 {
            return;
        }
        if full {
            continue;
        }
        let unfollowed = async {
            while shared.tx.receiver_count() > 0 {
                shared.left.notified().await;
            }
        };
        let began = std::time::Instant::now();
        tokio::select! {
            () = super::wait(&state, &mut feed, others) => {}
            () = unfollowed => return, // The last subscriber left.
        }
        tracing::debug!(waited = ?began.elapsed(), "shared tail reader woke");
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
