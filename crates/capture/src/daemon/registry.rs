//! The sessions the daemon knows, their owners, states, counters and logs.
//!
//! The registry is what the control API reads; the packet source threads
//! write counters and state changes into it. It never holds a live
//! [`crate::Session`]: those belong to the source threads.

use super::persist::Store;
use crate::config::SessionConfig;
use crate::counters::Counters;
use crate::linktype::LinkType;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::time::SystemTime;
use utoipa::ToSchema;

/// Log lines kept per session.
const LOG_LINES: usize = 200;

/// Life cycle of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Accepted, not capturing yet (`start` begins).
    Created,
    /// Receiving packets.
    Running,
    /// Kept, but not receiving packets (files stay open).
    Paused,
    /// Stopped: files closed with their metadata, final counters kept.
    Stopped,
    /// Ended by an error (see `reason`); files were closed.
    Failed,
}

/// One session as the daemon tracks it.
#[derive(Debug, Clone)]
pub struct Record {
    /// The experiment (domain) the session belongs to: it decides who may
    /// see and control it, and where its counters are stored.
    pub experiment: String,
    /// The validated request.
    pub config: SessionConfig,
    /// Current state.
    pub state: State,
    /// Why it failed (or another note on its last transition).
    pub reason: Option<String>,
    /// Latest counters.
    pub counters: Counters,
    /// Link type of its source: set when it starts (the source is opened
    /// first), kept after it ends.
    pub link: Option<LinkType>,
    /// When it was created.
    pub created: SystemTime,
    /// Recent log lines, oldest first.
    pub log: VecDeque<String>,
    /// Archive targets its closed files go to (kept with the session so a
    /// restarted daemon archives its files the same way).
    pub archive: Vec<String>,
}

impl Record {
    /// A new record in state `created`.
    pub fn new(experiment: String, config: SessionConfig) -> Record {
        let mut r = Record {
            experiment,
            config,
            state: State::Created,
            reason: None,
            counters: Counters::default(),
            link: None,
            created: SystemTime::now(),
            log: VecDeque::new(),
            archive: Vec::new(),
        };
        r.log("created");
        r
    }

    /// Appends a log line (timestamped, bounded).
    pub fn log(&mut self, line: impl AsRef<str>) {
        if self.log.len() == LOG_LINES {
            self.log.pop_front();
        }
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        self.log.push_back(format!(
            "{}.{:03} {}",
            now.as_secs(),
            now.subsec_millis(),
            line.as_ref()
        ));
    }

    /// Moves to `state`, logging the transition and its reason.
    pub fn set_state(&mut self, state: State, reason: Option<String>) {
        let name = |s: State| format!("{s:?}").to_lowercase();
        let mut line = format!("state {} -> {}", name(self.state), name(state));
        if let Some(r) = &reason {
            line.push_str(": ");
            line.push_str(r);
        }
        self.log(line);
        self.state = state;
        if reason.is_some() {
            self.reason = reason;
        }
    }
}

/// All sessions, by id (the session name, unique on the node).
#[derive(Debug, Default)]
pub struct Registry {
    /// Sessions by id.
    pub sessions: BTreeMap<String, Record>,
    /// Where records are kept across restarts (the daemon's data directory).
    pub store: Option<Store>,
}

impl Registry {
    /// Writes the record of `id` to the store (after a state change), or
    /// forgets it there when the session is gone. A failed write is logged
    /// in the session's log and the daemon's; the session goes on.
    pub fn save(&mut self, id: &str) {
        let Some(store) = &self.store else { return };
        let r = match self.sessions.get(id) {
            Some(r) => store.save(id, r),
            None => store.remove(id),
        };
        if let Err(e) = r {
            tracing::error!(session = %id, error = %e, "session state not saved: it may not survive a restart");
            if let Some(rec) = self.sessions.get_mut(id) {
                rec.log(format!("state not saved on disk: {e}"));
            }
        }
    }

    /// Updates counters of a session if it still exists.
    pub fn set_counters(&mut self, id: &str, c: Counters) {
        if let Some(r) = self.sessions.get_mut(id) {
            r.counters = c;
        }
    }
}
