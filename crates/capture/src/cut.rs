//! Snap length, header-only capture and header field selection.
//!
//! *Header-only* keeps the link-layer headers (Ethernet and VLAN tags, the
//! cooked or loopback header, radiotap and the 802.11 MAC and LLC/SNAP
//! headers), the IP header (with IPv6 extension headers) and the
//! TCP/UDP/ICMP header, and cuts the payload. A *field selection* keeps
//! only the listed header fields and writes zeros over the others, so that
//! the stored frame keeps its layout and every file stays valid pcap. The
//! structural fields a decoder needs (EtherType, VLAN TPID, IP version and
//! header length, IPv6 next header chain, TCP data offset) are always kept.
//!
//! The record's original (wire) length is never changed; only the captured
//! length shrinks.

use crate::packet::{IpVersion, Parsed, PROTO_ICMP, PROTO_ICMPV6, PROTO_TCP, PROTO_UDP};
use serde::{Deserialize, Serialize};

/// A selectable header field. Names as in configuration files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Field {
    /// Link-layer addresses: Ethernet source and destination MACs, the
    /// source address of a Linux cooked header, the 802.11 addresses.
    #[serde(rename = "eth.addrs")]
    EthAddrs,
    /// VLAN tag control information (priority and VLAN ID) of every tag.
    #[serde(rename = "vlan.id")]
    VlanId,
    /// IPv4 TOS / IPv6 traffic class and flow label.
    #[serde(rename = "ip.tos")]
    IpTos,
    /// IPv4 total length / IPv6 payload length.
    #[serde(rename = "ip.len")]
    IpLen,
    /// IPv4 identification.
    #[serde(rename = "ip.id")]
    IpId,
    /// IPv4 flags and fragment offset.
    #[serde(rename = "ip.frag")]
    IpFrag,
    /// IPv4 TTL / IPv6 hop limit.
    #[serde(rename = "ip.ttl")]
    IpTtl,
    /// IPv4 protocol (the IPv6 next-header chain is structural and always kept).
    #[serde(rename = "ip.proto")]
    IpProto,
    /// IP source address.
    #[serde(rename = "ip.src")]
    IpSrc,
    /// IP destination address.
    #[serde(rename = "ip.dst")]
    IpDst,
    /// IPv4 options.
    #[serde(rename = "ip.options")]
    IpOptions,
    /// TCP/UDP source and destination ports.
    #[serde(rename = "ports")]
    Ports,
    /// TCP sequence number.
    #[serde(rename = "tcp.seq")]
    TcpSeq,
    /// TCP acknowledgement number.
    #[serde(rename = "tcp.ack")]
    TcpAck,
    /// TCP flags (including NS).
    #[serde(rename = "tcp.flags")]
    TcpFlags,
    /// TCP window.
    #[serde(rename = "tcp.window")]
    TcpWindow,
    /// TCP urgent pointer.
    #[serde(rename = "tcp.urgent")]
    TcpUrgent,
    /// TCP options.
    #[serde(rename = "tcp.options")]
    TcpOptions,
    /// UDP length.
    #[serde(rename = "udp.len")]
    UdpLen,
    /// ICMP/ICMPv6 type and code.
    #[serde(rename = "icmp.type")]
    IcmpType,
    /// ICMP/ICMPv6 rest of header (identifier, sequence, ...).
    #[serde(rename = "icmp.rest")]
    IcmpRest,
    /// IPv4 header checksum and TCP/UDP/ICMP checksums.
    #[serde(rename = "checksums")]
    Checksums,
}

/// A set of [`Field`]s as a bit mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FieldSet(u32);

impl FieldSet {
    /// Every field.
    pub const ALL: FieldSet = FieldSet(u32::MAX);

    /// True when `f` is in the set.
    pub fn has(self, f: Field) -> bool {
        self.0 & (1 << f as u32) != 0
    }

    /// The set plus `f`.
    pub fn with(self, f: Field) -> FieldSet {
        FieldSet(self.0 | (1 << f as u32))
    }
}

impl FromIterator<Field> for FieldSet {
    fn from_iter<T: IntoIterator<Item = Field>>(iter: T) -> Self {
        iter.into_iter().fold(FieldSet(0), FieldSet::with)
    }
}

/// The cut/zero stage of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cutter {
    /// Maximum captured bytes per frame.
    pub snaplen: u32,
    /// Keep only L2-L4 headers.
    pub header_only: bool,
    /// Header fields to keep; the others are zeroed.
    pub fields: FieldSet,
}

fn zero(buf: &mut [u8], from: usize, to: usize) {
    let to = to.min(buf.len());
    if from < to {
        buf[from..to].fill(0);
    }
}

impl Cutter {
    /// How many bytes of `frame` to keep.
    pub fn keep_len(&self, p: &Parsed, frame_len: usize) -> usize {
        let mut n = frame_len.min(self.snaplen as usize);
        if self.header_only {
            n = n.min(p.headers_end);
        }
        n
    }

    /// Zeroes the unselected header fields of `buf` (already cut) in place.
    pub fn zero_fields(&self, p: &Parsed, buf: &mut [u8]) {
        let f = self.fields;
        if f == FieldSet::ALL {
            return;
        }
        if !f.has(Field::EthAddrs) {
            for (from, to) in p.link_addrs {
                zero(buf, from, to);
            }
        }
        if !f.has(Field::VlanId) {
            for i in 0..usize::from(p.vlan_count) {
                zero(buf, p.vlan_at + 4 * i, p.vlan_at + 2 + 4 * i);
            }
        }
        let Some(l3) = p.l3 else { return };
        let o = l3.offset;
        let mut z = |field: Field, from: usize, to: usize| {
            if !f.has(field) {
                zero(buf, o + from, o + to);
            }
        };
        match l3.version {
            IpVersion::V4 => {
                z(Field::IpTos, 1, 2);
                z(Field::IpLen, 2, 4);
                z(Field::IpId, 4, 6);
                z(Field::IpFrag, 6, 8);
                z(Field::IpTtl, 8, 9);
                z(Field::IpProto, 9, 10);
                z(Field::Checksums, 10, 12);
                z(Field::IpSrc, 12, 16);
                z(Field::IpDst, 16, 20);
                z(Field::IpOptions, 20, l3.header_len);
            }
            IpVersion::V6 => {
                if !f.has(Field::IpTos) {
                    if let Some(b) = buf.get_mut(o) {
                        *b &= 0xf0;
                    }
                    zero(buf, o + 1, o + 4);
                }
                let mut z = |field: Field, from: usize, to: usize| {
                    if !f.has(field) {
                        zero(buf, o + from, o + to);
                    }
                };
                z(Field::IpLen, 4, 6);
                z(Field::IpTtl, 7, 8);
                z(Field::IpSrc, 8, 24);
                z(Field::IpDst, 24, 40);
            }
        }
        let Some(l4) = p.l4 else { return };
        let t = l4.offset;
        let mut z = |field: Field, from: usize, to: usize| {
            if !f.has(field) {
                zero(buf, t + from, t + to);
            }
        };
        match l4.proto {
            PROTO_TCP => {
                z(Field::Ports, 0, 4);
                z(Field::TcpSeq, 4, 8);
                z(Field::TcpAck, 8, 12);
                if !f.has(Field::TcpFlags) {
                    if let Some(b) = buf.get_mut(t + 12) {
                        *b &= 0xf0;
                    }
                    zero(buf, t + 13, t + 14);
                }
                let mut z = |field: Field, from: usize, to: usize| {
                    if !f.has(field) {
                        zero(buf, t + from, t + to);
                    }
                };
                z(Field::TcpWindow, 14, 16);
                z(Field::Checksums, 16, 18);
                z(Field::TcpUrgent, 18, 20);
                z(Field::TcpOptions, 20, l4.header_len);
            }
            PROTO_UDP => {
                z(Field::Ports, 0, 4);
                z(Field::UdpLen, 4, 6);
                z(Field::Checksums, 6, 8);
            }
            PROTO_ICMP | PROTO_ICMPV6 => {
                z(Field::IcmpType, 0, 2);
                z(Field::Checksums, 2, 4);
                z(Field::IcmpRest, 4, 8);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::tests::udp4;

    #[test]
    fn header_only_and_zeroing() {
        let f = udp4([10, 0, 0, 1], [10, 0, 0, 2], 1000, 53, b"payload!");
        let p = Parsed::ethernet(&f);
        let c = Cutter {
            snaplen: 65535,
            header_only: true,
            fields: [Field::IpSrc, Field::Ports].into_iter().collect(),
        };
        let n = c.keep_len(&p, f.len());
        assert_eq!(n, 42);
        let mut b = f[..n].to_vec();
        c.zero_fields(&p, &mut b);
        assert_eq!(&b[26..30], &[10, 0, 0, 1]);
        assert_eq!(&b[30..34], &[0, 0, 0, 0]);
        assert_eq!(&b[34..38], &f[34..38]);
        assert_eq!(b[14], 0x45, "version/IHL kept");
        assert_eq!(&b[12..14], &[8, 0], "ethertype kept");
        assert_eq!(b[22], 0, "ttl zeroed");
        let p2 = Parsed::ethernet(&b);
        assert_eq!(p2.l3.unwrap().upper_offset, 34);
    }

    #[test]
    fn snaplen_cuts_and_zeroing_is_bounded() {
        let f = udp4([10, 0, 0, 1], [10, 0, 0, 2], 1000, 53, b"payload!");
        let p = Parsed::ethernet(&f);
        let c = Cutter {
            snaplen: 30,
            header_only: false,
            fields: FieldSet::default(),
        };
        let n = c.keep_len(&p, f.len());
        assert_eq!(n, 30);
        let mut b = f[..n].to_vec();
        c.zero_fields(&p, &mut b);
        assert_eq!(b.len(), 30);
    }
}
