//! Exact accounting of every sample and tuple, for applications and tests.
//!
//! A sample accepted by `inject` is either dropped at inject (its thread's
//! queue was full and no destination blocks) or taken by the writer. Each
//! destination then counts, per measurement point, the tuples its streams
//! emitted, the tuples completely written, and the tuples dropped by its
//! overload policy or given up at close. Once the client is closed, for a
//! per-sample stream: `written + dropped (destination) + dropped at inject =
//! injected`.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use crate::mp::MpDef;
use crate::queue::dest::{Counters, SlotCounters, SLOT_CLOCK, SLOT_INSTR, SLOT_SCHEMA0};
pub use crate::queue::MemoryStats;

/// A snapshot of a client's counters ([`crate::Client::stats`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Stats {
    /// Samples accepted by `inject`, all measurement points.
    pub injected: u64,
    /// Of those, samples dropped at inject (full per-thread queue).
    pub dropped_at_inject: u64,
    /// Per measurement point, in the order they were added.
    pub mps: Vec<MpStats>,
    /// Per destination, in configuration order.
    pub destinations: Vec<DestinationStats>,
    /// Queue memory (also reported in `_client_instrumentation`).
    pub memory: MemoryStats,
}

/// Counters of one measurement point.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MpStats {
    /// The MP name.
    pub name: String,
    /// Samples accepted by `inject` (taken by the writer, or dropped at inject).
    pub injected: u64,
    /// Samples dropped at inject because the thread's queue was full.
    pub dropped_at_inject: u64,
}

/// Counters of one destination.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DestinationStats {
    /// The destination (`tcp:host:port`, `file:PATH`…).
    pub uri: String,
    /// Tuples encoded for it (all streams, metadata and instrumentation included).
    pub emitted: u64,
    /// Tuples completely written to it.
    pub written: u64,
    /// Tuples dropped by its overload policy, or left when close gave up.
    pub dropped: u64,
    /// Bytes written (headers and reconnection replays included).
    pub bytes_written: u64,
    /// Connections made (TCP) or 1 for an opened file.
    pub connections: u64,
    /// Strings cut to 254 bytes to fit a binary tuple.
    pub truncated_strings: u64,
    /// Bytes waiting in its queue now.
    pub queued_bytes: u64,
    /// The same counters per source: `_experiment_metadata` (schema-0
    /// tuples), `_client_instrumentation`, then each measurement point.
    pub per_source: Vec<SourceStats>,
}

/// One destination's counters for one source of tuples.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SourceStats {
    /// `_experiment_metadata`, `_client_instrumentation` or an MP name.
    pub name: String,
    /// Tuples encoded.
    pub emitted: u64,
    /// Tuples completely written.
    pub written: u64,
    /// Tuples dropped.
    pub dropped: u64,
}

impl DestinationStats {
    /// The counters of source `name` (zero if it sent nothing here).
    pub fn source(&self, name: &str) -> SourceStats {
        self.per_source
            .iter()
            .find(|s| s.name == name)
            .cloned()
            .unwrap_or_else(|| SourceStats {
                name: name.to_owned(),
                ..SourceStats::default()
            })
    }
}

impl Stats {
    /// The counters of measurement point `name`.
    pub fn mp(&self, name: &str) -> Option<&MpStats> {
        self.mps.iter().find(|m| m.name == name)
    }
}

/// Builds a destination's figures from its queue counters.
pub(crate) fn destination(
    uri: String,
    c: &Counters,
    queued: usize,
    mps: &[Arc<MpDef>],
) -> DestinationStats {
    let name = |slot: usize| match slot {
        SLOT_SCHEMA0 => omsp::metadata::SCHEMA0_NAME.to_owned(),
        SLOT_INSTR => omsp::metadata::CLIENT_INSTRUMENTATION_NAME.to_owned(),
        SLOT_CLOCK => crate::clock_report::CLOCK_STREAM.to_owned(),
        s => mps
            .get(s - 3)
            .map_or_else(|| format!("#{}", s - 3), |m| m.name.clone()),
    };
    let per_source: Vec<SourceStats> = c
        .slots
        .iter()
        .enumerate()
        .filter(|(_, s)| **s != SlotCounters::default())
        .map(|(i, s)| SourceStats {
            name: name(i),
            emitted: s.emitted,
            written: s.written,
            dropped: s.dropped,
        })
        .collect();
    DestinationStats {
        uri,
        emitted: per_source.iter().map(|s| s.emitted).sum(),
        written: per_source.iter().map(|s| s.written).sum(),
        dropped: per_source.iter().map(|s| s.dropped).sum(),
        bytes_written: c.bytes_written,
        connections: c.connections,
        truncated_strings: c.truncated,
        queued_bytes: queued as u64,
        per_source,
    }
}

/// Builds an MP's figures.
pub(crate) fn mp(def: &MpDef) -> MpStats {
    let dropped = def.dropped.load(Relaxed);
    MpStats {
        name: def.name.clone(),
        injected: def.taken.load(Relaxed) + dropped,
        dropped_at_inject: dropped,
    }
}
