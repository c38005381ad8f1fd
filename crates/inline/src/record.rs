//! Records from the sink program, decoded into typed measurements.

use std::net::Ipv6Addr;

use inline_common::{FlowKey, Record, MODE_DELAY, MODE_LOSS, MODE_PDM};

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
    /// Arrival time at the sink.
    pub dst_ts: NtpTime,
    /// Whether the sequence number is PDM's 16-bit one (wraps at 65536).
    pub pdm: bool,
}

impl Measurement {
    /// Decode a ring-buffer record; `None` if the bytes are not a record.
    pub fn decode(bytes: &[u8]) -> Option<Measurement> {
        let r: Record =
            bytemuck::try_pod_read_unaligned(bytes.get(..std::mem::size_of::<Record>())?).ok()?;
        Some(Measurement {
            flow: Flow::from(&r.flow),
            seq: (r.kind & (MODE_LOSS | MODE_PDM) != 0).then_some(r.seq),
            src_ts: (r.kind & MODE_DELAY != 0).then_some(NtpTime(r.src_ts)),
            dst_ts: NtpTime(r.dst_ts),
            pdm: r.kind & MODE_PDM != 0,
        })
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
}
