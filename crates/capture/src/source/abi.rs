//! The parts of the kernel's AF_PACKET interface (`linux/if_packet.h`,
//! `linux/if_arp.h`) the TPACKET_V3 ring uses, kept apart from the ring's
//! logic in [`super::afpacket`].
#![allow(unsafe_code)]

pub(super) const SOL_PACKET: libc::c_int = 263;
pub(super) const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
pub(super) const PACKET_MR_PROMISC: libc::c_ushort = 1;
pub(super) const PACKET_RX_RING: libc::c_int = 5;
pub(super) const PACKET_STATISTICS: libc::c_int = 6;
pub(super) const PACKET_VERSION: libc::c_int = 10;
pub(super) const PACKET_FANOUT: libc::c_int = 18;
pub(super) const TPACKET_V3: libc::c_int = 2;
pub(super) const ETH_P_ALL: u16 = 0x0003;
pub(super) const TP_STATUS_KERNEL: u32 = 0;
pub(super) const TP_STATUS_USER: u32 = 1;
pub(super) const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
pub(super) const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;
/// `sll_pkttype` of a packet the host sends.
pub(super) const PACKET_OUTGOING: u8 = 4;
/// `ARPHRD_LOOPBACK`.
pub(super) const ARPHRD_LOOPBACK: u16 = 772;
/// Offset of the `sockaddr_ll` behind a `tpacket3_hdr` (48 bytes, 16-aligned).
pub(super) const SLL_AT: usize = 48;

#[repr(C)]
pub(super) struct TpacketReq3 {
    pub(super) tp_block_size: u32,
    pub(super) tp_block_nr: u32,
    pub(super) tp_frame_size: u32,
    pub(super) tp_frame_nr: u32,
    pub(super) tp_retire_blk_tov: u32,
    pub(super) tp_sizeof_priv: u32,
    pub(super) tp_feature_req_word: u32,
}

#[repr(C)]
#[derive(Default)]
pub(super) struct TpacketStatsV3 {
    pub(super) tp_packets: u32,
    pub(super) tp_drops: u32,
    pub(super) tp_freeze_q_cnt: u32,
}

#[repr(C)]
pub(super) struct PacketMreq {
    pub(super) mr_ifindex: libc::c_int,
    pub(super) mr_type: libc::c_ushort,
    pub(super) mr_alen: libc::c_ushort,
    pub(super) mr_address: [u8; 8],
}

/// `setsockopt(2)` with a value of type `T`; returns the call's result.
pub(super) fn setsockopt<T>(
    fd: libc::c_int,
    level: libc::c_int,
    name: libc::c_int,
    v: &T,
) -> libc::c_int {
    // SAFETY: v points to a live T of the given size.
    unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (v as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    }
}
