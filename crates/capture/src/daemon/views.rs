//! The JSON shapes of the control API, shared by the handlers and the
//! generated OpenAPI document (so the two cannot drift).

use super::registry::{Record, State};
use crate::counters::Counters;
use crate::linktype::LinkType;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Counters of a session (cumulative since it started).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CountersView {
    /// Packets offered to the session (every packet of its interface).
    pub seen: u64,
    /// Packets that passed the filter.
    pub matched: u64,
    /// Matched packets dropped by sampling.
    pub sampled_out: u64,
    /// Packets kept after sampling.
    pub stored: u64,
    /// Wire bytes of the stored packets.
    pub bytes: u64,
    /// Bytes written into packet files.
    pub written: u64,
    /// Stored packets an output could not keep (quota, write errors).
    pub dropped_by_us: u64,
    /// Drops of the interface's ring, shared by all its sessions.
    pub dropped_kernel: u64,
    /// Flow records exported as IPFIX.
    pub flows_exported: u64,
}

impl From<&Counters> for CountersView {
    fn from(c: &Counters) -> CountersView {
        CountersView {
            seen: c.seen,
            matched: c.matched,
            sampled_out: c.sampled_out,
            stored: c.stored,
            bytes: c.bytes,
            written: c.written,
            dropped_by_us: c.dropped_by_us,
            dropped_kernel: c.kernel_drops,
            flows_exported: c.flows_exported,
        }
    }
}

/// A link type: the framing of a source's packets, which decides how
/// filters compile and what the session's packet files hold
/// (docs/capture.md, *Link types*).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LinkTypeView {
    /// libpcap's name: `EN10MB`, `LINUX_SLL`, `LINUX_SLL2`, `RAW`, …
    pub name: String,
    /// The LINKTYPE_* number, as written in the session's pcap and pcapng files.
    pub number: u32,
}

impl From<LinkType> for LinkTypeView {
    fn from(l: LinkType) -> LinkTypeView {
        LinkTypeView {
            name: l.name().to_string(),
            number: l.number(),
        }
    }
}

/// A session as listed and fetched.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SessionView {
    /// Session id (its name, unique on the node).
    pub id: String,
    /// Experiment (domain) it belongs to.
    pub experiment: String,
    /// Interface it captures on (`any`: every interface of the node).
    pub interface: String,
    /// Link type of its source, known once the session started (the
    /// source opened); `null` before.
    pub link_type: Option<LinkTypeView>,
    /// Current state.
    pub state: String,
    /// Why it failed, or a note on its last transition.
    pub reason: Option<String>,
    /// Creation time, seconds since the epoch.
    pub created_unix_s: u64,
    /// Latest counters.
    pub counters: CountersView,
    /// Archive targets its closed files are uploaded to.
    pub archive_targets: Vec<String>,
    /// Files (packet files and metadata) handed to the archive uploader.
    pub archive_enqueued: u64,
    /// The session configuration as accepted (see docs/capture.md).
    #[schema(value_type = Object)]
    pub config: serde_json::Value,
}

/// Name of a state as the API writes it.
pub fn state_name(s: State) -> String {
    format!("{s:?}").to_lowercase()
}

impl From<(&str, &Record)> for SessionView {
    fn from((id, r): (&str, &Record)) -> SessionView {
        SessionView {
            id: id.to_string(),
            experiment: r.experiment.clone(),
            interface: r.config.interface.clone().unwrap_or_default(),
            link_type: r.link.map(Into::into),
            state: state_name(r.state),
            reason: r.reason.clone(),
            created_unix_s: r
                .created
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            counters: (&r.counters).into(),
            archive_targets: Vec::new(),
            archive_enqueued: 0,
            config: serde_json::to_value(&r.config).unwrap_or_default(),
        }
    }
}

/// State and counters of a session.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct StatusView {
    /// Session id.
    pub id: String,
    /// Current state: created, running, paused, stopped or failed.
    pub state: String,
    /// Why it failed, or a note on its last transition.
    pub reason: Option<String>,
    /// Link type of its source, once it started (as in [`SessionView`]).
    pub link_type: Option<LinkTypeView>,
    /// Latest counters.
    pub counters: CountersView,
}

impl From<(&str, &Record)> for StatusView {
    fn from((id, r): (&str, &Record)) -> StatusView {
        StatusView {
            id: id.to_string(),
            state: state_name(r.state),
            reason: r.reason.clone(),
            link_type: r.link.map(Into::into),
            counters: (&r.counters).into(),
        }
    }
}

/// Recent log lines of a session (`<unix seconds>.<ms> <text>`), oldest first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct LogView {
    /// Session id.
    pub id: String,
    /// The lines.
    pub lines: Vec<String>,
}

/// A file the session produced (packet files and their metadata).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct FileView {
    /// File name, for `GET /api/v1/sessions/{id}/files/{name}`.
    pub name: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Last modification, seconds since the epoch.
    pub modified_unix_s: u64,
}

/// The files of a session.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct FilesView {
    /// Session id.
    pub id: String,
    /// Files, by name.
    pub files: Vec<FileView>,
}

/// One tapped interface.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct InterfaceView {
    /// Interface name; `any` is every interface of the node (or of its
    /// `netns`) through one socket.
    pub name: String,
    /// Link type of its packets: `LINUX_SLL2` for `any`; for another
    /// interface once a session opened it, `null` before.
    pub link_type: Option<LinkTypeView>,
    /// Link speed in Mbit/s, when the driver reports one (sysfs, or ethtool
    /// in the capture namespace).
    pub speed_mbps: Option<u64>,
    /// `operstate` from sysfs (up, down, unknown…), or up/down from the
    /// link's flags in the capture namespace; absent if the link is not there.
    pub operstate: Option<String>,
}

/// What the node offers and allows.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Capabilities {
    /// Tapped interfaces.
    pub interfaces: Vec<InterfaceView>,
    /// Features sessions may use.
    pub features: Vec<String>,
    /// Most sessions kept at once.
    pub max_sessions: usize,
    /// Sessions currently kept.
    pub sessions: usize,
    /// The operator's policy.
    #[schema(value_type = Object)]
    pub policy: serde_json::Value,
    /// Names of the anonymisation keys sessions may use.
    pub keys: Vec<String>,
}

/// Query of `POST /api/v1/sessions`.
#[derive(Debug, Clone, Deserialize, IntoParams)]
pub struct CreateQuery {
    /// Experiment (domain) the session belongs to; default: the session name.
    pub experiment: Option<String>,
    /// Archive targets (comma-separated names from the daemon's configuration).
    pub archive: Option<String>,
}
