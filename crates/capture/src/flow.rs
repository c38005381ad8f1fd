//! Flow metering: 5-tuple flows, optional biflows (RFC 5103), idle and
//! active timeouts.
//!
//! A packet's octet count is its IP length (IPv4 total length, IPv6 payload
//! length + 40), as IPFIX `octetDeltaCount` defines it. With biflows, a
//! packet whose reversed key matches an existing flow counts in that flow's
//! reverse direction. Expired flows are returned to the caller (the IPFIX
//! exporter); nothing here does I/O.

use crate::packet::{IpVersion, Parsed};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The 5-tuple; IPv4 addresses are stored in the low 32 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowKey {
    /// IPv6 (true) or IPv4.
    pub v6: bool,
    /// Source address.
    pub src: u128,
    /// Destination address.
    pub dst: u128,
    /// Source port (ICMP, ICMPv6: 0).
    pub sport: u16,
    /// Destination port (ICMP, ICMPv6: type × 256 + code, as NetFlow
    /// collectors and softflowd put it).
    pub dport: u16,
    /// IP protocol.
    pub proto: u8,
}

impl FlowKey {
    /// The key of the opposite direction.
    pub fn reversed(&self) -> FlowKey {
        FlowKey {
            src: self.dst,
            dst: self.src,
            sport: self.dport,
            dport: self.sport,
            ..*self
        }
    }

    /// ICMP type × 256 + code (icmpTypeCodeIPv4 or icmpTypeCodeIPv6) when
    /// the key is an ICMP flow of its IP version, else `None`.
    pub fn icmp_type_code(&self) -> Option<u16> {
        let icmp = if self.v6 {
            crate::packet::PROTO_ICMPV6
        } else {
            crate::packet::PROTO_ICMP
        };
        (self.proto == icmp).then_some(self.dport)
    }

    /// The key of a parsed frame, if it is IP.
    pub fn of(p: &Parsed, f: &[u8]) -> Option<FlowKey> {
        let l3 = p.l3?;
        let n = l3.addr_len();
        let s = f.get(l3.src_offset()..l3.src_offset() + n)?;
        let d = f.get(l3.dst_offset()..l3.dst_offset() + n)?;
        let to = |b: &[u8]| b.iter().fold(0u128, |a, &x| (a << 8) | u128::from(x));
        let (sport, dport) = if p.l4.is_some() { p.ports(f) } else { (0, 0) };
        Some(FlowKey {
            v6: l3.version == IpVersion::V6,
            src: to(s),
            dst: to(d),
            sport,
            dport,
            proto: l3.proto,
        })
    }
}

/// Why a flow record ended (IPFIX flowEndReason, IE 136).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum EndReason {
    /// Idle timeout.
    Idle = 1,
    /// Active timeout.
    Active = 2,
    /// Forced end (flush at stop).
    Forced = 4,
}

impl EndReason {
    /// The reason of an IPFIX flowEndReason value we export, if it is one.
    pub fn from_code(c: u8) -> Option<EndReason> {
        match c {
            1 => Some(EndReason::Idle),
            2 => Some(EndReason::Active),
            4 => Some(EndReason::Forced),
            _ => None,
        }
    }
}

/// One flow record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowRecord {
    /// The key of the first packet seen.
    pub key: FlowKey,
    /// First packet time (ns since the epoch).
    pub start_ns: u64,
    /// Last packet time (either direction).
    pub end_ns: u64,
    /// Packets in the forward direction.
    pub packets: u64,
    /// IP octets in the forward direction.
    pub octets: u64,
    /// OR of TCP flags, forward.
    pub tcp_flags: u8,
    /// Packets in the reverse direction (biflow only).
    pub rev_packets: u64,
    /// IP octets in the reverse direction.
    pub rev_octets: u64,
    /// OR of TCP flags, reverse.
    pub rev_tcp_flags: u8,
    /// Why the record was exported.
    pub end_reason: EndReason,
}

/// Flow metering settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    /// Export a flow after this many seconds without packets.
    #[serde(default = "default_idle")]
    pub idle_timeout_s: u64,
    /// Export a long flow every this many seconds.
    #[serde(default = "default_active")]
    pub active_timeout_s: u64,
    /// Meter biflows (RFC 5103).
    #[serde(default)]
    pub biflow: bool,
}

fn default_idle() -> u64 {
    15
}
fn default_active() -> u64 {
    60
}

impl Default for FlowConfig {
    fn default() -> Self {
        FlowConfig {
            idle_timeout_s: default_idle(),
            active_timeout_s: default_active(),
            biflow: false,
        }
    }
}

/// The flow table.
#[derive(Debug)]
pub struct FlowTable {
    /// Settings.
    cfg: FlowConfig,
    /// Live flows.
    flows: HashMap<FlowKey, FlowRecord>,
    /// Packet time of the last expiry scan.
    last_scan_ns: u64,
    /// Changes to the table so far (packets, expiries, restores), so a
    /// checkpoint can tell that nothing changed since the last one.
    changes: u64,
}

const NS: u64 = 1_000_000_000;

impl FlowTable {
    /// An empty table.
    pub fn new(cfg: FlowConfig) -> FlowTable {
        FlowTable {
            cfg,
            flows: HashMap::new(),
            last_scan_ns: 0,
            changes: 0,
        }
    }

    /// Changes so far (grows with every packet, expiry and restore).
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// The live flows, in no particular order (for a checkpoint).
    pub fn active(&self) -> impl ExactSizeIterator<Item = &FlowRecord> {
        self.flows.values()
    }

    /// Puts flows of a checkpoint back; a flow whose key is live already
    /// is replaced.
    pub fn restore(&mut self, flows: impl IntoIterator<Item = FlowRecord>) {
        for r in flows {
            self.flows.insert(r.key, r);
        }
        self.changes += 1;
    }

    /// Live flows.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// True with no live flow.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// Accounts one packet; returns flows that expired (scanned at most once
    /// per second of packet time).
    pub fn observe(&mut self, ts_ns: u64, p: &Parsed, f: &[u8], wire_len: u32) -> Vec<FlowRecord> {
        let mut out = Vec::new();
        self.changes += 1;
        if ts_ns.saturating_sub(self.last_scan_ns) >= NS {
            self.last_scan_ns = ts_ns;
            out = self.expire(ts_ns);
        }
        let Some(key) = FlowKey::of(p, f) else {
            return out;
        };
        let Some(l3) = p.l3 else { return out };
        let octets = match l3.version {
            IpVersion::V4 => f
                .get(l3.offset + 2..l3.offset + 4)
                .map(|b| u64::from(u16::from_be_bytes([b[0], b[1]]))),
            IpVersion::V6 => f
                .get(l3.offset + 4..l3.offset + 6)
                .map(|b| u64::from(u16::from_be_bytes([b[0], b[1]])) + 40),
        }
        .unwrap_or_else(|| u64::from(wire_len).saturating_sub(l3.offset as u64));
        let flags = p.tcp_flags(f);
        if self.cfg.biflow && !self.flows.contains_key(&key) {
            if let Some(r) = self.flows.get_mut(&key.reversed()) {
                r.rev_packets += 1;
                r.rev_octets += octets;
                r.rev_tcp_flags |= flags;
                r.end_ns = r.end_ns.max(ts_ns);
                return out;
            }
        }
        let r = self.flows.entry(key).or_insert(FlowRecord {
            key,
            start_ns: ts_ns,
            end_ns: ts_ns,
            packets: 0,
            octets: 0,
            tcp_flags: 0,
            rev_packets: 0,
            rev_octets: 0,
            rev_tcp_flags: 0,
            end_reason: EndReason::Idle,
        });
        r.packets += 1;
        r.octets += octets;
        r.tcp_flags |= flags;
        r.end_ns = r.end_ns.max(ts_ns);
        out
    }

    /// Removes and returns flows past their idle or active timeout at `now_ns`.
    pub fn expire(&mut self, now_ns: u64) -> Vec<FlowRecord> {
        let idle = self.cfg.idle_timeout_s * NS;
        let active = self.cfg.active_timeout_s * NS;
        let mut out = Vec::new();
        self.flows.retain(|_, r| {
            let reason = if now_ns.saturating_sub(r.end_ns) >= idle {
                EndReason::Idle
            } else if now_ns.saturating_sub(r.start_ns) >= active {
                EndReason::Active
            } else {
                return true;
            };
            out.push(FlowRecord {
                end_reason: reason,
                ..*r
            });
            false
        });
        if !out.is_empty() {
            self.changes += 1;
        }
        out.sort_by_key(|r| r.start_ns);
        out
    }

    /// Removes and returns every flow (end of capture).
    pub fn flush(&mut self) -> Vec<FlowRecord> {
        let mut out: Vec<FlowRecord> = self
            .flows
            .drain()
            .map(|(_, r)| FlowRecord {
                end_reason: EndReason::Forced,
                ..r
            })
            .collect();
        self.changes += 1;
        out.sort_by_key(|r| r.start_ns);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::tests::udp4;

    #[test]
    fn uniflow_biflow_and_timeouts() {
        let a = udp4([10, 0, 0, 1], [10, 0, 0, 2], 1000, 53, b"q");
        let b = udp4([10, 0, 0, 2], [10, 0, 0, 1], 53, 1000, b"answer");
        let (pa, pb) = (Parsed::ethernet(&a), Parsed::ethernet(&b));
        for biflow in [false, true] {
            let mut t = FlowTable::new(FlowConfig {
                idle_timeout_s: 5,
                active_timeout_s: 30,
                biflow,
            });
            t.observe(NS, &pa, &a, a.len() as u32);
            t.observe(2 * NS, &pb, &b, b.len() as u32);
            assert_eq!(t.len(), if biflow { 1 } else { 2 });
            let e = t.observe(10 * NS, &pa, &a, a.len() as u32);
            assert_eq!(e.len(), if biflow { 1 } else { 2 });
            assert_eq!(e[0].end_reason, EndReason::Idle);
            if biflow {
                assert_eq!(
                    (e[0].packets, e[0].octets, e[0].rev_packets, e[0].rev_octets),
                    (1, 29, 1, 34)
                );
            }
            for i in 11..50 {
                t.observe(i * NS, &pa, &a, a.len() as u32);
            }
            let f = t.flush();
            assert_eq!(f.iter().map(|r| r.packets).sum::<u64>(), 39 - 30 + 1);
        }
    }
}
