//! Sans-I/O IPFIX encoder (RFC 7011 messages, RFC 7012 information elements).
//!
//! Four templates cover every flow record:
//!
//! | id  | addresses | direction |
//! |-----|-----------|-----------|
//! | 256 | IPv4      | uniflow   |
//! | 257 | IPv6      | uniflow   |
//! | 258 | IPv4      | biflow (RFC 5103 reverse IEs, PEN 29305) |
//! | 259 | IPv6      | biflow    |
//!
//! Fields, in order: flowStartMilliseconds (152) or flowStartNanoseconds
//! (156), flowEnd… (153/157), octetDeltaCount (1), packetDeltaCount (2),
//! icmpTypeCodeIPv4 (32) or icmpTypeCodeIPv6 (139), sourceTransportPort (7),
//! destinationTransportPort (11), source and
//! destination address (8/12 or 27/28), protocolIdentifier (4),
//! tcpControlBits (6, 2 bytes), flowEndReason (136); biflow templates add
//! reverseOctetDeltaCount, reversePacketDeltaCount, reverseTcpControlBits.
//!
//! ICMP and ICMPv6 flows carry type × 256 + code twice: in icmpTypeCode…,
//! for collectors that read it, and in destinationTransportPort with source
//! port 0, as NetFlow exporters do (nfdump shows it as `type.code`). The
//! ICMP field comes before the ports, so a collector that stores both in
//! one place keeps the port's value; it is 0 for other protocols.
//!
//! The message header's sequence number is the number of data records sent
//! in earlier messages of this observation domain (mod 2^32).

use crate::flow::FlowRecord;
use serde::{Deserialize, Serialize};

/// IANA private enterprise number for RFC 5103 reverse information elements.
pub const REVERSE_PEN: u32 = 29305;

/// Timestamp resolution of the flow start/end fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TimeResolution {
    /// flowStart/EndMilliseconds (152/153).
    #[default]
    Milliseconds,
    /// flowStart/EndNanoseconds (156/157, NTP format).
    Nanoseconds,
}

/// (IE id, length, enterprise) of a template field.
type FieldSpec = (u16, u16, Option<u32>);

fn fields(v6: bool, biflow: bool, res: TimeResolution) -> Vec<FieldSpec> {
    let (start, end) = match res {
        TimeResolution::Milliseconds => (152, 153),
        TimeResolution::Nanoseconds => (156, 157),
    };
    let mut f = vec![
        (start, 8, None),
        (end, 8, None),
        (1, 8, None),
        (2, 8, None),
        (if v6 { 139 } else { 32 }, 2, None),
        (7, 2, None),
        (11, 2, None),
    ];
    if v6 {
        f.extend([(27, 16, None), (28, 16, None)]);
    } else {
        f.extend([(8, 4, None), (12, 4, None)]);
    }
    f.extend([(4, 1, None), (6, 2, None), (136, 1, None)]);
    if biflow {
        f.extend([
            (1, 8, Some(REVERSE_PEN)),
            (2, 8, Some(REVERSE_PEN)),
            (6, 2, Some(REVERSE_PEN)),
        ]);
    }
    f
}

fn template_id(v6: bool, biflow: bool) -> u16 {
    256 + u16::from(v6) + 2 * u16::from(biflow)
}

fn record_len(v6: bool, biflow: bool) -> usize {
    fields(v6, biflow, TimeResolution::Milliseconds)
        .iter()
        .map(|f| usize::from(f.1))
        .sum()
}

/// NTP timestamp (RFC 7011 dateTimeNanoseconds) of ns since the Unix epoch.
fn ntp(ts_ns: u64) -> u64 {
    let secs = ts_ns / 1_000_000_000 + 2_208_988_800;
    let frac = ((ts_ns % 1_000_000_000) << 32) / 1_000_000_000;
    (secs << 32) | frac
}

/// Encodes IPFIX messages for one observation domain.
#[derive(Debug, Clone)]
pub struct Encoder {
    /// Observation domain ID written in every header.
    domain: u32,
    /// Largest message to produce (UDP: path MTU minus headers).
    max_len: usize,
    /// Time resolution of start/end fields.
    resolution: TimeResolution,
    /// Data records sent so far: the next message's sequence number.
    sequence: u32,
}

impl Encoder {
    /// An encoder; `max_len` is clamped to [256, 65535].
    pub fn new(domain: u32, max_len: usize, resolution: TimeResolution) -> Encoder {
        Encoder {
            domain,
            max_len: max_len.clamp(256, 65535),
            resolution,
            sequence: 0,
        }
    }

    /// Data records sent so far (mod 2^32).
    pub fn sequence(&self) -> u32 {
        self.sequence
    }

    fn header(&self, out: &mut Vec<u8>, export_s: u32) {
        out.extend_from_slice(&10u16.to_be_bytes());
        out.extend_from_slice(&0u16.to_be_bytes());
        out.extend_from_slice(&export_s.to_be_bytes());
        out.extend_from_slice(&self.sequence.to_be_bytes());
        out.extend_from_slice(&self.domain.to_be_bytes());
    }

    fn finish(out: &mut [u8]) {
        let len = out.len() as u16;
        out[2..4].copy_from_slice(&len.to_be_bytes());
    }

    /// A message carrying the four templates.
    pub fn templates(&self, export_s: u32) -> Vec<u8> {
        let mut m = Vec::with_capacity(256);
        self.header(&mut m, export_s);
        let set_at = m.len();
        m.extend_from_slice(&2u16.to_be_bytes());
        m.extend_from_slice(&0u16.to_be_bytes());
        for (v6, bi) in [(false, false), (true, false), (false, true), (true, true)] {
            let f = fields(v6, bi, self.resolution);
            m.extend_from_slice(&template_id(v6, bi).to_be_bytes());
            m.extend_from_slice(&(f.len() as u16).to_be_bytes());
            for (id, len, pen) in f {
                match pen {
                    Some(p) => {
                        m.extend_from_slice(&(id | 0x8000).to_be_bytes());
                        m.extend_from_slice(&len.to_be_bytes());
                        m.extend_from_slice(&p.to_be_bytes());
                    }
                    None => {
                        m.extend_from_slice(&id.to_be_bytes());
                        m.extend_from_slice(&len.to_be_bytes());
                    }
                }
            }
        }
        let set_len = (m.len() - set_at) as u16;
        m[set_at + 2..set_at + 4].copy_from_slice(&set_len.to_be_bytes());
        Self::finish(&mut m);
        m
    }

    fn record(&self, r: &FlowRecord, biflow: bool, out: &mut Vec<u8>) {
        let (s, e) = match self.resolution {
            TimeResolution::Milliseconds => (r.start_ns / 1_000_000, r.end_ns / 1_000_000),
            TimeResolution::Nanoseconds => (ntp(r.start_ns), ntp(r.end_ns)),
        };
        out.extend_from_slice(&s.to_be_bytes());
        out.extend_from_slice(&e.to_be_bytes());
        out.extend_from_slice(&r.octets.to_be_bytes());
        out.extend_from_slice(&r.packets.to_be_bytes());
        let icmp = r.key.icmp_type_code().unwrap_or(0);
        out.extend_from_slice(&icmp.to_be_bytes());
        out.extend_from_slice(&r.key.sport.to_be_bytes());
        out.extend_from_slice(&r.key.dport.to_be_bytes());
        if r.key.v6 {
            out.extend_from_slice(&r.key.src.to_be_bytes());
            out.extend_from_slice(&r.key.dst.to_be_bytes());
        } else {
            out.extend_from_slice(&(r.key.src as u32).to_be_bytes());
            out.extend_from_slice(&(r.key.dst as u32).to_be_bytes());
        }
        out.push(r.key.proto);
        out.extend_from_slice(&u16::from(r.tcp_flags).to_be_bytes());
        out.push(r.end_reason as u8);
        if biflow {
            out.extend_from_slice(&r.rev_octets.to_be_bytes());
            out.extend_from_slice(&r.rev_packets.to_be_bytes());
            out.extend_from_slice(&u16::from(r.rev_tcp_flags).to_be_bytes());
        }
    }

    /// Encodes `records` into as many messages as needed (each at most
    /// `max_len` bytes, one data set per template in use), advancing the
    /// sequence number by the records of each message.
    pub fn data(&mut self, export_s: u32, records: &[FlowRecord], biflow: bool) -> Vec<Vec<u8>> {
        let mut msgs = Vec::new();
        let mut rest: Vec<&FlowRecord> = records.iter().collect();
        // IPv4 first, then IPv6, so that each message has at most two sets.
        rest.sort_by_key(|r| r.key.v6);
        let mut i = 0;
        while i < rest.len() {
            let mut m = Vec::with_capacity(self.max_len);
            self.header(&mut m, export_s);
            let mut count = 0u32;
            let mut set_at: Option<(usize, bool)> = None;
            while i < rest.len() {
                let r = rest[i];
                let rl = record_len(r.key.v6, biflow);
                let need_set = !matches!(set_at, Some((_, v6)) if v6 == r.key.v6);
                let need = rl + if need_set { 4 } else { 0 };
                if m.len() + need > self.max_len && count > 0 {
                    break;
                }
                if need_set {
                    if let Some((at, _)) = set_at {
                        let l = (m.len() - at) as u16;
                        m[at + 2..at + 4].copy_from_slice(&l.to_be_bytes());
                    }
                    set_at = Some((m.len(), r.key.v6));
                    m.extend_from_slice(&template_id(r.key.v6, biflow).to_be_bytes());
                    m.extend_from_slice(&0u16.to_be_bytes());
                }
                self.record(r, biflow, &mut m);
                count += 1;
                i += 1;
            }
            if let Some((at, _)) = set_at {
                let l = (m.len() - at) as u16;
                m[at + 2..at + 4].copy_from_slice(&l.to_be_bytes());
            }
            Self::finish(&mut m);
            self.sequence = self.sequence.wrapping_add(count);
            msgs.push(m);
        }
        msgs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::{EndReason, FlowKey};

    fn rec(i: u64, v6: bool) -> FlowRecord {
        FlowRecord {
            key: FlowKey {
                v6,
                src: u128::from(i),
                dst: 2,
                sport: 1,
                dport: 2,
                proto: 17,
            },
            start_ns: 1_000_000_000 * i,
            end_ns: 1_000_000_000 * i + 5,
            packets: i,
            octets: 100 * i,
            tcp_flags: 0,
            rev_packets: 0,
            rev_octets: 0,
            rev_tcp_flags: 0,
            end_reason: EndReason::Idle,
        }
    }

    #[test]
    fn messages_split_and_sequence_counts_records() {
        let mut e = Encoder::new(7, 512, TimeResolution::Milliseconds);
        let t = e.templates(1);
        assert_eq!(u16::from_be_bytes([t[2], t[3]]) as usize, t.len());
        let recs: Vec<FlowRecord> = (0..40).map(|i| rec(i, i % 3 == 0)).collect();
        let msgs = e.data(1, &recs, false);
        assert!(msgs.len() > 1);
        let mut seq = 0u32;
        let mut total = 0;
        for m in &msgs {
            assert!(m.len() <= 512);
            assert_eq!(u16::from_be_bytes([m[2], m[3]]) as usize, m.len());
            assert_eq!(u32::from_be_bytes([m[8], m[9], m[10], m[11]]), seq);
            // Walk the sets and count records.
            let mut at = 16;
            let mut n = 0;
            while at < m.len() {
                let id = u16::from_be_bytes([m[at], m[at + 1]]);
                let l = u16::from_be_bytes([m[at + 2], m[at + 3]]) as usize;
                n += (l - 4) / record_len(id == 257, false);
                at += l;
            }
            assert_eq!(at, m.len());
            seq += n as u32;
            total += n;
        }
        assert_eq!(total, 40);
        assert_eq!(e.sequence(), 40);
    }

    #[test]
    fn icmp_type_code_in_its_field_and_the_destination_port() {
        let mut e = Encoder::new(1, 1400, TimeResolution::Milliseconds);
        let t = e.templates(1);
        // Template 256's fields after the set and template headers (20 + 4 + 4).
        let ies: Vec<u16> = (0..7)
            .map(|i| u16::from_be_bytes([t[24 + 4 * i], t[25 + 4 * i]]))
            .collect();
        assert_eq!(ies, [152, 153, 1, 2, 32, 7, 11]);
        assert!(t.windows(4).any(|w| w == [0, 139, 0, 2]), "IPv6: IE 139");
        // Echo request 8/0 (IPv4), destination unreachable 3/3, ICMPv6 echo
        // request 128/0, and a UDP flow to port 53.
        let mut recs = vec![rec(1, false), rec(2, false), rec(3, true), rec(4, false)];
        (recs[0].key.proto, recs[0].key.sport, recs[0].key.dport) = (1, 0, 8 * 256);
        (recs[1].key.proto, recs[1].key.sport, recs[1].key.dport) = (1, 0, 3 * 256 + 3);
        (recs[2].key.proto, recs[2].key.sport, recs[2].key.dport) = (58, 0, 128 * 256);
        (recs[3].key.sport, recs[3].key.dport) = (5000, 53);
        let m = &e.data(1, &recs, false)[0];
        // (icmpTypeCode, sourceTransportPort, destinationTransportPort) of each
        // record: 32 bytes of times and counters precede them.
        let mut got = Vec::new();
        let mut at = 16;
        while at < m.len() {
            let v6 = u16::from_be_bytes([m[at], m[at + 1]]) == 257;
            let end = at + usize::from(u16::from_be_bytes([m[at + 2], m[at + 3]]));
            let mut r = at + 4;
            while r < end {
                let u = |o: usize| u16::from_be_bytes([m[r + o], m[r + o + 1]]);
                got.push((u(32), u(34), u(36), m[r + 38 + if v6 { 32 } else { 8 }]));
                r += record_len(v6, false);
            }
            at = end;
        }
        got.sort();
        assert_eq!(
            got,
            [
                (0, 5000, 53, 17),
                (0x0303, 0, 0x0303, 1),
                (0x0800, 0, 0x0800, 1),
                (0x8000, 0, 0x8000, 58),
            ]
        );
    }

    #[test]
    fn ntp_conversion() {
        assert_eq!(ntp(0) >> 32, 2_208_988_800);
        assert_eq!(ntp(500_000_000) & 0xffff_ffff, 1 << 31);
    }
}
