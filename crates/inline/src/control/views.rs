//! The JSON shapes of the control API, shared by the handlers and the
//! generated OpenAPI document (so the two cannot drift).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// One settings key.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct KeyView {
    /// The key (`sample`, `dst`, …), as `--set KEY=VALUE` takes it.
    pub key: String,
    /// What it means and which values it takes.
    pub help: String,
    /// Whether this agent's program reads it (the sink ignores the
    /// five-tuple filter, sampling and flow keys).
    pub used: bool,
}

/// What the agent is and what may be asked of it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Capabilities {
    /// Always `inline`: tells the agent from other devices.
    pub agent: String,
    /// The roles this process runs (`source` or `sink`).
    pub roles: Vec<String>,
    /// The interface its program is attached to.
    pub interface: String,
    /// The network namespace of the interface, if not the agent's own.
    pub netns: Option<String>,
    /// Every settings key, with whether the program reads it.
    pub keys: Vec<KeyView>,
    /// Values of `mode`.
    pub modes: Vec<String>,
    /// Names of the counters `status` reports for this role.
    pub counters: Vec<String>,
    /// Experiment domain of its measurement streams (null without `--collect`).
    pub domain: Option<String>,
    /// Streams it sends (names as the collection server lists them).
    pub streams: Vec<String>,
}

/// The agent's own bookkeeping, next to the program's counters.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct AgentCountersView {
    /// Records read from the sink's ring buffer.
    pub records_read: u64,
    /// Rows the client library refused (they are lost).
    pub inject_errors: u64,
}

/// State, settings and counters.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Status {
    /// `source` or `sink`.
    pub role: String,
    /// The interface.
    pub interface: String,
    /// Its network namespace, if not the agent's own.
    pub netns: Option<String>,
    /// Kernel id of the attached program.
    pub prog_id: u32,
    /// `running`, or `paused` (`enabled=false`: packets pass untouched).
    pub state: String,
    /// Seconds since the control endpoint started.
    pub uptime_s: f64,
    /// Current settings, text forms by key.
    #[schema(value_type = Object)]
    pub settings: serde_json::Map<String, serde_json::Value>,
    /// The program's counters for this role (`instrumented`,
    /// `skipped_sampling`, … or `records`, `ring_drops`, …).
    pub counters: BTreeMap<String, u64>,
    /// The agent's own counters.
    pub agent: AgentCountersView,
}
