//! Types shared across the kernel boundary by the in-line measurement BPF
//! programs (`crates/inline-ebpf`, C) and the agent (`crates/inline`).
//!
//! Every type here is `#[repr(C)]`, has no implicit padding and mirrors a C
//! struct in `crates/inline-ebpf/bpf/sg_inline.h`; both sides assert the same
//! sizes and offsets at compile time, so a change on one side that is not
//! made on the other fails the build. Values travel as raw bytes through BPF
//! maps and the ring buffer: [`bytemuck`] converts them without `unsafe` here.
//!
//! ```
//! use inline_common::{Config, MODE_DELAY, MODE_LOSS};
//! let mut cfg = Config::default();
//! cfg.enabled = 1;
//! cfg.mode = MODE_DELAY | MODE_LOSS;
//! let bytes: &[u8] = bytemuck::bytes_of(&cfg);
//! assert_eq!(bytes.len(), 96);
//! ```
#![no_std]
#![deny(missing_docs)]

mod counters;
mod options;

pub use counters::{Counter, COUNTERS};
pub use options::*;

use bytemuck::{Pod, Zeroable};

/// Run-time configuration, the single entry of the `sg_config` array map.
///
/// The agent writes it at start and `streamgauge inline ctl` rewrites it
/// while the programs run; the programs read it for every packet, so a change
/// takes effect on the next packet without reloading anything.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct Config {
    /// Source prefix, already masked (`addr & mask`), network byte order.
    pub src_net: [u8; 16],
    /// Source prefix mask; all zero = any source address.
    pub src_mask: [u8; 16],
    /// Destination prefix, already masked, network byte order.
    pub dst_net: [u8; 16],
    /// Destination prefix mask; all zero = any destination address.
    pub dst_mask: [u8; 16],
    /// Source port (host byte order); 0 = any.
    pub sport: u16,
    /// Destination port (host byte order); 0 = any.
    pub dport: u16,
    /// Upper-layer protocol number (6 TCP, 17 UDP, 58 ICMPv6…); 0 = any.
    pub proto: u8,
    /// 0 = the program passes every packet untouched (paused).
    pub enabled: u8,
    /// Which options the source inserts (`MODE_*` bits); at the sink, which it accepts.
    pub mode: u8,
    /// Option type of the delay (timestamps) option; RFC 4727 experimental by default.
    pub delay_type: u8,
    /// Option type of the loss (sequence number) option.
    pub loss_type: u8,
    /// Where one-in-N sampling is decided: [`SAMPLING_FLOW`] (per flow,
    /// exact, the default) or [`SAMPLING_CPU`] (per CPU, before the flow
    /// lookup: cheaper, approximate per flow).
    pub sampling: u8,
    /// 1 only in the configuration the loader wrote together with the
    /// source program's read-only copy of it (`sg_loaded`), for which the
    /// verifier kept only the code this configuration needs; every later
    /// write leaves it 0 and the program takes its general path.
    pub loaded: u8,
    /// Explicit padding (must be zero).
    pub _pad: u8,
    /// One-in-N systematic sampling per flow; 0 and 1 both mean every packet.
    pub sample_n: u32,
    /// At most one instrumented packet per flow every this many nanoseconds; 0 = no limit.
    pub min_interval_ns: u64,
    /// A flow idle for longer than this restarts its sequence numbers at 0.
    pub flow_timeout_ns: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            enabled: 1,
            mode: MODE_DELAY | MODE_LOSS,
            delay_type: DEFAULT_DELAY_TYPE,
            loss_type: DEFAULT_LOSS_TYPE,
            flow_timeout_ns: 30_000_000_000,
            ..Zeroable::zeroed()
        }
    }
}

/// A flow's five-tuple: the first field of every record. (The source's
/// `sg_flows` LRU table is keyed by a 64-bit hash of it.)
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Pod, Zeroable)]
pub struct FlowKey {
    /// Source address, network byte order.
    pub src: [u8; 16],
    /// Destination address, network byte order.
    pub dst: [u8; 16],
    /// Source port (host byte order); 0 for protocols without ports.
    pub sport: u16,
    /// Destination port (host byte order); 0 for protocols without ports.
    pub dport: u16,
    /// Upper-layer protocol number.
    pub proto: u8,
    /// Explicit padding (zero).
    pub _pad: [u8; 3],
}

/// Per-flow state kept by the source program (value of `sg_flows`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Pod, Zeroable)]
pub struct FlowState {
    /// Packets of the flow that passed the filter (drives one-in-N sampling).
    pub pkts: u64,
    /// Next sequence number to write (counts instrumented packets only).
    pub seq: u32,
    /// Explicit padding (zero).
    pub _pad: u32,
    /// Monotonic time of the last instrumented packet (min-interval sampling).
    pub last_mark_ns: u64,
    /// Monotonic time of the last packet (inactivity expiry).
    pub last_seen_ns: u64,
}

/// One measured packet, pushed by the sink program into the `sg_records`
/// ring buffer.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Pod, Zeroable)]
pub struct Record {
    /// The packet's five-tuple.
    pub flow: FlowKey,
    /// Sequence number (loss and PDM options; 0 for delay-only).
    pub seq: u32,
    /// Which options the packet carried (`MODE_*` bits), plus
    /// [`KIND_MONO_DST`] when `dst_ts` is a monotonic reading.
    pub kind: u8,
    /// Explicit padding (zero).
    pub _pad: [u8; 3],
    /// Source timestamp, NTP 64-bit format (0 when the packet had no delay option).
    pub src_ts: u64,
    /// Arrival time at the sink: NTP 64-bit format, or `CLOCK_MONOTONIC`
    /// nanoseconds when `kind` has [`KIND_MONO_DST`] (the agent converts:
    /// the sink then reads the clock once and does no division).
    pub dst_ts: u64,
}

/// `Config::sampling`: one-in-N decided per flow from the flow's own packet
/// count (every flow gets exactly its 1st, N+1th, … packet).
pub const SAMPLING_FLOW: u8 = 0;
/// `Config::sampling`: one-in-N decided per CPU before the flow lookup (a
/// sampled-out packet costs no lookup; which packets of a flow are measured
/// depends on the other flows sharing the CPU).
pub const SAMPLING_CPU: u8 = 1;

/// `Record::kind` bit: `dst_ts` is `CLOCK_MONOTONIC` nanoseconds.
pub const KIND_MONO_DST: u8 = 0x80;

/// Records the sink packs into one ring-buffer sample (a sample holds 1 to
/// this many [`Record`]s back to back).
pub const RECORD_BATCH: usize = 16;

/// Index of the only entry of the array maps.
pub const ZERO_KEY: [u8; 4] = [0; 4];

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<Config>() == 96);
    assert!(offset_of!(Config, sport) == 64);
    assert!(offset_of!(Config, proto) == 68);
    assert!(offset_of!(Config, sampling) == 73);
    assert!(offset_of!(Config, loaded) == 74);
    assert!(offset_of!(Config, sample_n) == 76);
    assert!(offset_of!(Config, min_interval_ns) == 80);
    assert!(offset_of!(Config, flow_timeout_ns) == 88);
    assert!(size_of::<FlowKey>() == 40);
    assert!(offset_of!(FlowKey, proto) == 36);
    assert!(size_of::<FlowState>() == 32);
    assert!(offset_of!(FlowState, last_mark_ns) == 16);
    assert!(size_of::<Record>() == 64);
    assert!(offset_of!(Record, seq) == 40);
    assert!(offset_of!(Record, kind) == 44);
    assert!(offset_of!(Record, src_ts) == 48);
    assert!(offset_of!(Record, dst_ts) == 56);
};
