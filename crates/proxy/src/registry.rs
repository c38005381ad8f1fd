//! The journals of one proxy: loading them at start, allocating new ones,
//! finding a resumable client's journal again, the disk quota, and the
//! periodic sync.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use omsp::session::claim::Slot;
use tokio::sync::watch;

use crate::config::{FsyncPolicy, QuotaPolicy};
use crate::journal::{Journal, JournalError, JournalOptions};
use omsp::session::SessionRequest;

/// Where the forwarder of a journal stands (for `/status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamState {
    /// Nothing to send.
    Idle,
    /// Forwarding is paused.
    Paused,
    /// Opening a connection.
    Connecting,
    /// Waiting for the resume line.
    Resuming,
    /// Sending, with acknowledgements (spec §3.6).
    Streaming,
    /// Sending to an upstream that does not speak §3.6.
    Plain,
    /// Waiting before the next attempt, after this error.
    Backoff(String),
    /// Everything delivered; kept for the client's resume window.
    Delivered,
}

impl UpstreamState {
    /// Name used in the status.
    pub fn name(&self) -> &str {
        match self {
            UpstreamState::Idle => "idle",
            UpstreamState::Paused => "paused",
            UpstreamState::Connecting => "connecting",
            UpstreamState::Resuming => "resuming",
            UpstreamState::Streaming => "streaming",
            UpstreamState::Plain => "plain",
            UpstreamState::Backoff(_) => "backoff",
            UpstreamState::Delivered => "delivered",
        }
    }
}

/// One journal and the tasks' view of it.
#[derive(Debug)]
pub struct Entry {
    /// Journal number.
    pub id: u64,
    /// Upstream session id of epoch 0: `<proxy-id>-<journal number>`.
    pub session: String,
    /// Domain of the client's header (to match a resuming client).
    pub domain: Option<String>,
    /// The journal.
    journal: Mutex<Journal>,
    /// Bumped on every change (append, sync, ack, close, epoch), so the
    /// forwarder and the client's ack task wake up.
    pub changed: watch::Sender<u64>,
    /// Held by the client connection that feeds the journal.
    slot: Slot,
    /// The connected client, if any.
    pub client: Mutex<Option<SocketAddr>>,
    /// The forwarder's state.
    pub upstream: Mutex<UpstreamState>,
    /// Control messages from the upstream on their way to the client.
    controls: Mutex<Relay>,
}

/// Control lines relayed to the client (spec §3.7). While no client
/// connection is attached, the latest [`HELD_CONTROLS`] wait for the next
/// one; older ones are dropped with a log line (a newer message about the
/// same stream supersedes them anyway).
#[derive(Debug, Default)]
struct Relay {
    /// The connected client's back-channel writer.
    to_client: Option<tokio::sync::mpsc::UnboundedSender<String>>,
    /// Lines waiting for a client.
    held: std::collections::VecDeque<String>,
}

/// Control lines kept for a client that is not connected.
pub const HELD_CONTROLS: usize = 64;

/// Proof that a client connection feeds a journal.
pub use omsp::session::claim::Claim;

impl Entry {
    fn new(journal: Journal, proxy_id: &str) -> Entry {
        Entry {
            id: journal.id(),
            session: format!("{proxy_id}-{:08}", journal.id()),
            domain: journal.parsed().domain.clone(),
            journal: Mutex::new(journal),
            changed: watch::Sender::new(0),
            slot: Slot::default(),
            client: Mutex::new(None),
            upstream: Mutex::new(UpstreamState::Idle),
            controls: Mutex::new(Relay::default()),
        }
    }

    /// Passes a control line from the upstream to the client, or holds it
    /// until a client connection attaches.
    pub fn relay_control(&self, line: String) {
        let mut r = self.controls.lock().unwrap_or_else(|p| p.into_inner());
        let line = match &r.to_client {
            Some(tx) => match tx.send(line) {
                Ok(()) => return,
                Err(e) => {
                    r.to_client = None;
                    e.0
                }
            },
            None => line,
        };
        if r.held.len() == HELD_CONTROLS {
            if let Some(old) = r.held.pop_front() {
                tracing::warn!(journal = self.id, line = %old.trim_end(),
                    "client not connected: oldest held control message dropped");
            }
        }
        r.held.push_back(line);
    }

    /// Attaches a client connection's back-channel: held lines first.
    pub fn attach_controls(&self, tx: tokio::sync::mpsc::UnboundedSender<String>) {
        let mut r = self.controls.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(line) = r.held.pop_front() {
            if let Err(e) = tx.send(line) {
                r.held.push_front(e.0);
                return;
            }
        }
        r.to_client = Some(tx);
    }

    /// The journal (never held across an await).
    pub fn lock(&self) -> MutexGuard<'_, Journal> {
        self.journal.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes the forwarder and the ack task.
    pub fn bump(&self) {
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// The upstream session id of `epoch`.
    pub fn session_id(&self, epoch: u32) -> String {
        match epoch {
            0 => self.session.clone(),
            e => format!("{}-e{e}", self.session),
        }
    }

    /// Sets the forwarder's state.
    pub fn set_upstream(&self, state: UpstreamState) {
        *self.upstream.lock().unwrap_or_else(|p| p.into_inner()) = state;
    }

    /// Claims the journal for a client connection, asking an older one to
    /// let go first.
    pub async fn claim(&self) -> Result<Claim, String> {
        self.slot.claim().await.map_err(|e| e.to_string())
    }

    /// Runs a sync of this journal, fsync outside the lock.
    pub async fn sync(&self) -> std::io::Result<()> {
        let Some(job) = self.lock().sync_job() else {
            return Ok(());
        };
        let job = tokio::task::spawn_blocking(move || job.run().map(|()| job))
            .await
            .map_err(std::io::Error::other)??;
        self.lock().complete_sync(job.end)?;
        self.bump();
        Ok(())
    }
}

/// All journals of a proxy.
#[derive(Debug)]
pub struct Registry {
    /// The journal directory.
    root: PathBuf,
    /// This proxy's name in upstream session ids.
    pub proxy_id: String,
    /// How journals write (and the shared usage counter).
    opts: JournalOptions,
    /// Most bytes all journals may hold.
    pub quota: u64,
    /// What happens at the quota.
    pub policy: QuotaPolicy,
    /// Live journals by number.
    entries: Mutex<BTreeMap<u64, Arc<Entry>>>,
    /// Next journal number (also stored in `<root>/next-id`).
    next_id: Mutex<u64>,
    /// Bumped whenever space is freed.
    freed: watch::Sender<u64>,
    /// Bytes dropped by drop-oldest during this run.
    pub dropped: AtomicU64,
    /// Set while clients are held back by the quota (to log once).
    refusing: AtomicBool,
}

/// Why the journal directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// A file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The directory belongs to another proxy id.
    #[error("journal directory {path} was written by proxy id {found:?}, not {wanted:?}: its streams are known upstream under the old id; pass --proxy-id {found} or use another --journal directory")]
    OtherProxy {
        /// The directory.
        path: PathBuf,
        /// The id stored in it.
        found: String,
        /// The id asked for.
        wanted: String,
    },
    /// A journal could not be loaded.
    #[error(transparent)]
    Journal(#[from] JournalError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RegistryError + '_ {
    move |source| RegistryError::Io {
        path: path.to_owned(),
        source,
    }
}

/// A fresh proxy id: `p` and 16 hex digits from the operating system's
/// random generator (two proxies cloned from one image still differ).
fn generate_id() -> std::io::Result<String> {
    let random = getrandom::u64()
        .map_err(|e| std::io::Error::other(format!("no random proxy id from the OS: {e}")))?;
    Ok(format!("p{random:016x}"))
}

impl Registry {
    /// Opens (or creates) the journal directory and loads every journal in it.
    pub fn open(
        root: &Path,
        proxy_id: Option<&str>,
        fsync: FsyncPolicy,
        segment_size: u64,
        quota: u64,
        policy: QuotaPolicy,
    ) -> Result<Registry, RegistryError> {
        std::fs::create_dir_all(root).map_err(io(root))?;
        let id_file = root.join("proxy-id");
        let stored = match std::fs::read_to_string(&id_file) {
            Ok(s) => Some(s.trim().to_owned()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io(&id_file)(e)),
        };
        let mut dirs = Vec::new();
        let mut max_id = 0;
        for entry in std::fs::read_dir(root).map_err(io(root))? {
            let entry = entry.map_err(io(root))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("tmp-") {
                // A journal whose creation did not finish: it holds no data.
                let _ = std::fs::remove_dir_all(entry.path());
            } else if let Ok(n) = name.parse::<u64>() {
                max_id = max_id.max(n);
                dirs.push(entry.path());
            }
        }
        let proxy_id = match (proxy_id, stored) {
            (Some(want), Some(found)) if want != found && !dirs.is_empty() => {
                return Err(RegistryError::OtherProxy {
                    path: root.to_owned(),
                    found,
                    wanted: want.to_owned(),
                })
            }
            (Some(want), _) => want.to_owned(),
            (None, Some(found)) => found,
            (None, None) => generate_id().map_err(io(&id_file))?,
        };
        std::fs::write(&id_file, format!("{proxy_id}\n")).map_err(io(&id_file))?;
        let next_file = root.join("next-id");
        let stored_next = std::fs::read_to_string(&next_file)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(1);
        let opts = JournalOptions {
            fsync,
            segment_size,
            usage: Arc::new(AtomicU64::new(0)),
        };
        let mut entries = BTreeMap::new();
        dirs.sort();
        for dir in dirs {
            let mut journal = Journal::open(&dir, opts.clone())?;
            if journal.client_session().is_none() && !journal.closed() {
                // A stock client's connection ended with the previous
                // process; it cannot come back to this stream.
                journal.close().map_err(io(&dir))?;
            }
            tracing::info!(
                journal = journal.id(),
                bytes = journal.end() - journal.acked(),
                closed = journal.closed(),
                "journal loaded"
            );
            entries.insert(journal.id(), Arc::new(Entry::new(journal, &proxy_id)));
        }
        Ok(Registry {
            root: root.to_owned(),
            proxy_id,
            opts,
            quota,
            policy,
            entries: Mutex::new(entries),
            next_id: Mutex::new(stored_next.max(max_id + 1)),
            freed: watch::Sender::new(0),
            dropped: AtomicU64::new(0),
            refusing: AtomicBool::new(false),
        })
    }

    fn entries(&self) -> MutexGuard<'_, BTreeMap<u64, Arc<Entry>>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every live journal.
    pub fn all(&self) -> Vec<Arc<Entry>> {
        self.entries().values().cloned().collect()
    }

    /// Bytes all journals hold.
    pub fn usage(&self) -> u64 {
        self.opts.usage.load(Ordering::Relaxed)
    }

    /// The fsync policy.
    pub fn fsync(&self) -> FsyncPolicy {
        self.opts.fsync
    }

    /// A new journal for a client header.
    pub fn create(
        &self,
        header: &[u8],
        client_session: Option<&str>,
    ) -> Result<Arc<Entry>, String> {
        let id = {
            let mut next = self.next_id.lock().unwrap_or_else(|p| p.into_inner());
            let id = *next;
            *next += 1;
            // Stored before use: a journal number, hence an upstream
            // session id, is never used twice, even across restarts.
            let p = self.root.join("next-id");
            let tmp = self.root.join("next-id.tmp");
            std::fs::write(&tmp, format!("{}\n", *next))
                .and_then(|()| {
                    if self.opts.fsync != FsyncPolicy::Never {
                        std::fs::File::open(&tmp)?.sync_data()?;
                    }
                    std::fs::rename(&tmp, &p)
                })
                .map_err(|e| format!("{}: {e}", p.display()))?;
            id
        };
        let journal = Journal::create(&self.root, id, header, client_session, self.opts.clone())
            .map_err(|e| e.to_string())?;
        let entry = Arc::new(Entry::new(journal, &self.proxy_id));
        self.entries().insert(id, Arc::clone(&entry));
        Ok(entry)
    }

    /// The journal of a resumable client session, reopened if the client
    /// had closed it; `None` if this proxy does not know the session.
    pub fn find(&self, domain: Option<&str>, request: &SessionRequest) -> Option<Arc<Entry>> {
        let entries = self.entries();
        let entry = entries
            .values()
            .find(|e| {
                e.domain.as_deref() == domain
                    && e.lock().client_session() == Some(request.id.as_str())
            })?
            .clone();
        let mut j = entry.lock();
        if j.closed() {
            if let Err(e) = j.reopen() {
                tracing::warn!(journal = entry.id, error = %e, "cannot reopen journal");
                return None;
            }
        }
        drop(j);
        Some(entry)
    }

    /// Deletes a journal whose data has all been delivered, unless its
    /// client came back in the meantime. Returns whether it was deleted.
    pub fn complete(&self, entry: &Entry) -> bool {
        let mut entries = self.entries();
        {
            let j = entry.lock();
            if !j.closed() || j.acked() < j.end() {
                return false;
            }
        }
        let Some(e) = entries.remove(&entry.id) else {
            return false;
        };
        drop(entries);
        // Out of the map: no client can attach to it any more.
        if let Err(err) = e.lock().delete() {
            tracing::warn!(journal = e.id, error = %err, "cannot delete delivered journal");
        }
        self.space_freed();
        true
    }

    /// Wakes clients held back by the quota.
    pub fn space_freed(&self) {
        self.freed.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Waits until `bytes` more fit in the quota, applying the policy. A
    /// read larger than the room left is let in while the journals are
    /// below the quota, so the quota may be exceeded by at most one read
    /// per client.
    pub async fn reserve(&self, bytes: u64) {
        let mut freed = self.freed.subscribe();
        loop {
            freed.borrow_and_update();
            let used = self.usage();
            if used + bytes <= self.quota {
                if self.refusing.swap(false, Ordering::Relaxed) {
                    tracing::info!(
                        used,
                        quota = self.quota,
                        "journal space available again: reading from clients"
                    );
                }
                return;
            }
            if self.policy == QuotaPolicy::DropOldest && self.drop_oldest() {
                continue;
            }
            if used < self.quota {
                return;
            }
            if !self.refusing.swap(true, Ordering::Relaxed) {
                tracing::warn!(used, quota = self.quota, policy = %self.policy,
                    "journal quota reached: not reading from clients until forwarding frees space");
            }
            let _ = tokio::time::timeout(Duration::from_millis(500), freed.changed()).await;
        }
    }

    /// Drops the oldest droppable segment of all journals (oldest journal
    /// first). Returns false when none can be dropped.
    fn drop_oldest(&self) -> bool {
        for entry in self.all() {
            let r = entry.lock().drop_oldest();
            match r {
                Ok(Some(lost)) => {
                    self.dropped.fetch_add(lost, Ordering::Relaxed);
                    tracing::warn!(journal = entry.id, lost_bytes = lost,
                        total_lost = self.dropped.load(Ordering::Relaxed),
                        "journal quota reached: dropped the oldest unacknowledged segment (policy drop-oldest)");
                    entry.bump();
                    return true;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(journal = entry.id, error = %e, "cannot drop segment"),
            }
        }
        false
    }

    /// Syncs every journal with pending writes (the `interval` ticker).
    pub async fn sync_all(&self) {
        for entry in self.all() {
            if let Err(e) = entry.sync().await {
                tracing::error!(journal = entry.id, error = %e, "journal sync failed");
            }
        }
    }
}
