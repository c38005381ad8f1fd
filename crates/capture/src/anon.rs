//! In-packet address anonymisation with checksum fix-ups.
//!
//! The chosen IP address fields are rewritten with Crypto-PAn; the IPv4
//! header checksum and the TCP/UDP/ICMPv6 checksums (whose pseudo-header
//! covers the addresses) are updated incrementally (RFC 1624), so the
//! rewritten packet verifies exactly when the original did. A UDP checksum of
//! zero ("none") stays zero. Bytes of an address only partly inside the
//! captured data are zeroed, never stored in clear.
//!
//! Addresses can also hide elsewhere: with anonymisation on, the payload of
//! non-IP frames (ARP carries IPv4 addresses) and of ICMP/ICMPv6 messages
//! (errors quote the offending IP header) is zeroed.

use crate::checksum;
use crate::cryptopan::CryptoPan;
use crate::packet::{IpVersion, Parsed, PROTO_ICMP, PROTO_ICMPV6, PROTO_TCP, PROTO_UDP};
use serde::{Deserialize, Serialize};

/// Which address fields to anonymise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AddrFields {
    /// Source and destination.
    Both,
    /// Source only.
    Src,
    /// Destination only.
    Dst,
}

impl AddrFields {
    fn src(self) -> bool {
        matches!(self, AddrFields::Both | AddrFields::Src)
    }
    fn dst(self) -> bool {
        matches!(self, AddrFields::Both | AddrFields::Dst)
    }
}

/// Rewrites the address fields of the (possibly cut) frame `buf` in place.
/// `p` is the parse of the original frame (offsets are the same).
pub fn anonymize_frame(cp: &mut CryptoPan, fields: AddrFields, p: &Parsed, buf: &mut [u8]) {
    let Some(l3) = p.l3 else {
        // Not IP: keep L2 (and VLAN) headers only.
        let keep = p.headers_end.min(buf.len());
        buf[keep..].fill(0);
        return;
    };
    let len = l3.addr_len();
    let mut targets = [None, None];
    if fields.src() {
        targets[0] = Some(l3.src_offset());
    }
    if fields.dst() {
        targets[1] = Some(l3.dst_offset());
    }
    // Checksum locations present in the captured data.
    let ip_csum =
        (l3.version == IpVersion::V4 && buf.len() >= l3.offset + 12).then_some(l3.offset + 10);
    let l4_csum = p.l4.and_then(|l4| {
        let at = match l4.proto {
            PROTO_TCP => l4.offset + 16,
            PROTO_UDP => l4.offset + 6,
            PROTO_ICMPV6 => l4.offset + 2,
            _ => return None,
        };
        (buf.len() >= at + 2).then_some((at, l4.proto))
    });
    for at in targets.into_iter().flatten() {
        if buf.len() < at + len {
            // Partly captured address: never keep its clear bytes.
            if at < buf.len() {
                buf[at..].fill(0);
            }
            continue;
        }
        let mut old = [0u8; 16];
        old[..len].copy_from_slice(&buf[at..at + len]);
        cp.in_place(&mut buf[at..at + len]);
        let mut newb = [0u8; 16];
        newb[..len].copy_from_slice(&buf[at..at + len]);
        let new = &newb[..len];
        if let Some(c) = ip_csum {
            let v = u16::from_be_bytes([buf[c], buf[c + 1]]);
            buf[c..c + 2].copy_from_slice(&checksum::update(v, &old[..len], new).to_be_bytes());
        }
        if let Some((c, proto)) = l4_csum {
            let v = u16::from_be_bytes([buf[c], buf[c + 1]]);
            if proto == PROTO_UDP && v == 0 {
                continue;
            }
            let mut n = checksum::update(v, &old[..len], new);
            if proto == PROTO_UDP && n == 0 {
                n = 0xffff;
            }
            buf[c..c + 2].copy_from_slice(&n.to_be_bytes());
        }
    }
    if let Some(l4) = p.l4 {
        if l4.proto == PROTO_ICMP || l4.proto == PROTO_ICMPV6 {
            let from = (l4.offset + l4.header_len).min(buf.len());
            buf[from..].fill(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::{finish, sum};
    use crate::cryptopan::Key;
    use crate::packet::tests::udp4;

    #[test]
    fn checksums_stay_valid() {
        let key = Key::from_bytes([7; 32]);
        let mut cp = CryptoPan::new(&key);
        let mut f = udp4([10, 0, 0, 1], [192, 0, 2, 9], 1000, 53, b"abcde");
        let p = Parsed::ethernet(&f);
        anonymize_frame(&mut cp, AddrFields::Both, &p, &mut f);
        let ip = &f[14..34];
        assert_eq!(finish(sum(ip, 0)), 0, "IPv4 header checksum");
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&ip[12..20]);
        pseudo.extend_from_slice(&[0, 17, 0, 13]);
        assert_eq!(finish(sum(&f[34..], sum(&pseudo, 0))), 0, "UDP checksum");
        let expect = cp.ipv4("10.0.0.1".parse().unwrap()).octets();
        assert_eq!(&f[26..30], &expect);
    }

    #[test]
    fn partial_address_is_zeroed() {
        let mut cp = CryptoPan::new(&Key::from_bytes([1; 32]));
        let f = udp4([10, 0, 0, 1], [192, 0, 2, 9], 1000, 53, b"");
        let p = Parsed::ethernet(&f);
        let mut b = f[..32].to_vec();
        anonymize_frame(&mut cp, AddrFields::Both, &p, &mut b);
        assert_eq!(&b[30..32], &[0, 0]);
    }
}
