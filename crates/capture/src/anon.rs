//! In-packet address anonymisation.
//!
//! The chosen IP address fields are rewritten with Crypto-PAn, and so are
//! the addresses of the IP header an ICMP/ICMPv6 error quotes: its source
//! (the host the error goes back to, the outer destination) follows the
//! destination setting, its destination is always rewritten. Bytes of an
//! address only partly inside the captured data are zeroed, never stored in
//! clear. The caller then updates the checksums ([`crate::fixup::refresh`]).
//!
//! Addresses can also hide elsewhere: with anonymisation on, the payload of
//! non-IP frames (ARP carries IPv4 addresses) and of ICMP/ICMPv6 messages is
//! zeroed; of an error, the quoted IP header and the 8 bytes after it
//! (ports, ICMP type) are kept.

use crate::cryptopan::CryptoPan;
use crate::fixup::Quote;
use crate::packet::{Parsed, PROTO_ICMP, PROTO_ICMPV6};
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

/// Rewrites `len` address bytes at `at` (zeroes those of a partly captured one).
fn rewrite(cp: &mut CryptoPan, buf: &mut [u8], at: usize, len: usize) {
    if buf.len() >= at + len {
        cp.in_place(&mut buf[at..at + len]);
    } else if at < buf.len() {
        buf[at..].fill(0);
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
    // The quote is found before the outer addresses change (they do not
    // matter to it, but the parse reads the original bytes).
    let quote = Quote::of(p, buf);
    if fields.src() {
        rewrite(cp, buf, l3.src_offset(), l3.addr_len());
    }
    if fields.dst() {
        rewrite(cp, buf, l3.dst_offset(), l3.addr_len());
    }
    let Some(l4) = p.l4 else { return };
    if l4.proto != PROTO_ICMP && l4.proto != PROTO_ICMPV6 {
        return;
    }
    let keep = match quote {
        Some(q) => {
            if fields.dst() {
                rewrite(cp, buf, q.src_offset(), q.addr_len());
            }
            rewrite(cp, buf, q.dst_offset(), q.addr_len());
            q.upper_offset() + 8
        }
        None => l4.offset + l4.header_len,
    };
    let keep = keep.min(buf.len());
    buf[keep..].fill(0);
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
        let orig = f.clone();
        anonymize_frame(&mut cp, AddrFields::Both, &p, &mut f);
        crate::fixup::refresh(&p, &orig, &mut f);
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
