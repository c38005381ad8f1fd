//! The HTTP endpoints' own runtime, at a lower CPU priority than collection.
//!
//! Readers of the query API do work in proportion to the rows they read: a
//! live tail turns every new row into an event, an export or a tile
//! catch-up reads every row once more. On a small machine that work runs on
//! the cores that decode and store incoming rows, and a few browsers could
//! slow ingestion. So the HTTP endpoints (query API, `/metrics`, control)
//! run on a runtime of their own whose threads — workers and the blocking
//! pool that runs the SQL reads and tile upkeep — are niced
//! ([`ServerConfig::http_nice`], 19 by default: the lowest priority, as
//! collection comes first; at 19 they also run under `SCHED_IDLE`, which
//! hands a core back the moment a collection thread wakes instead of at
//! the end of the reader's time slice): while collection needs the
//! cores it gets them and readers fall behind (a tail that falls too far
//! behind is told where to resume); when the cores are idle, readers get
//! them all. Nothing is shared under a lock between the two sides: readers
//! use their own database connections (SQLite WAL, PostgreSQL sessions), so
//! a low-priority reader never holds up a writer.
//!
//! [`ServerConfig::http_nice`]: crate::ServerConfig::http_nice

use std::io;

use tokio::net::TcpListener;
use tokio::runtime::Runtime;

use crate::shutdown::Shutdown;
use crate::trim::IdleCollect;

/// Highest nice value Linux accepts.
pub const MAX_NICE: i32 = 19;

/// Threads of a runtime's blocking pool (SQL reads, tail rounds, tile
/// upkeep), instead of tokio's 512. Hundreds of tails opened at once made
/// as many threads, each with its stack, allocator heap and database
/// cache mapped and unmapped again: work, and memory-map changes that
/// collection threads wait for, done at the lowest priority. Past this
/// many, reads queue for a thread.
pub const MAX_BLOCKING_THREADS: usize = 16;

/// A runtime for the HTTP endpoints; shut down in the background when
/// dropped, so dropping it inside another runtime is fine.
#[derive(Debug)]
pub struct HttpRuntime(Option<Runtime>);

impl HttpRuntime {
    /// Starts the runtime; every thread it starts sets its nice value to
    /// `nice` (0: the same priority as collection).
    pub fn new(nice: i32) -> io::Result<HttpRuntime> {
        HttpRuntime::named("sg-http", nice)
    }

    /// A runtime like [`HttpRuntime::new`]'s, its threads named `name`.
    /// The server also accepts OMSP connections and reads their headers on
    /// one (`sg-accept`, [`crate::socket`]): a flood of connections that
    /// never finish a header then takes the cores only when collection
    /// leaves them idle.
    pub fn named(name: &'static str, nice: i32) -> io::Result<HttpRuntime> {
        let nice = nice.clamp(0, MAX_NICE);
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder
            .thread_name(name)
            .max_blocking_threads(MAX_BLOCKING_THREADS)
            .on_thread_start(move || set_thread_nice(nice))
            .enable_all();
        // An HTTP thread that goes idle after a burst (tails, slow
        // clients) hands back what it freed (see `trim`).
        let idle = IdleCollect::install(&mut builder);
        let rt = builder.build()?;
        idle.start(&rt);
        Ok(HttpRuntime(Some(rt)))
    }

    /// The runtime's handle, to spawn on it.
    pub fn handle(&self) -> &tokio::runtime::Handle {
        self.0
            .as_ref()
            .expect("runtime present until dropped")
            .handle()
    }

    /// Serves `app` on `listener` (bound in the caller's runtime) within
    /// `budget` (each listener its own) until shutdown is requested.
    pub fn serve(
        &self,
        listener: TcpListener,
        app: axum::Router,
        budget: httpkit::Budget,
        mut stop: Shutdown,
    ) -> io::Result<()> {
        let rt = self.0.as_ref().expect("runtime present until dropped");
        // A tokio listener belongs to the runtime that created it: hand the
        // socket over as a std listener (it stays non-blocking).
        let std = listener.into_std()?;
        rt.spawn(async move {
            let listener = match TcpListener::from_std(std) {
                Ok(l) => l,
                Err(e) => {
                    tracing::error!(error = %e, "HTTP listener failed");
                    return;
                }
            };
            let until = async move { stop.requested().await };
            if let Err(e) = httpkit::serve_with(listener, app, budget, until).await {
                tracing::error!(error = %e, "HTTP listener failed");
            }
        });
        Ok(())
    }
}

impl Drop for HttpRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// Sets the calling thread's nice value (Linux keeps one per thread); 0
/// leaves it alone. Benchmarks use it too, for threads that stand for
/// clients on other machines.
pub fn set_thread_nice(nice: i32) {
    if nice == 0 {
        return;
    }
    // SAFETY: gettid and setpriority take plain integers and touch no
    // memory of ours; raising one's own nice value needs no privilege.
    #[allow(unsafe_code)]
    let rc = unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice)
    };
    if rc != 0 {
        tracing::warn!(nice, error = %io::Error::last_os_error(), "could not lower the HTTP threads' priority");
    }
    if nice >= MAX_NICE {
        // The lowest nice value still lets a reader keep a core for its
        // time slice after collection wakes up; SCHED_IDLE gives the core
        // back at once, which is what a pipeline of wake-ups (a writer
        // waiting on its database) needs.
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: param is a valid sched_param; pid 0 is the calling thread.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
        if rc != 0 {
            tracing::warn!(error = %io::Error::last_os_error(), "could not give the HTTP threads idle priority");
        }
    }
}

/// The calling thread's nice value (for tests).
pub fn current_nice() -> i32 {
    // SAFETY: as above; getpriority only reads.
    #[allow(unsafe_code)]
    unsafe {
        libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t)
    }
}
