//! Checksums of a rewritten frame.
//!
//! Anonymisation rewrites addresses (also those an ICMP error quotes) and
//! zeroes payloads; field selection zeroes header fields. [`refresh`] then
//! brings every checksum the captured bytes hold up to date: the IPv4 header
//! checksum, the TCP, UDP, ICMP and ICMPv6 checksums (with the addresses of
//! their pseudo-header), and inside an ICMP/ICMPv6 error the quoted IPv4
//! header checksum and the quoted UDP/TCP/ICMPv6 checksum. Each is updated
//! from the difference between the original and the rewritten bytes (RFC
//! 1624), so it verifies exactly when the original's did, also for a cut
//! frame whose checksummed bytes were not all captured. A checksum whose own
//! bytes were rewritten (zeroed on purpose) is left alone, and a UDP
//! checksum of zero ("none") stays zero.

use crate::checksum::update;
use crate::packet::{IpVersion, Parsed, PROTO_ICMP, PROTO_ICMPV6, PROTO_TCP, PROTO_UDP};

/// The IP header an ICMP or ICMPv6 error message quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quote {
    /// Offset of the quoted IP header in the frame.
    pub offset: usize,
    /// The quoted header is IPv6 (inside ICMPv6) or IPv4 (inside ICMP).
    pub v6: bool,
    /// Its length: IPv4 IHL × 4, 40 for IPv6.
    pub header_len: usize,
    /// Protocol of the quoted datagram (IPv6: next header of the fixed header).
    pub proto: u8,
}

impl Quote {
    /// The quote of `f` when it is an ICMP error (destination unreachable,
    /// source quench, redirect, time exceeded, parameter problem) or an
    /// ICMPv6 error (types 1-4) whose quoted header starts in the captured bytes.
    pub fn of(p: &Parsed, f: &[u8]) -> Option<Quote> {
        let (l3, l4) = (p.l3?, p.l4?);
        let ty = *f.get(l4.offset)?;
        let offset = l4.offset + 8;
        let first = *f.get(offset)?;
        let v6 = match (l3.version, l4.proto) {
            (IpVersion::V4, PROTO_ICMP) if matches!(ty, 3 | 4 | 5 | 11 | 12) => false,
            (IpVersion::V6, PROTO_ICMPV6) if (1..=4).contains(&ty) => true,
            _ => return None,
        };
        let (version, header_len, proto_at) = if v6 {
            (6, 40, offset + 6)
        } else {
            (4, usize::from(first & 0x0f) * 4, offset + 9)
        };
        if first >> 4 != version || header_len < 20 {
            return None;
        }
        Some(Quote {
            offset,
            v6,
            header_len,
            proto: f.get(proto_at).copied().unwrap_or(0),
        })
    }

    /// Offset of the quoted source address.
    pub fn src_offset(&self) -> usize {
        self.offset + if self.v6 { 8 } else { 12 }
    }

    /// Offset of the quoted destination address.
    pub fn dst_offset(&self) -> usize {
        self.src_offset() + self.addr_len()
    }

    /// 4 or 16.
    pub fn addr_len(&self) -> usize {
        if self.v6 {
            16
        } else {
            4
        }
    }

    /// Where the quoted transport header starts.
    pub fn upper_offset(&self) -> usize {
        self.offset + self.header_len
    }
}

/// Offset of the checksum within a transport header of `proto` over IPv6
/// (`v6`) or IPv4, and whether the pseudo-header (the addresses) counts in it.
fn l4_checksum(v6: bool, proto: u8) -> Option<(usize, bool)> {
    match (v6, proto) {
        (_, PROTO_TCP) => Some((16, true)),
        (_, PROTO_UDP) => Some((6, true)),
        (true, PROTO_ICMPV6) => Some((2, true)),
        (false, PROTO_ICMP) => Some((2, false)),
        _ => None,
    }
}

/// End of the IP datagram starting at `at` in `f` (its length field; the
/// captured end when the field is 0, as for TSO and jumbo frames): Ethernet
/// padding after it is in no checksum.
fn datagram_end(f: &[u8], at: usize, v6: bool) -> usize {
    let (field, base) = if v6 { (at + 4, at + 40) } else { (at + 2, at) };
    match f.get(field..field + 2) {
        Some(&[h, l]) if (h, l) != (0, 0) => base + usize::from(u16::from_be_bytes([h, l])),
        _ => f.len(),
    }
    .min(f.len())
}

/// One checksum to bring up to date.
struct Sum {
    /// Offset of the 16-bit checksum.
    at: usize,
    /// The checksummed bytes start here (an even offset of the sum).
    from: usize,
    /// ... and end here (clamped to the captured bytes).
    to: usize,
    /// The addresses of the pseudo-header, if any.
    pseudo: Option<(usize, usize)>,
    /// UDP: zero means "no checksum" and is never produced; its length
    /// field counts twice, in the header and in the pseudo-header.
    udp: bool,
}

impl Sum {
    fn apply(&self, orig: &[u8], buf: &mut [u8]) {
        let end = buf.len().min(orig.len());
        if self.at + 2 > end || buf[self.at..self.at + 2] != orig[self.at..self.at + 2] {
            return;
        }
        let old = u16::from_be_bytes([buf[self.at], buf[self.at + 1]]);
        if self.udp && old == 0 {
            return;
        }
        let mut c = old;
        if let Some((a, b)) = self.pseudo {
            let b = b.min(end);
            if a < b {
                c = update(c, &orig[a..b], &buf[a..b]);
            }
        }
        let len = self.from + 4;
        if self.udp && len + 2 <= end {
            c = update(c, &orig[len..len + 2], &buf[len..len + 2]);
        }
        let to = self.to.min(end);
        if self.from < to {
            c = update(c, &orig[self.from..to], &buf[self.from..to]);
        }
        // One's complement has two zeros; only 0xffff verifies when every
        // covered byte is zero (a zeroed echo reply), and UDP reserves 0.
        if c == 0 && c != old {
            c = 0xffff;
        }
        buf[self.at..self.at + 2].copy_from_slice(&c.to_be_bytes());
    }
}

/// Updates the checksums of `buf`, a rewritten copy of the first
/// `buf.len()` bytes of `orig` (whose parse is `p`). Innermost first: the
/// ICMP checksum covers the quoted header's checksums.
pub fn refresh(p: &Parsed, orig: &[u8], buf: &mut [u8]) {
    let Some(l3) = p.l3 else { return };
    let v6 = l3.version == IpVersion::V6;
    let n = buf.len().min(orig.len());
    let end = datagram_end(&orig[..n], l3.offset, v6);
    if let Some(q) = Quote::of(p, orig) {
        if let Some((at, pseudo)) = l4_checksum(q.v6, q.proto) {
            Sum {
                at: q.upper_offset() + at,
                from: q.upper_offset(),
                to: end,
                pseudo: pseudo.then_some((q.src_offset(), q.dst_offset() + q.addr_len())),
                udp: q.proto == PROTO_UDP,
            }
            .apply(orig, buf);
        }
        if !q.v6 {
            Sum {
                at: q.offset + 10,
                from: q.offset,
                to: (q.offset + q.header_len).min(end),
                pseudo: None,
                udp: false,
            }
            .apply(orig, buf);
        }
    }
    if let Some(l4) = p.l4 {
        if let Some((at, pseudo)) = l4_checksum(v6, l4.proto) {
            Sum {
                at: l4.offset + at,
                from: l4.offset,
                to: end,
                pseudo: pseudo.then_some((l3.src_offset(), l3.dst_offset() + l3.addr_len())),
                udp: l4.proto == PROTO_UDP,
            }
            .apply(orig, buf);
        }
    }
    if !v6 {
        Sum {
            at: l3.offset + 10,
            from: l3.offset,
            to: l3.offset + l3.header_len,
            pseudo: None,
            udp: false,
        }
        .apply(orig, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::anon::{anonymize_frame, AddrFields};
    use crate::checksum::{finish, sum};
    use crate::cryptopan::{CryptoPan, Key};
    use crate::cut::{Cutter, Field, FieldSet};

    /// Ethernet + IPv4 (`proto`) + `l4` with both checksums computed;
    /// `csum` is the offset of the transport checksum in `l4`.
    fn v4(src: [u8; 4], dst: [u8; 4], proto: u8, mut l4: Vec<u8>, csum: usize) -> Vec<u8> {
        let mut ip = vec![0x45, 0, 0, 0, 0, 7, 0x40, 0, 64, proto, 0, 0];
        ip[2..4].copy_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
        ip.extend_from_slice(&src);
        ip.extend_from_slice(&dst);
        let c = finish(sum(&ip, 0));
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        let pseudo = if proto == PROTO_ICMP {
            0
        } else {
            let mut ph = ip[12..20].to_vec();
            ph.extend_from_slice(&[0, proto]);
            ph.extend_from_slice(&(l4.len() as u16).to_be_bytes());
            sum(&ph, 0)
        };
        let c = finish(sum(&l4, pseudo));
        l4[csum..csum + 2].copy_from_slice(&c.to_be_bytes());
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        f.extend_from_slice(&ip);
        f.extend_from_slice(&l4);
        f
    }

    /// (IPv4 header, ICMP) checksums of an Ethernet/IPv4/ICMP frame verify.
    fn icmp_ok(f: &[u8]) -> (bool, bool) {
        let end = 14 + usize::from(u16::from_be_bytes([f[16], f[17]]));
        (
            finish(sum(&f[14..34], 0)) == 0,
            finish(sum(&f[34..end], 0)) == 0,
        )
    }

    fn udp_ok(f: &[u8]) -> bool {
        let mut ph = f[26..34].to_vec();
        ph.extend_from_slice(&[0, 17]);
        ph.extend_from_slice(&f[38..40]);
        finish(sum(&f[34..], sum(&ph, 0))) == 0
    }

    fn anonymise(fields: AddrFields, f: &[u8]) -> Vec<u8> {
        let mut cp = CryptoPan::new(&Key::from_bytes([9; 32]));
        let p = Parsed::ethernet(f);
        let mut b = f.to_vec();
        anonymize_frame(&mut cp, fields, &p, &mut b);
        refresh(&p, f, &mut b);
        b
    }

    #[test]
    fn all_zero_message_gets_the_zero_that_verifies() {
        // An echo reply with identifier and sequence 0 and a zeroed payload.
        let mut l4 = vec![0, 0, 0, 0, 0, 9, 0, 1];
        l4.extend_from_slice(&[0x11; 16]);
        let f = v4([10, 0, 0, 2], [10, 0, 0, 1], PROTO_ICMP, l4, 2);
        let p = Parsed::ethernet(&f);
        let cut = Cutter {
            snaplen: 1000,
            header_only: false,
            fields: [
                Field::IpSrc,
                Field::IpDst,
                Field::IpLen,
                Field::IcmpType,
                Field::Checksums,
            ]
            .into_iter()
            .collect(),
        };
        let mut cp = CryptoPan::new(&Key::from_bytes([9; 32]));
        let mut b = f.clone();
        anonymize_frame(&mut cp, AddrFields::Both, &p, &mut b);
        cut.zero_fields(&p, &mut b);
        refresh(&p, &f, &mut b);
        assert!(b[34..]
            .iter()
            .enumerate()
            .all(|(i, &x)| x == 0 || i == 2 || i == 3));
        assert_eq!(&b[36..38], &[0xff, 0xff]);
        assert_eq!(icmp_ok(&b), (true, true));
    }

    fn echo() -> Vec<u8> {
        let mut l4 = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1];
        l4.extend_from_slice(&[0xa5; 40]);
        v4([10, 0, 0, 1], [10, 0, 0, 2], PROTO_ICMP, l4, 2)
    }

    /// 10.0.0.2 tells 10.0.0.1 that port 33434 of 10.9.9.9 is unreachable.
    fn unreachable() -> (Vec<u8>, Vec<u8>) {
        let udp = v4(
            [10, 0, 0, 1],
            [10, 9, 9, 9],
            PROTO_UDP,
            {
                let mut u = vec![0x9c, 0x40, 0x82, 0x9a, 0, 13, 0, 0];
                u.extend_from_slice(b"probe");
                u
            },
            6,
        );
        let mut l4 = vec![3, 3, 0, 0, 0, 0, 0, 0];
        l4.extend_from_slice(&udp[14..14 + 28]);
        (v4([10, 0, 0, 2], [10, 0, 0, 1], PROTO_ICMP, l4, 2), udp)
    }

    #[test]
    fn echo_payload_zeroed_checksum_still_verifies() {
        let f = echo();
        assert_eq!(icmp_ok(&f), (true, true));
        let a = anonymise(AddrFields::Both, &f);
        assert_ne!(a[26..34], f[26..34]);
        assert!(a[42..].iter().all(|&b| b == 0), "payload zeroed");
        assert_eq!(icmp_ok(&a), (true, true));
        // Ethernet padding after a short datagram is in no checksum.
        let mut short = v4(
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            PROTO_ICMP,
            vec![8, 0, 0, 0, 0, 1, 0, 1],
            2,
        );
        short.extend_from_slice(&[0xee; 18]);
        let a = anonymise(AddrFields::Both, &short);
        assert_eq!(icmp_ok(&a), (true, true));
    }

    #[test]
    fn a_bad_checksum_stays_bad() {
        let mut f = echo();
        f[36] ^= 0x40;
        f[24] ^= 0x01;
        assert_eq!(icmp_ok(&f), (false, false));
        assert_eq!(icmp_ok(&anonymise(AddrFields::Both, &f)), (false, false));
    }

    #[test]
    fn quoted_header_anonymised_and_both_checksums_fixed() {
        let (f, udp) = unreachable();
        assert_eq!(icmp_ok(&f), (true, true));
        let mut cp = CryptoPan::new(&Key::from_bytes([9; 32]));
        let p = Parsed::ethernet(&f);
        let q = Quote::of(&p, &f).unwrap();
        assert_eq!((q.offset, q.v6, q.header_len, q.proto), (42, false, 20, 17));
        for (fields, inner_src_rewritten) in [(AddrFields::Both, true), (AddrFields::Src, false)] {
            let a = anonymise(fields, &f);
            assert_eq!(icmp_ok(&a), (true, true), "{fields:?}");
            assert_eq!(finish(sum(&a[42..62], 0)), 0, "quoted IPv4 header checksum");
            let clear_src = cp.ipv4("10.0.0.1".parse().unwrap()).octets();
            let inner_src = if inner_src_rewritten {
                clear_src
            } else {
                [10, 0, 0, 1]
            };
            assert_eq!(a[54..58], inner_src, "{fields:?}");
            assert_eq!(a[58..62], cp.ipv4("10.9.9.9".parse().unwrap()).octets());
            // The quoted UDP checksum is that of the rewritten datagram.
            let mut whole = udp.clone();
            whole[26..34].copy_from_slice(&a[54..62]);
            let p = Parsed::ethernet(&udp);
            refresh(&p, &udp, &mut whole);
            assert!(udp_ok(&whole));
            assert_eq!(a[62..70], whole[34..42], "{fields:?}");
        }
    }

    #[test]
    fn zeroed_fields_keep_checksums_valid_unless_zeroed_too() {
        let mut u = vec![0x9c, 0x40, 0, 53, 0, 12, 0, 0];
        u.extend_from_slice(b"abcd");
        let f = v4([10, 0, 0, 1], [10, 0, 0, 2], PROTO_UDP, u, 6);
        assert!(udp_ok(&f));
        let p = Parsed::ethernet(&f);
        let fields: FieldSet = [Field::IpSrc, Field::IpDst, Field::Checksums]
            .into_iter()
            .collect();
        let cut = Cutter {
            snaplen: 1000,
            header_only: false,
            fields,
        };
        let mut b = f.clone();
        cut.zero_fields(&p, &mut b);
        assert_eq!(
            (b[22], &b[34..36]),
            (0, &[0u8, 0][..]),
            "TTL and ports zeroed"
        );
        refresh(&p, &f, &mut b);
        assert_eq!(finish(sum(&b[14..34], 0)), 0);
        assert!(udp_ok(&b));
        // Without `checksums` they are zeroed and stay so.
        let cut = Cutter {
            fields: FieldSet::from_iter([Field::IpSrc]),
            ..cut
        };
        let mut b = f.clone();
        cut.zero_fields(&p, &mut b);
        refresh(&p, &f, &mut b);
        assert_eq!((&b[24..26], &b[40..42]), (&[0u8, 0][..], &[0u8, 0][..]));
    }

    #[test]
    fn cut_frame_updated_incrementally() {
        let mut u = vec![0x9c, 0x40, 0, 53, 0, 12, 0, 0];
        u.extend_from_slice(b"abcd");
        let f = v4([10, 0, 0, 1], [10, 0, 0, 2], PROTO_UDP, u, 6);
        let p = Parsed::ethernet(&f);
        let mut cp = CryptoPan::new(&Key::from_bytes([9; 32]));
        let mut b = f[..42].to_vec();
        anonymize_frame(&mut cp, AddrFields::Both, &p, &mut b);
        refresh(&p, &f, &mut b);
        // The same checksums as the whole frame anonymised.
        let full = anonymise(AddrFields::Both, &f);
        assert!(udp_ok(&full));
        assert_eq!(b[..], full[..42]);
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_changes_nothing_unrewritten(
            mut data in proptest::collection::vec(proptest::num::u8::ANY, 14..200),
            v6 in proptest::bool::ANY,
            icmp in proptest::bool::ANY,
            cut in 0usize..200,
        ) {
            data[12..14].copy_from_slice(if v6 { &[0x86, 0xdd] } else { &[0x08, 0x00] });
            if data.len() > 34 {
                data[14] = if v6 { 0x60 } else { 0x45 };
                if icmp { data[if v6 { 20 } else { 23 }] = if v6 { 58 } else { 1 }; }
                if icmp && !v6 { data[34] = 3; }
            }
            let p = Parsed::ethernet(&data);
            let mut b = data[..cut.min(data.len())].to_vec();
            refresh(&p, &data, &mut b);
            proptest::prop_assert_eq!(&b[..], &data[..b.len()]);
            let mut cp = CryptoPan::new(&Key::from_bytes([3; 32]));
            anonymize_frame(&mut cp, AddrFields::Both, &p, &mut b);
            refresh(&p, &data, &mut b);
        }
    }
}
