//! Closed files to the archive uploader: sessions created with archive
//! targets hand every closed packet or IPFIX file (and its `.json`/`.xml`
//! metadata) to a thread that enqueues them in the `archive` crate's
//! durable queue as `<experiment>/<session>/<file>`.
//!
//! Routes (session → experiment, targets) are kept apart from the registry
//! and never removed, so a file closed by `DELETE` (stop, then forget) is
//! still archived.

use crate::session::ClosedOutput;
use std::collections::HashMap;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Where one session's files go.
#[derive(Debug, Clone)]
pub struct Route {
    /// The session's experiment (first part of the remote name).
    pub experiment: String,
    /// Archive target names (from the daemon's `[archive.targets]`).
    pub targets: Vec<String>,
    /// Files enqueued so far.
    pub enqueued: u64,
}

/// The link from sessions to the uploader.
pub struct ArchiveLink {
    /// The uploader (owns its own background worker on the runtime).
    pub archiver: Arc<archive::Archiver>,
    /// Routes by session id.
    pub routes: Arc<Mutex<HashMap<String, Route>>>,
    /// Closed files from the sessions; taken (dropped) at shutdown.
    tx: Mutex<Option<Sender<ClosedOutput>>>,
    /// The enqueueing thread.
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl ArchiveLink {
    /// Starts the enqueueing thread.
    pub fn new(archiver: archive::Archiver) -> ArchiveLink {
        let archiver = Arc::new(archiver);
        let routes: Arc<Mutex<HashMap<String, Route>>> = Arc::default();
        let (tx, rx) = mpsc::channel();
        let (a, r) = (Arc::clone(&archiver), Arc::clone(&routes));
        let thread = std::thread::Builder::new()
            .name("capture-archive".into())
            .spawn(move || forward(rx, &a, &r))
            .ok();
        ArchiveLink {
            archiver,
            routes,
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(thread),
        }
    }

    /// The sender a session with archive targets gets in its environment.
    pub fn sender(&self) -> Option<Sender<ClosedOutput>> {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Files enqueued for `session`.
    pub fn enqueued(&self, session: &str) -> u64 {
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(session)
            .map_or(0, |r| r.enqueued)
    }

    /// Enqueues files of `session` found on disk (crash recovery);
    /// returns how many were enqueued. Enqueueing a file the queue has
    /// already is harmless: the queue adds only targets it lacks, so
    /// nothing is uploaded twice.
    pub fn enqueue_found(&self, session: &str, paths: &[std::path::PathBuf]) -> u64 {
        let route = self
            .routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(session)
            .cloned();
        let Some(route) = route else { return 0 };
        let n = enqueue(&self.archiver, &route, session, paths.iter());
        if let Some(r) = self
            .routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(session)
        {
            r.enqueued += n;
        }
        n
    }

    /// Ends the thread once every session has let go of its sender (call
    /// after the source threads ended), then stops the uploader; the queue
    /// is durable, so files not yet uploaded go at the next start.
    pub async fn shutdown(&self) {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        let t = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = t {
            let _ = tokio::task::spawn_blocking(move || t.join()).await;
        }
    }
}

fn forward(
    rx: Receiver<ClosedOutput>,
    archiver: &archive::Archiver,
    routes: &Mutex<HashMap<String, Route>>,
) {
    while let Ok(c) = rx.recv() {
        let route = routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&c.session)
            .cloned();
        let Some(route) = route else { continue };
        let paths = std::iter::once(&c.file.path).chain(c.metadata.iter());
        let n = enqueue(archiver, &route, &c.session, paths);
        if let Some(r) = routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(&c.session)
        {
            r.enqueued += n;
        }
    }
}

/// Enqueues `paths` as `<experiment>/<session>/<file name>` to the route's targets.
fn enqueue<'a>(
    archiver: &archive::Archiver,
    route: &Route,
    session: &str,
    paths: impl Iterator<Item = &'a std::path::PathBuf>,
) -> u64 {
    let targets: Vec<&str> = route.targets.iter().map(String::as_str).collect();
    let mut n = 0;
    for path in paths {
        let Some(name) = path.file_name() else {
            continue;
        };
        let remote = format!(
            "{}/{}/{}",
            route.experiment,
            session,
            name.to_string_lossy()
        );
        match archiver.enqueue(path, &remote, &targets) {
            Ok(()) => n += 1,
            Err(e) => {
                tracing::warn!(session = %session, file = %path.display(), error = %e, "not archived")
            }
        }
    }
    n
}
