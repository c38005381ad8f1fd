//! Giving memory back to the system after load.
//!
//! What a burst of connections, tails or large headers made the server
//! allocate is freed when they end, but both allocators in the process keep
//! freed memory mapped until something asks them to return it:
//!
//! - mimalloc (the `streamgauge` binary's global allocator) returns freed
//!   pages after a delay, but only when some thread allocates again: after
//!   the load, with every thread idle, nothing is returned;
//! - glibc's allocator, which SQLite uses, keeps freed memory in its arenas.
//!
//! So one thread asks both, every [`PERIOD`]. Measured by `bench-hostile`
//! (docs/benchmarks.md): 10 000 connections closed, resident memory back
//! within about a second instead of never.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

// Links mimalloc's C library (whose `mi_collect` is called below) in every
// build of the server, whichever global allocator the binary chose.
use libmimalloc_sys as _;

/// How often freed memory is handed back.
pub const PERIOD: Duration = Duration::from_secs(5);

#[allow(unsafe_code)]
extern "C" {
    /// mimalloc: collects the calling thread's heap and purges the freed
    /// pages of every arena (`force`: now, rather than after the delay).
    fn mi_collect(force: bool);
}

/// Starts the thread that hands freed memory back every [`PERIOD`] (once
/// per process, however many servers it runs); it runs until the process
/// ends.
pub fn start() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(spawn);
}

fn spawn() {
    let spawned = std::thread::Builder::new()
        .name("memory-trim".into())
        .spawn(|| loop {
            std::thread::sleep(PERIOD);
            trim();
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start the memory trimming thread; freed memory is returned only under load");
    }
}

/// Bytes a connection must have received for its end to collect the
/// thread it ran on ([`collect_this_thread`]).
pub const LARGE_CONNECTION: u64 = 1 << 20;

/// Hands the pages freed on the calling thread back to the allocator's
/// arenas, which the trimming thread then purges. mimalloc collects a
/// thread's pages only when that thread allocates again, so what a large
/// connection freed on a network thread that then goes idle would stay.
pub fn collect_this_thread() {
    // SAFETY: takes no pointers; may be called from any thread.
    #[allow(unsafe_code)]
    unsafe {
        mi_collect(false);
    }
}

/// Least time between two collections of one runtime thread as it parks
/// ([`IdleCollect`]), so a thread that parks and wakes thousands of times
/// a second pays for a few collections a second.
///
/// A thread collects only its own heap, and a runtime thread that has
/// gone idle parks until new work comes, which after a burst may be never:
/// whatever it had not collected by its last park stays. Measured with
/// `bench-hostile --only tails` (debug build, then `mi_collect(true)`
/// called in each thread of the server with gdb): with one collection
/// per 5 s and no wake-up after work, the two HTTP workers' heaps still
/// held 23 MiB 30 s after 10 000 tails had closed (docs/benchmarks.md).
pub const IDLE_GAP: Duration = Duration::from_millis(100);

/// Collection as a runtime's threads go idle: [`IdleCollect::install`] on
/// its builder, [`IdleCollect::start`] on the runtime built.
///
/// Each thread collects as it parks (at most every [`IDLE_GAP`]); a park
/// that skipped its collection marks the runtime, and a [`PERIOD`] later
/// every worker is woken once, so each parks again and collects. A worker
/// parked after a burst otherwise keeps, until new work comes, what was
/// freed into its pages after its last collection: by itself within
/// [`IDLE_GAP`], by other threads any time since.
pub struct IdleCollect(Arc<AtomicBool>);

impl IdleCollect {
    /// Sets `builder`'s park hook.
    pub fn install(builder: &mut tokio::runtime::Builder) -> IdleCollect {
        let owed = Arc::new(AtomicBool::new(false));
        let parked = Arc::clone(&owed);
        builder.on_thread_park(move || {
            if !collect_if_due() {
                parked.store(true, Ordering::Relaxed);
            }
        });
        IdleCollect(owed)
    }

    /// Starts the task that wakes `rt`'s workers after work.
    pub fn start(self, rt: &tokio::runtime::Runtime) {
        let workers = rt.metrics().num_workers();
        rt.spawn(wake_after_work(self.0, workers));
    }
}

async fn wake_after_work(owed: Arc<AtomicBool>, workers: usize) {
    loop {
        tokio::time::sleep(PERIOD).await;
        if owed.swap(false, Ordering::Relaxed) {
            for _ in 0..workers {
                // Each holds its worker a moment, so the next one is
                // taken by another: every worker wakes.
                tokio::spawn(async { std::thread::sleep(Duration::from_millis(1)) });
            }
        }
    }
}

/// Collects the calling thread's heap unless it did within [`IDLE_GAP`]
/// (its pages, those other threads freed blocks of too: most of a
/// connection's or a tail's memory is freed by whichever worker ends it);
/// whether it did.
fn collect_if_due() -> bool {
    use std::cell::Cell;
    use std::time::Instant;
    thread_local! {
        static LAST: Cell<Option<Instant>> = const { Cell::new(None) };
    }
    let now = Instant::now();
    let due = LAST.with(|last| {
        let due = last.get().is_none_or(|t| now.duration_since(t) >= IDLE_GAP);
        if due {
            last.set(Some(now));
        }
        due
    });
    if due {
        // SAFETY: takes no pointers; may be called from any thread.
        // `force` visits the full pages too (a page all of whose blocks
        // were handed out stays among the full ones until its owner looks,
        // however many of them other threads freed since).
        #[allow(unsafe_code)]
        unsafe {
            mi_collect(true);
        }
    }
    due
}

/// Hands freed memory back to the system once.
pub fn trim() {
    // mimalloc collects only for a thread whose heap it has set up, which
    // it does at the thread's first allocation.
    drop(std::hint::black_box(Box::new(0u64)));
    // SAFETY: both take no pointers and may be called from any thread at
    // any time.
    #[allow(unsafe_code)]
    unsafe {
        mi_collect(true);
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        libc::malloc_trim(0);
    }
}
