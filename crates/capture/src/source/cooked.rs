//! Linux cooked headers, built from the `sockaddr_ll` the kernel writes
//! beside each packet in the ring: family, protocol (network byte order),
//! interface index, hardware type (host byte order), packet type,
//! address length, 8 address bytes — 20 bytes.
//!
//! v1 (`LINUX_SLL`, 16 bytes) replaces the link header of an interface
//! whose hardware type has no link type we parse. v2 (`LINUX_SLL2`,
//! 20 bytes) heads every packet of the `any` source, which reads all
//! interfaces of a namespace at once: packets of different framings need
//! one header that also says which interface each came from. Both are
//! big-endian and carry only the address bytes the address length covers
//! (at most 8): the kernel writes no others, so the rest of the ring's
//! address field is stale.

/// Bytes of a packet's `sockaddr_ll` the headers are built from.
pub const ADDR_LEN: usize = 20;
/// Length of a Linux cooked v1 header.
pub const SLL_LEN: usize = 16;
/// Length of a Linux cooked v2 header.
pub const SLL2_LEN: usize = 20;

/// The fields of a packet's address the headers carry.
struct Addr<'a> {
    /// Protocol (ethertype), as the kernel wrote it: big-endian.
    protocol: [u8; 2],
    /// Interface index.
    ifindex: i32,
    /// Hardware type (`ARPHRD_*`).
    hatype: u16,
    /// Packet type (`PACKET_HOST`, `PACKET_OUTGOING`, …).
    pkttype: u8,
    /// Length of the link-layer address, as the kernel gave it (written
    /// as is, as libpcap does, even past the 8 bytes kept).
    halen: u8,
    /// The link-layer address, at most 8 bytes.
    addr: &'a [u8],
}

impl Addr<'_> {
    fn of(sll: &[u8]) -> Option<Addr<'_>> {
        if sll.len() < ADDR_LEN {
            return None;
        }
        let halen = usize::from(sll[11]).min(8);
        Some(Addr {
            protocol: [sll[2], sll[3]],
            ifindex: i32::from_ne_bytes([sll[4], sll[5], sll[6], sll[7]]),
            hatype: u16::from_ne_bytes([sll[8], sll[9]]),
            pkttype: sll[10],
            halen: sll[11],
            addr: &sll[12..12 + halen],
        })
    }
}

/// The Linux cooked v1 header libpcap builds from a packet's address
/// `sll`: packet type, hardware type, address length, address, protocol.
/// All zero when `sll` is shorter than [`ADDR_LEN`].
pub fn sll_header(sll: &[u8]) -> [u8; SLL_LEN] {
    let mut h = [0u8; SLL_LEN];
    let Some(a) = Addr::of(sll) else { return h };
    h[0..2].copy_from_slice(&u16::from(a.pkttype).to_be_bytes());
    h[2..4].copy_from_slice(&a.hatype.to_be_bytes());
    h[4..6].copy_from_slice(&u16::from(a.halen).to_be_bytes());
    h[6..6 + a.addr.len()].copy_from_slice(a.addr);
    h[14..16].copy_from_slice(&a.protocol);
    h
}

/// The Linux cooked v2 header libpcap builds from a packet's address
/// `sll`: protocol, 2 reserved zero bytes, interface index, hardware
/// type, packet type, address length, address. All zero when `sll` is
/// shorter than [`ADDR_LEN`].
pub fn sll2_header(sll: &[u8]) -> [u8; SLL2_LEN] {
    let mut h = [0u8; SLL2_LEN];
    let Some(a) = Addr::of(sll) else { return h };
    h[0..2].copy_from_slice(&a.protocol);
    h[4..8].copy_from_slice(&a.ifindex.to_be_bytes());
    h[8..10].copy_from_slice(&a.hatype.to_be_bytes());
    h[10] = a.pkttype;
    h[11] = a.halen;
    h[12..12 + a.addr.len()].copy_from_slice(a.addr);
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linktype::LinkType;
    use crate::packet::Parsed;

    /// The address of a packet of protocol 0x0800 on interface 7 of
    /// hardware type `hatype`, packet type `pkttype`, with a 6-byte
    /// address and stale bytes behind it.
    fn sll(hatype: u16, pkttype: u8) -> [u8; ADDR_LEN] {
        let mut sll = [0u8; ADDR_LEN];
        sll[0..2].copy_from_slice(&(libc::AF_PACKET as u16).to_ne_bytes());
        sll[2..4].copy_from_slice(&0x0800u16.to_be_bytes());
        sll[4..8].copy_from_slice(&7i32.to_ne_bytes());
        sll[8..10].copy_from_slice(&hatype.to_ne_bytes());
        sll[10] = pkttype;
        sll[11] = 6;
        sll[12..20].copy_from_slice(&[2, 0, 0, 0, 0, 9, 0xee, 0xee]);
        sll
    }

    #[test]
    fn v1_header_from_a_packet_address() {
        // An incoming (0) IPv4 packet on hardware type 280 (CAN).
        let h = sll_header(&sll(280, 0));
        assert_eq!(
            h,
            [0, 0, 0x01, 0x18, 0, 6, 2, 0, 0, 0, 0, 9, 0, 0, 0x08, 0x00]
        );
        let mut frame = h.to_vec();
        frame.extend_from_slice(&[0x45; 20]);
        let p = Parsed::parse(LinkType::LinuxSll, &frame);
        assert_eq!(p.ethertype, 0x0800);
        assert_eq!(p.link_addrs[0], (6, 14));
    }

    #[test]
    fn v2_header_from_a_packet_address() {
        // An outgoing (4) IPv4 packet on an Ethernet (1) interface.
        let h = sll2_header(&sll(1, 4));
        assert_eq!(
            h,
            [0x08, 0x00, 0, 0, 0, 0, 0, 7, 0, 1, 4, 6, 2, 0, 0, 0, 0, 9, 0, 0]
        );
        let mut frame = h.to_vec();
        frame.extend_from_slice(&[0x45; 20]);
        let p = Parsed::parse(LinkType::LinuxSll2, &frame);
        assert_eq!(p.ethertype, 0x0800);
        assert_eq!(p.link_addrs[0], (12, 20));
    }

    #[test]
    fn a_long_address_keeps_its_length_and_8_bytes() {
        // InfiniBand addresses are 20 bytes; the address field holds 8.
        let mut a = sll(32, 0);
        a[11] = 20;
        a[12..20].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        let h = sll2_header(&a);
        assert_eq!((h[11], &h[12..20]), (20, &[1, 2, 3, 4, 5, 6, 7, 8][..]));
        let h = sll_header(&a);
        assert_eq!((h[5], &h[6..14]), (20, &[1, 2, 3, 4, 5, 6, 7, 8][..]));
    }

    #[test]
    fn a_short_address_gives_a_zero_header() {
        assert_eq!(sll_header(&[1; 19]), [0; SLL_LEN]);
        assert_eq!(sll2_header(&[]), [0; SLL2_LEN]);
    }
}
