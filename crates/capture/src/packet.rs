//! Packet model: where each header of a frame starts and ends.
//!
//! The link layer depends on the source's [`LinkType`]: Ethernet (with VLAN
//! tags), Linux cooked v1/v2, BSD loopback, raw IP, or 802.11 data frames
//! (behind a radiotap header or not) whose LLC/SNAP header names the
//! network protocol. From the network layer on, every link type is parsed
//! the same way.
//!
//! Parsing never copies and never panics: every read is bounds-checked, and a
//! truncated or malformed header simply ends the parse at the last complete
//! layer. Later stages (cut, zero, anonymise) use the recorded offsets to
//! rewrite the frame in place.

/// EtherType of IPv4.
pub const ETH_IPV4: u16 = 0x0800;
/// EtherType of IPv6.
pub const ETH_IPV6: u16 = 0x86dd;
/// EtherType of an 802.1Q customer VLAN tag.
pub const ETH_VLAN: u16 = 0x8100;
/// EtherType of an 802.1ad service VLAN tag (QinQ outer tag).
pub const ETH_QINQ: u16 = 0x88a8;
use crate::linktype::LinkType;

/// IP protocol number of ICMP.
pub const PROTO_ICMP: u8 = 1;
/// IP protocol number of TCP.
pub const PROTO_TCP: u8 = 6;
/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;
/// IP protocol number of ICMPv6.
pub const PROTO_ICMPV6: u8 = 58;

/// Network-layer version of a parsed frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpVersion {
    /// IPv4 (RFC 791).
    V4,
    /// IPv6 (RFC 8200).
    V6,
}

/// The network layer of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L3 {
    /// Byte offset of the IP header in the frame.
    pub offset: usize,
    /// IPv4 or IPv6.
    pub version: IpVersion,
    /// Length of the fixed IP header (IPv4: IHL*4 including options; IPv6: 40).
    pub header_len: usize,
    /// Offset just past the last extension header (IPv6) or the IPv4 header:
    /// where the transport header starts.
    pub upper_offset: usize,
    /// Transport protocol number after skipping IPv6 extension headers.
    pub proto: u8,
    /// False for IPv4/IPv6 fragments other than the first: no transport header.
    pub first_fragment: bool,
}

impl L3 {
    /// Offset of the source address.
    pub fn src_offset(&self) -> usize {
        match self.version {
            IpVersion::V4 => self.offset + 12,
            IpVersion::V6 => self.offset + 8,
        }
    }
    /// Offset of the destination address.
    pub fn dst_offset(&self) -> usize {
        match self.version {
            IpVersion::V4 => self.offset + 16,
            IpVersion::V6 => self.offset + 24,
        }
    }
    /// Address length in bytes (4 or 16).
    pub fn addr_len(&self) -> usize {
        match self.version {
            IpVersion::V4 => 4,
            IpVersion::V6 => 16,
        }
    }
}

/// The transport layer of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L4 {
    /// Byte offset of the transport header.
    pub offset: usize,
    /// Protocol number (TCP, UDP, ICMP, ICMPv6).
    pub proto: u8,
    /// Header length (TCP data offset*4, UDP 8, ICMP 8).
    pub header_len: usize,
}

/// Offsets of the headers of one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Parsed {
    /// VLAN IDs (outer first) of up to two tags; 0 when absent.
    pub vlans: [u16; 2],
    /// Number of VLAN tags seen (0..=2; further tags stop the parse).
    pub vlan_count: u8,
    /// Offset of the first VLAN tag's control information (TCI); tag `i`
    /// is at `vlan_at + 4 * i`. Meaningful when `vlan_count > 0`.
    pub vlan_at: usize,
    /// Byte ranges holding link-layer addresses (Ethernet MACs, the cooked
    /// header's source address, 802.11 addresses); empty ranges when none.
    /// Field selection zeroes them unless `eth.addrs` is kept.
    pub link_addrs: [(usize, usize); 2],
    /// Network protocol as an EtherType (after the VLAN tags; for loopback
    /// and raw IP the one the family or version nibble names), 0 if unknown.
    pub ethertype: u16,
    /// Network layer, when the frame carries complete IPv4/IPv6 headers.
    pub l3: Option<L3>,
    /// Transport layer, when complete.
    pub l4: Option<L4>,
    /// Offset of the first byte after all parsed headers (L2..L4): the payload.
    pub headers_end: usize,
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at + 2)?;
    Some(u16::from_be_bytes([s[0], s[1]]))
}

fn le16(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at + 2)?;
    Some(u16::from_le_bytes([s[0], s[1]]))
}

/// The EtherType a BSD loopback address family stands for. The family is
/// read in either byte order (files from big- and little-endian hosts);
/// IPv6 is any of the BSDs' numbers (24, 28, 30), as libpcap's filters on
/// capture files and Wireshark take them.
fn loopback_family(f: &[u8]) -> Option<u16> {
    let s = f.get(0..4)?;
    let le = u32::from_le_bytes([s[0], s[1], s[2], s[3]]);
    let be = u32::from_be_bytes([s[0], s[1], s[2], s[3]]);
    match le.min(be) {
        2 => Some(ETH_IPV4),
        24 | 28 | 30 => Some(ETH_IPV6),
        _ => None,
    }
}

/// True when a radiotap header has the Flags field with the data-pad bit
/// (0x20): some drivers pad the 802.11 header to a multiple of 4 bytes.
fn radiotap_datapad(f: &[u8]) -> bool {
    let word = |at: usize| {
        f.get(at..at + 4)
            .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    };
    let Some(present) = word(4) else { return false };
    if present & 2 == 0 {
        return false;
    }
    // Extended presence words follow while bit 31 is set (at most 8 here).
    let mut at = 8;
    let mut w = present;
    while w & (1 << 31) != 0 && at < 40 {
        let Some(next) = word(at) else { return false };
        w = next;
        at += 4;
    }
    if present & 1 != 0 {
        // TSFT: 8 bytes, 8-aligned, before the flags.
        at = at.next_multiple_of(8) + 8;
    }
    f.get(at).is_some_and(|&flags| flags & 0x20 != 0)
}

impl Parsed {
    /// Parses an Ethernet frame. Never panics; stops at the first incomplete header.
    pub fn ethernet(frame: &[u8]) -> Parsed {
        Parsed::parse(LinkType::Ethernet, frame)
    }

    /// Parses a frame of link type `link`. Never panics; stops at the
    /// first incomplete header.
    pub fn parse(link: LinkType, frame: &[u8]) -> Parsed {
        let mut p = Parsed::default();
        match link {
            LinkType::Ethernet => {
                p.link_addrs[0] = (0, 12.min(frame.len()));
                p.ether(frame, 12, 14);
            }
            LinkType::LinuxSll => {
                // Packet type, ARPHRD, address length, 8 address bytes, protocol.
                p.link_addrs[0] = (6, 14.min(frame.len()).max(6));
                p.ether(frame, 14, 16);
            }
            LinkType::LinuxSll2 => {
                // Protocol, reserved, ifindex, ARPHRD, packet type, address length, address.
                p.link_addrs[0] = (12, 20.min(frame.len()).max(12));
                p.ether(frame, 0, 20);
            }
            LinkType::Null | LinkType::Loop => match loopback_family(frame) {
                Some(et) => p.network(frame, et, 4),
                None => p.headers_end = frame.len().min(4),
            },
            LinkType::Raw => match frame.first().map(|b| b >> 4) {
                Some(4) => p.network(frame, ETH_IPV4, 0),
                Some(6) => p.network(frame, ETH_IPV6, 0),
                _ => {}
            },
            LinkType::Ipv4 => p.network(frame, ETH_IPV4, 0),
            LinkType::Ipv6 => p.network(frame, ETH_IPV6, 0),
            LinkType::Ieee80211 => p.wifi(frame, 0, false),
            LinkType::Radiotap => {
                // Version 0, pad, little-endian length of the whole radiotap header.
                match (frame.first(), le16(frame, 2)) {
                    (Some(0), Some(len)) if usize::from(len) >= 8 => {
                        p.wifi(frame, usize::from(len), radiotap_datapad(frame))
                    }
                    _ => p.headers_end = frame.len(),
                }
            }
        }
        p
    }

    /// An 802.11 frame at `at`: data frames carry an LLC/SNAP header whose
    /// EtherType names the network protocol; other frames end the parse
    /// after their MAC header.
    fn wifi(&mut self, f: &[u8], at: usize, datapad: bool) {
        self.headers_end = f.len().min(at);
        let (Some(&fc), Some(&flags)) = (f.get(at), f.get(at + 1)) else {
            return;
        };
        let (ftype, subtype) = ((fc >> 2) & 3, fc >> 4);
        // Management and data frames have a 24-byte MAC header at least;
        // control frames vary and carry no data.
        if ftype != 0 && ftype != 2 {
            return;
        }
        let mut hdr = 24;
        self.link_addrs[0] = (at + 4, (at + 22).min(f.len()).max(at + 4));
        if ftype == 0 {
            self.headers_end = f.len().min(at + hdr);
            return;
        }
        if flags & 3 == 3 {
            // To and from the distribution system: a fourth address.
            self.link_addrs[1] = (at + 24, (at + 30).min(f.len()).max(at + 24));
            hdr += 6;
        }
        if subtype & 8 != 0 {
            // QoS control, and HT control when the order bit is set.
            hdr += 2;
            if flags & 0x80 != 0 {
                hdr += 4;
            }
        }
        if datapad {
            // The radiotap flags say the MAC header is padded to 32 bits.
            hdr = hdr.next_multiple_of(4);
        }
        let body = at + hdr;
        self.headers_end = f.len().min(body);
        // Null-function subtypes carry no body; protected bodies are encrypted.
        if subtype & 4 != 0 || flags & 0x40 != 0 || f.len() < body {
            return;
        }
        match f.get(body..body + 6) {
            Some([0xaa, 0xaa, 0x03, 0, 0, 0]) | Some([0xaa, 0xaa, 0x03, 0, 0, 0xf8]) => {
                self.ether(f, body + 6, body + 8)
            }
            _ => {}
        }
    }

    /// An EtherType at `et_at`, its payload at `off`: VLAN tags (each
    /// a TCI and the next EtherType), then the network layer.
    fn ether(&mut self, frame: &[u8], et_at: usize, mut off: usize) {
        let p = self;
        let Some(mut et) = be16(frame, et_at) else {
            p.headers_end = frame.len();
            return;
        };
        if frame.len() < off {
            p.ethertype = et;
            p.headers_end = frame.len();
            return;
        }
        p.vlan_at = off;
        while et == ETH_VLAN || et == ETH_QINQ {
            let (Some(tci), Some(next)) = (be16(frame, off), be16(frame, off + 2)) else {
                p.ethertype = et;
                p.headers_end = frame.len().min(off);
                return;
            };
            if (p.vlan_count as usize) < 2 {
                p.vlans[p.vlan_count as usize] = tci & 0x0fff;
                p.vlan_count += 1;
            } else {
                break;
            }
            et = next;
            off += 4;
        }
        p.network(frame, et, off);
    }

    /// The network protocol `et` starting at `off`.
    fn network(&mut self, frame: &[u8], et: u16, off: usize) {
        self.ethertype = et;
        self.headers_end = off.min(frame.len());
        match et {
            ETH_IPV4 => self.parse_v4(frame, off),
            ETH_IPV6 => self.parse_v6(frame, off),
            _ => {}
        }
    }

    fn parse_v4(&mut self, f: &[u8], off: usize) {
        let Some(&vihl) = f.get(off) else { return };
        if vihl >> 4 != 4 {
            return;
        }
        let ihl = usize::from(vihl & 0x0f) * 4;
        if ihl < 20 || f.len() < off + ihl {
            return;
        }
        let frag = be16(f, off + 6).unwrap_or(0) & 0x1fff;
        let proto = f[off + 9];
        self.l3 = Some(L3 {
            offset: off,
            version: IpVersion::V4,
            header_len: ihl,
            upper_offset: off + ihl,
            proto,
            first_fragment: frag == 0,
        });
        self.headers_end = off + ihl;
        if frag == 0 {
            self.parse_l4(f, off + ihl, proto);
        }
    }

    fn parse_v6(&mut self, f: &[u8], off: usize) {
        if f.len() < off + 40 || f[off] >> 4 != 6 {
            return;
        }
        let mut next = f[off + 6];
        let mut at = off + 40;
        let mut first_fragment = true;
        // Bounded walk: at most 8 extension headers.
        for _ in 0..8 {
            match next {
                0 | 43 | 60 => {
                    // Hop-by-hop, routing, destination options: (len+1)*8 bytes.
                    let (Some(&nh), Some(&len)) = (f.get(at), f.get(at + 1)) else {
                        return;
                    };
                    let end = at + (usize::from(len) + 1) * 8;
                    if end > f.len() {
                        return;
                    }
                    next = nh;
                    at = end;
                }
                44 => {
                    // Fragment header: 8 bytes.
                    if at + 8 > f.len() {
                        return;
                    }
                    let fo = be16(f, at + 2).unwrap_or(0) >> 3;
                    first_fragment = fo == 0;
                    next = f[at];
                    at += 8;
                }
                51 => {
                    // Authentication header: (len+2)*4 bytes.
                    let (Some(&nh), Some(&len)) = (f.get(at), f.get(at + 1)) else {
                        return;
                    };
                    let end = at + (usize::from(len) + 2) * 4;
                    if end > f.len() {
                        return;
                    }
                    next = nh;
                    at = end;
                }
                _ => break,
            }
        }
        self.l3 = Some(L3 {
            offset: off,
            version: IpVersion::V6,
            header_len: 40,
            upper_offset: at,
            proto: next,
            first_fragment,
        });
        self.headers_end = at;
        if first_fragment {
            self.parse_l4(f, at, next);
        }
    }

    fn parse_l4(&mut self, f: &[u8], off: usize, proto: u8) {
        let header_len = match proto {
            PROTO_TCP => match f.get(off + 12) {
                Some(&d) if usize::from(d >> 4) * 4 >= 20 => usize::from(d >> 4) * 4,
                _ => return,
            },
            PROTO_UDP | PROTO_ICMP | PROTO_ICMPV6 => 8,
            _ => return,
        };
        if f.len() < off + header_len {
            return;
        }
        self.l4 = Some(L4 {
            offset: off,
            proto,
            header_len,
        });
        self.headers_end = off + header_len;
    }

    /// Source and destination ports of TCP/UDP; ICMP and ICMPv6 as NetFlow
    /// collectors read them: source 0, destination type × 256 + code.
    pub fn ports(&self, f: &[u8]) -> (u16, u16) {
        match self.l4 {
            Some(l4) if l4.proto == PROTO_TCP || l4.proto == PROTO_UDP => (
                be16(f, l4.offset).unwrap_or(0),
                be16(f, l4.offset + 2).unwrap_or(0),
            ),
            Some(l4) => (0, be16(f, l4.offset).unwrap_or(0)),
            None => (0, 0),
        }
    }

    /// TCP flags byte (0 for other protocols).
    pub fn tcp_flags(&self, f: &[u8]) -> u8 {
        match self.l4 {
            Some(l4) if l4.proto == PROTO_TCP => f.get(l4.offset + 13).copied().unwrap_or(0),
            _ => 0,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Builds an Ethernet/IPv4/UDP frame with valid checksums.
    pub fn udp4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 14];
        f[12..14].copy_from_slice(&ETH_IPV4.to_be_bytes());
        let total = 20 + 8 + payload.len();
        let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, PROTO_UDP, 0, 0];
        ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        ip.extend_from_slice(&src);
        ip.extend_from_slice(&dst);
        let c = crate::checksum::finish(crate::checksum::sum(&ip, 0));
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&ip);
        let mut udp = Vec::new();
        udp.extend_from_slice(&sport.to_be_bytes());
        udp.extend_from_slice(&dport.to_be_bytes());
        udp.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        udp.extend_from_slice(&[0, 0]);
        udp.extend_from_slice(payload);
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&src);
        pseudo.extend_from_slice(&dst);
        pseudo.extend_from_slice(&[0, PROTO_UDP]);
        pseudo.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        let s = crate::checksum::sum(&pseudo, 0);
        let c = crate::checksum::finish(crate::checksum::sum(&udp, s));
        udp[6..8].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&udp);
        f
    }

    #[test]
    fn parses_vlan_ipv4_udp() {
        let mut f = udp4([10, 0, 0, 1], [10, 0, 0, 2], 1000, 53, b"hello");
        // Insert a QinQ pair of tags.
        f.splice(12..12, [0x88, 0xa8, 0x00, 0x07, 0x81, 0x00, 0x00, 0x2a]);
        let p = Parsed::ethernet(&f);
        assert_eq!(p.vlan_count, 2);
        assert_eq!(p.vlans, [7, 42]);
        let l3 = p.l3.unwrap();
        assert_eq!(l3.offset, 22);
        assert_eq!(p.l4.unwrap().offset, 42);
        assert_eq!(p.headers_end, 50);
        assert_eq!(p.ports(&f), (1000, 53));
    }

    #[test]
    fn parses_ipv6_with_extension_headers() {
        let mut f = vec![0u8; 14];
        f[12..14].copy_from_slice(&ETH_IPV6.to_be_bytes());
        let mut ip = vec![0x60, 0, 0, 0, 0, 0, 0 /* hop-by-hop */, 64];
        ip.extend_from_slice(&[0u8; 32]);
        f.extend_from_slice(&ip);
        f.extend_from_slice(&[60, 0, 1, 4, 0, 0, 0, 0]); // hbh -> dest opts
        f.extend_from_slice(&[PROTO_TCP, 1, 0, 0, 0, 0, 0, 0]); // dest opts 16 bytes
        f.extend_from_slice(&[0u8; 8]);
        let mut tcp = [0u8; 20];
        tcp[12] = 5 << 4;
        tcp[13] = 0x12;
        f.extend_from_slice(&tcp);
        let p = Parsed::ethernet(&f);
        let l3 = p.l3.unwrap();
        assert_eq!(l3.proto, PROTO_TCP);
        assert_eq!(l3.upper_offset, 14 + 40 + 8 + 16);
        assert_eq!(p.l4.unwrap().header_len, 20);
        assert_eq!(p.tcp_flags(&f), 0x12);
    }

    /// The IPv4/UDP datagram of [`udp4`] without its Ethernet header.
    fn ip_udp() -> Vec<u8> {
        udp4([10, 0, 0, 1], [10, 0, 0, 2], 1000, 53, b"hello")[14..].to_vec()
    }

    fn framed(head: &[u8]) -> Vec<u8> {
        let mut f = head.to_vec();
        f.extend_from_slice(&ip_udp());
        f
    }

    #[test]
    fn finds_ip_behind_every_link_header() {
        let mut sll = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x08, 0x00];
        let mut sll2 = vec![
            0x08, 0x00, 0, 0, 0, 0, 0, 3, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0,
        ];
        let wifi_data = {
            // QoS data, to and from the DS (four addresses), LLC/SNAP.
            let mut h = vec![0x88, 0x03, 0, 0];
            h.extend_from_slice(&[0x11; 20]); // addr1-3, sequence control
            h.extend_from_slice(&[0x22; 6]); // addr4
            h.extend_from_slice(&[0x05, 0x00]); // QoS control
            h.extend_from_slice(&[0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00]);
            h
        };
        let radiotap = {
            let mut h = vec![0, 0, 12, 0, 0x04, 0, 0, 0, 2, 0, 0, 0];
            h.extend_from_slice(&wifi_data);
            h
        };
        let cases: [(LinkType, Vec<u8>, usize); 9] = [
            (LinkType::LinuxSll, std::mem::take(&mut sll), 16),
            (LinkType::LinuxSll2, std::mem::take(&mut sll2), 20),
            (LinkType::Null, vec![2, 0, 0, 0], 4),
            (LinkType::Null, vec![0, 0, 0, 2], 4),
            (LinkType::Loop, vec![0, 0, 0, 2], 4),
            (LinkType::Raw, vec![], 0),
            (LinkType::Ipv4, vec![], 0),
            (LinkType::Ieee80211, wifi_data.clone(), 40),
            (LinkType::Radiotap, radiotap, 52),
        ];
        for (link, head, at) in cases {
            let f = framed(&head);
            let p = Parsed::parse(link, &f);
            let l3 = p.l3.unwrap_or_else(|| panic!("{link}: no IP"));
            assert_eq!(l3.offset, at, "{link}");
            assert_eq!(p.ports(&f), (1000, 53), "{link}");
            assert_eq!(p.headers_end, at + 28, "{link}");
        }
        let p = Parsed::parse(LinkType::Ieee80211, &framed(&wifi_data));
        assert_eq!(p.link_addrs, [(4, 22), (24, 30)]);
    }

    #[test]
    fn radiotap_data_pad_aligns_the_mac_header() {
        // TSFT + Flags (data pad), then a 26-byte QoS data header padded to 28.
        let mut f = vec![0, 0, 24, 0, 0x03, 0, 0, 0];
        f.extend_from_slice(&[0; 8]); // TSFT
        f.extend_from_slice(&[0x20, 0, 0, 0, 0, 0, 0, 0]); // flags, padding
        f.extend_from_slice(&[0x88, 0x01, 0, 0]);
        f.extend_from_slice(&[0x11; 20]);
        f.extend_from_slice(&[0x05, 0x00, 0, 0]); // QoS control, pad
        f.extend_from_slice(&[0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00]);
        f.extend_from_slice(&ip_udp());
        let p = Parsed::parse(LinkType::Radiotap, &f);
        assert_eq!(p.l3.map(|l| l.offset), Some(24 + 28 + 8));
        f[16] = 0; // no data pad: the LLC header is not where it says
        assert_eq!(Parsed::parse(LinkType::Radiotap, &f).l3, None);
    }

    #[test]
    fn non_ip_frames_end_after_their_link_header() {
        // 802.11 beacon, protected data, null function; IPv6 family 10 on NULL.
        let mut beacon = vec![0x80, 0, 0, 0];
        beacon.extend_from_slice(&[0xff; 30]);
        assert_eq!(Parsed::parse(LinkType::Ieee80211, &beacon).headers_end, 24);
        let mut protected = vec![0x08, 0x41, 0, 0];
        protected.extend_from_slice(&[0; 20]);
        protected.extend_from_slice(&framed(&[0xaa, 0xaa, 3, 0, 0, 0, 8, 0]));
        assert_eq!(Parsed::parse(LinkType::Ieee80211, &protected).l3, None);
        let p = Parsed::parse(LinkType::Null, &framed(&[10, 0, 0, 0]));
        assert_eq!((p.l3, p.headers_end), (None, 4));
        assert_eq!(Parsed::parse(LinkType::Ipv6, &ip_udp()).l3, None);
    }

    proptest! {
        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let p = Parsed::ethernet(&data);
            prop_assert!(p.headers_end <= data.len().max(14));
            let _ = p.ports(&data);
            for link in LinkType::ALL {
                let p = Parsed::parse(link, &data);
                prop_assert!(p.headers_end <= data.len());
                for (a, b) in p.link_addrs {
                    prop_assert!(a <= b && b <= data.len().max(a));
                }
                if let Some(l4) = p.l4 { prop_assert!(l4.offset + l4.header_len <= data.len()); }
            }
        }

        #[test]
        fn never_panics_on_ip_like(mut data in proptest::collection::vec(any::<u8>(), 14..200), v6 in any::<bool>()) {
            let et = if v6 { ETH_IPV6 } else { ETH_IPV4 };
            data[12..14].copy_from_slice(&et.to_be_bytes());
            if data.len() > 14 { data[14] = (data[14] & 0x0f) | if v6 { 0x60 } else { 0x40 }; }
            let p = Parsed::ethernet(&data);
            prop_assert!(p.headers_end <= data.len());
            if let Some(l4) = p.l4 { prop_assert!(l4.offset + l4.header_len <= data.len()); }
        }
    }
}
