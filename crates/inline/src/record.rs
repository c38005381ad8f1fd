//! Records from the sink program, decoded into typed measurements.

use std::net::Ipv6Addr;

use inline_common::{
    FlowKey, Record, COMPACT_SHIFT, KIND_MONO_DST, MODE_COMPACT, MODE_DELAY, MODE_LOSS, MODE_PDM,
};

/// Seconds between the NTP era-0 epoch (1900) and the Unix epoch (1970).
pub const NTP_UNIX_OFFSET: u64 = 2_208_988_800;

/// A 64-bit NTP timestamp: 32-bit seconds since 1900, 32-bit fraction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NtpTime(pub u64);

impl NtpTime {
    /// Nanoseconds since the Unix epoch (era 0 only, i.e. until 2036).
    pub fn unix_nanos(self) -> i128 {
        let secs = i128::from(self.0 >> 32) - i128::from(NTP_UNIX_OFFSET);
        let frac = ((self.0 & 0xffff_ffff) as i128 * 1_000_000_000) >> 32;
        secs * 1_000_000_000 + frac
    }

    /// Seconds since the Unix epoch as a float.
    pub fn unix_secs(self) -> f64 {
        self.unix_nanos() as f64 / 1e9
    }

    /// The full source time of a compact delay option: `compact` holds NTP
    /// bits 8–39 of the source time (steps of 2^-24 s ≈ 59.6 ns), the
    /// rest comes from the arrival time `dst`, which must be within ±2^23
    /// steps (±128 s) of it. The result is the middle of the step (error
    /// within ±30 ns).
    pub fn from_compact(compact: u32, dst: NtpTime) -> NtpTime {
        let dst_steps = dst.0 >> COMPACT_SHIFT;
        let behind = i64::from((dst_steps as u32).wrapping_sub(compact) as i32);
        let steps = (dst_steps as i64).wrapping_sub(behind) as u64;
        NtpTime((steps << COMPACT_SHIFT) | (1 << (COMPACT_SHIFT - 1)))
    }

    /// From nanoseconds since the Unix epoch.
    pub fn from_unix_nanos(ns: u64) -> NtpTime {
        let sec = ns / 1_000_000_000;
        let rem = ns % 1_000_000_000;
        NtpTime(((sec + NTP_UNIX_OFFSET) << 32) | ((rem << 32) / 1_000_000_000))
    }
}

/// A flow's five-tuple in user-friendly types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Flow {
    /// Source address.
    pub src: Ipv6Addr,
    /// Destination address.
    pub dst: Ipv6Addr,
    /// Upper-layer protocol.
    pub proto: u8,
    /// Source port (0 without ports).
    pub sport: u16,
    /// Destination port (0 without ports).
    pub dport: u16,
}

impl From<&FlowKey> for Flow {
    fn from(k: &FlowKey) -> Flow {
        Flow {
            src: Ipv6Addr::from(k.src),
            dst: Ipv6Addr::from(k.dst),
            proto: k.proto,
            sport: k.sport,
            dport: k.dport,
        }
    }
}

impl std::fmt::Display for Flow {
    /// `[src]:sport-[dst]:dport/proto`, the `flow` field of every stream.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{}]:{}-[{}]:{}/{}",
            self.src, self.sport, self.dst, self.dport, self.proto
        )
    }
}

/// One measured packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measurement {
    /// The packet's flow.
    pub flow: Flow,
    /// Sequence number (loss option; 16-bit PSN in PDM mode), if present.
    pub seq: Option<u32>,
    /// Source timestamp (delay option), if present.
    pub src_ts: Option<NtpTime>,
    /// Arrival time at the sink: precise with a delay option; without
    /// one (loss, PDM) the kernel's coarse clock, resolution one tick
    /// (1–10 ms; spec/inline.md, section 7).
    pub dst_ts: NtpTime,
    /// Whether the sequence number is PDM's 16-bit one (wraps at 65536).
    pub pdm: bool,
}

impl Measurement {
    /// Decode a ring-buffer record; `None` if the bytes are not a record.
    /// A record whose arrival time is a monotonic reading is converted
    /// with the current wall-clock offset.
    pub fn decode(bytes: &[u8]) -> Option<Measurement> {
        let r = Self::raw(bytes)?;
        let offset = if r.kind & KIND_MONO_DST != 0 {
            crate::maps::clock_offset_ns()
        } else {
            0
        };
        Some(Self::from_record(&r, offset))
    }

    /// Decode a record, converting a monotonic arrival time with
    /// `clock_offset_ns` (wall clock minus monotonic clock, as
    /// [`crate::clock_offset_ns`] gives it).
    pub fn decode_at(bytes: &[u8], clock_offset_ns: u64) -> Option<Measurement> {
        Some(Self::from_record(&Self::raw(bytes)?, clock_offset_ns))
    }

    fn raw(bytes: &[u8]) -> Option<Record> {
        bytemuck::try_pod_read_unaligned(bytes.get(..std::mem::size_of::<Record>())?).ok()
    }

    fn from_record(r: &Record, clock_offset_ns: u64) -> Measurement {
        let dst_ts = if r.kind & KIND_MONO_DST != 0 {
            NtpTime::from_unix_nanos(r.dst_ts.wrapping_add(clock_offset_ns))
        } else {
            NtpTime(r.dst_ts)
        };
        let src_ts = match (r.kind & MODE_DELAY != 0, r.kind & MODE_COMPACT != 0) {
            (false, _) => None,
            (true, false) => Some(NtpTime(r.src_ts)),
            (true, true) => Some(NtpTime::from_compact(r.src_ts as u32, dst_ts)),
        };
        Measurement {
            flow: Flow::from(&r.flow),
            seq: (r.kind & (MODE_LOSS | MODE_PDM) != 0).then_some(r.seq),
            src_ts,
            dst_ts,
            pdm: r.kind & MODE_PDM != 0,
        }
    }

    /// One-way delay in nanoseconds (negative if the clocks disagree).
    pub fn delay_ns(&self) -> Option<i64> {
        self.src_ts
            .map(|s| (self.dst_ts.unix_nanos() - s.unix_nanos()) as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ntp_round_trip() {
        let ns = 1_700_000_000_123_456_789u64;
        let t = NtpTime::from_unix_nanos(ns);
        assert!((t.unix_nanos() - i128::from(ns)).abs() <= 1);
        assert_eq!(t.0 >> 32, 1_700_000_000 + NTP_UNIX_OFFSET);
    }

    #[test]
    fn decode_record() {
        let mut r = Record::default();
        r.flow.src[15] = 1;
        r.flow.dst[15] = 2;
        r.flow.proto = 17;
        r.flow.sport = 1000;
        r.flow.dport = 2000;
        r.kind = MODE_DELAY | MODE_LOSS;
        r.seq = 7;
        r.src_ts = NtpTime::from_unix_nanos(1_000_000_000).0;
        r.dst_ts = NtpTime::from_unix_nanos(1_020_000_000).0;
        let m = Measurement::decode(bytemuck::bytes_of(&r)).unwrap();
        assert_eq!(m.seq, Some(7));
        assert_eq!(m.flow.to_string(), "[::1]:1000-[::2]:2000/17");
        assert!((m.delay_ns().unwrap() - 20_000_000).abs() <= 1);
        assert!(Measurement::decode(&[0; 10]).is_none());
    }

    #[test]
    fn monotonic_arrival_is_converted() {
        let r = Record {
            kind: MODE_LOSS | KIND_MONO_DST,
            dst_ts: 5_000_000_000,
            ..Record::default()
        };
        let m = Measurement::decode_at(bytemuck::bytes_of(&r), 1_700_000_000_000_000_000).unwrap();
        assert_eq!(
            m.dst_ts,
            NtpTime::from_unix_nanos(1_700_000_005_000_000_000)
        );
        assert_eq!(m.src_ts, None);
    }

    #[test]
    fn compact_timestamps_expand_around_the_arrival() {
        let src = NtpTime::from_unix_nanos(1_700_000_000_123_456_789);
        let compact = (src.0 >> COMPACT_SHIFT) as u32;
        for delay_ns in [0i128, 1_000, 40_000_000, 100_000_000_000, -5_000] {
            let dst = NtpTime::from_unix_nanos((src.unix_nanos() + delay_ns) as u64);
            let back = NtpTime::from_compact(compact, dst);
            let err = back.unix_nanos() - src.unix_nanos();
            assert!(err.abs() <= 31, "delay {delay_ns}: error {err} ns");
        }
        // Across a wrap of the 32-bit field (every 256 s).
        let steps = (0xE0u64 << 32) | 0xFFFF_FFF0;
        let src = NtpTime(steps << COMPACT_SHIFT);
        let dst = NtpTime(src.0 + (32 << COMPACT_SHIFT));
        let back = NtpTime::from_compact((src.0 >> COMPACT_SHIFT) as u32, dst);
        assert_eq!(back.0 >> COMPACT_SHIFT, src.0 >> COMPACT_SHIFT);
    }
}
