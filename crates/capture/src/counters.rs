//! Per-session counters, snapshotted every counter interval.

use serde::{Deserialize, Serialize};

/// Cumulative counters of one session since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Packets offered to the session (every packet read on its interface).
    pub seen: u64,
    /// Packets that passed the filter.
    pub matched: u64,
    /// Matched packets dropped by sampling.
    pub sampled_out: u64,
    /// Packets kept after sampling and handed to the outputs.
    pub stored: u64,
    /// Wire bytes of the stored packets.
    pub bytes: u64,
    /// Bytes written into packet files (records and file headers).
    pub written: u64,
    /// Stored packets an output could not keep (quota `stop`, write errors).
    pub dropped_by_us: u64,
    /// Drops reported by the kernel for the shared packet source (filled by the source).
    pub kernel_drops: u64,
    /// Flow records exported as IPFIX.
    pub flows_exported: u64,
}
