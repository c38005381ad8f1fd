//! Indices of the per-CPU `sg_counters` array, one slot per named counter.

/// A program counter. The discriminant is the index in `sg_counters` and
/// matches the `SG_C_*` constants of `sg_inline.h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Counter {
    /// Source: packets that matched the five-tuple filter.
    SrcMatched = 0,
    /// Source: packets that received a header.
    SrcInstrumented = 1,
    /// Source: matched packets skipped by one-in-N sampling.
    SrcSampledOut = 2,
    /// Source: matched packets skipped by the minimum interval.
    SrcInterval = 3,
    /// Source: sampled packets left unmarked because they would exceed the MTU.
    SrcMtu = 4,
    /// Source: matched packets that already had an extension header.
    SrcExtHdr = 5,
    /// Source: matched packets that were fragments.
    SrcFragment = 6,
    /// Source: matched jumbo (or >64 KiB BIG TCP) packets.
    SrcJumbo = 7,
    /// Source: UDP GSO packets (insertion would change datagram boundaries).
    SrcUdpGso = 8,
    /// Source: insertion failed (helper error, packet left as it was).
    SrcError = 9,
    /// Sink: packets carrying one of our headers.
    SinkMarked = 10,
    /// Sink: records pushed into the ring buffer.
    SinkRecords = 11,
    /// Sink: records lost because the ring buffer was full.
    SinkRingDrops = 12,
    /// Sink: Destination Options headers that are not ours (left alone).
    SinkForeign = 13,
    /// Sink: header removal failed (packet delivered with the header).
    SinkError = 14,
}

/// Number of slots in `sg_counters`.
pub const COUNTERS: usize = 16;

impl Counter {
    /// Every counter, in index order.
    pub const ALL: [Counter; 15] = [
        Counter::SrcMatched,
        Counter::SrcInstrumented,
        Counter::SrcSampledOut,
        Counter::SrcInterval,
        Counter::SrcMtu,
        Counter::SrcExtHdr,
        Counter::SrcFragment,
        Counter::SrcJumbo,
        Counter::SrcUdpGso,
        Counter::SrcError,
        Counter::SinkMarked,
        Counter::SinkRecords,
        Counter::SinkRingDrops,
        Counter::SinkForeign,
        Counter::SinkError,
    ];

    /// Stable name used in the counters stream and by `inline ctl show`.
    pub const fn name(self) -> &'static str {
        match self {
            Counter::SrcMatched => "matched",
            Counter::SrcInstrumented => "instrumented",
            Counter::SrcSampledOut => "skipped_sampling",
            Counter::SrcInterval => "skipped_interval",
            Counter::SrcMtu => "skipped_mtu",
            Counter::SrcExtHdr => "skipped_exthdr",
            Counter::SrcFragment => "skipped_fragment",
            Counter::SrcJumbo => "skipped_jumbo",
            Counter::SrcUdpGso => "skipped_udp_gso",
            Counter::SrcError => "insert_errors",
            Counter::SinkMarked => "marked",
            Counter::SinkRecords => "records",
            Counter::SinkRingDrops => "ring_drops",
            Counter::SinkForeign => "foreign",
            Counter::SinkError => "remove_errors",
        }
    }

    /// Whether the counter belongs to the source program (else the sink).
    pub const fn is_source(self) -> bool {
        (self as u32) < 10
    }
}
