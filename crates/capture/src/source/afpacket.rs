//! AF_PACKET TPACKET_V3 packet source: a memory-mapped ring of blocks that
//! the kernel fills and hands over whole, optional fanout, and the kernel
//! drop counter from `PACKET_STATISTICS`.
//!
//! The socket is created without a protocol, the ring is set up, and only
//! then is it bound to the interface with `ETH_P_ALL`, so no packet of
//! another interface slips in. VLAN tags the NIC or kernel stripped (reported
//! in the block descriptor) are put back into the frame, so filters and files
//! see the tags as on the wire.
//!
//! The interface's hardware type (`ARPHRD_*`, read back from the bound
//! socket) gives the source's [`LinkType`] as libpcap maps it: Ethernet and
//! loopback are Ethernet, tun, PPP, SLIP and IP tunnels are raw IP, and
//! monitor-mode Wi-Fi is 802.11 with or without radiotap. Any other
//! hardware type is captured *cooked*, as libpcap does: each frame loses
//! its link header and gets a Linux cooked (v1) header built from the
//! packet's address (packet type, hardware type, source address,
//! protocol), so it is still a link type the pipeline parses.
//!
//! The interface [`ANY`] is every interface of the namespace through one
//! socket, as `tcpdump -i any`: a datagram socket bound to interface
//! index 0, whose packets come without a link header, each given a Linux
//! cooked v2 header (`LINUX_SLL2`) from its address — protocol, interface
//! index, hardware type, packet type, source address. It is never
//! promiscuous (no one interface to put in that mode), and VLAN tags the
//! kernel stripped stay stripped, as libpcap leaves them for `LINUX_SLL2`.
//!
//! On a loopback interface every packet passes the socket twice, once
//! leaving and once arriving; like libpcap, the source drops the outgoing
//! copy, on `lo` and on `any` alike.
//!
//! Linux only; needs `CAP_NET_RAW`.
#![allow(unsafe_code)]

use super::abi::*;
use super::cooked::{self, ADDR_LEN, SLL2_LEN, SLL_LEN};
use super::ANY;
use crate::linktype::LinkType;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

/// Fanout mode (how the kernel spreads packets over the group's sockets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FanoutMode {
    /// By flow hash: a flow stays on one socket.
    Hash = 0,
    /// Round robin.
    RoundRobin = 1,
    /// By receiving CPU.
    Cpu = 2,
}

/// Settings of an AF_PACKET ring.
#[derive(Debug, Clone)]
pub struct AfPacketConfig {
    /// Interface name.
    pub interface: String,
    /// Bytes per block (power of two, multiple of the page size).
    pub block_size: u32,
    /// Number of blocks in the ring.
    pub block_count: u32,
    /// Milliseconds after which the kernel retires a partly filled block.
    pub block_timeout_ms: u32,
    /// Join this fanout group (id, mode).
    pub fanout: Option<(u16, FanoutMode)>,
    /// Put the interface into promiscuous mode while the socket is open.
    pub promiscuous: bool,
}

impl AfPacketConfig {
    /// 64 blocks of 1 MiB, 10 ms block timeout, no fanout, promiscuous.
    pub fn new(interface: &str) -> AfPacketConfig {
        AfPacketConfig {
            interface: interface.to_string(),
            block_size: 1 << 20,
            block_count: 64,
            block_timeout_ms: 10,
            fanout: None,
            promiscuous: true,
        }
    }
}

/// Why the source failed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A system call failed.
    #[error("AF_PACKET on {interface}: {op}: {source}")]
    Sys {
        /// Interface name.
        interface: String,
        /// The failing step.
        op: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// The interface does not exist.
    #[error("AF_PACKET: no interface named {0:?}")]
    NoInterface(String),
}

/// Kernel statistics accumulated since the socket was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SourceStats {
    /// Packets the kernel passed to the socket (including dropped ones).
    pub packets: u64,
    /// Packets the kernel dropped because the ring was full.
    pub drops: u64,
    /// Times the ring was frozen (all blocks owned by user space).
    pub freezes: u64,
}

/// An open TPACKET_V3 ring.
pub struct AfPacket {
    /// The socket.
    fd: OwnedFd,
    /// Start of the mapped ring.
    ring: *mut u8,
    /// Length of the mapping.
    ring_len: usize,
    /// Settings.
    cfg: AfPacketConfig,
    /// Next block to read.
    next: u32,
    /// Accumulated kernel statistics (the kernel resets them on each read).
    stats: SourceStats,
    /// Frame buffer for VLAN tag re-insertion and cooked headers.
    vlan_buf: Vec<u8>,
    /// The interface's link type.
    link: LinkType,
    /// How the ring's packets become frames of that link type.
    framing: Framing,
}

/// How the ring's packets become frames of the source's link type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// As captured (VLAN tags the kernel stripped put back on Ethernet).
    Native,
    /// The link header replaced by a Linux cooked v1 header: the hardware
    /// type has no link type we parse.
    Cooked,
    /// No link header from the kernel (the `any` socket): a Linux cooked
    /// v2 header in front.
    Any,
}

/// Whether the ring's copy of a packet is kept: not the outgoing copy on
/// a loopback device, which the socket sees again arriving. libpcap drops
/// the same copies (outgoing on the loopback interface, for one interface
/// and for `any`); the hardware type says "loopback" per packet.
fn keep(pkttype: u8, hatype: u16) -> bool {
    !(pkttype == PACKET_OUTGOING && hatype == ARPHRD_LOOPBACK)
}

// The ring is only touched through &mut self.
unsafe impl Send for AfPacket {}

impl std::fmt::Debug for AfPacket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AfPacket")
            .field("interface", &self.cfg.interface)
            .finish()
    }
}

fn last_err(interface: &str, op: &'static str) -> SourceError {
    SourceError::Sys {
        interface: interface.to_string(),
        op,
        source: std::io::Error::last_os_error(),
    }
}

impl AfPacket {
    /// Opens the ring on `cfg.interface` ([`ANY`]: on every interface) in
    /// the calling thread's network namespace.
    pub fn open(cfg: AfPacketConfig) -> Result<AfPacket, SourceError> {
        let name = cfg.interface.clone();
        let any = name == ANY;
        let ifindex = if any {
            // Index 0 binds the socket to every interface.
            0
        } else {
            let cname =
                CString::new(name.clone()).map_err(|_| SourceError::NoInterface(name.clone()))?;
            // SAFETY: a valid NUL-terminated name.
            match unsafe { libc::if_nametoindex(cname.as_ptr()) } {
                0 => return Err(SourceError::NoInterface(name)),
                i => i,
            }
        };
        // Without a link header from `any`: packets of different framings
        // get a cooked header built from their address instead.
        let kind = if any {
            libc::SOCK_DGRAM
        } else {
            libc::SOCK_RAW
        };
        // SAFETY: plain FFI calls with valid arguments; results checked.
        let raw = unsafe { libc::socket(libc::AF_PACKET, kind | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(last_err(&name, "socket"));
        }
        // SAFETY: raw is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        if setsockopt(raw, SOL_PACKET, PACKET_VERSION, &TPACKET_V3) < 0 {
            return Err(last_err(&name, "PACKET_VERSION"));
        }
        let frame_size = 2048u32;
        let req = TpacketReq3 {
            tp_block_size: cfg.block_size,
            tp_block_nr: cfg.block_count,
            tp_frame_size: frame_size,
            tp_frame_nr: cfg.block_size / frame_size * cfg.block_count,
            tp_retire_blk_tov: cfg.block_timeout_ms,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        if setsockopt(raw, SOL_PACKET, PACKET_RX_RING, &req) < 0 {
            return Err(last_err(&name, "PACKET_RX_RING"));
        }
        let ring_len = cfg.block_size as usize * cfg.block_count as usize;
        // SAFETY: mapping the ring the kernel just allocated for this socket.
        let ring = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ring_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_LOCKED,
                raw,
                0,
            )
        };
        let ring = if ring == libc::MAP_FAILED {
            // MAP_LOCKED may exceed RLIMIT_MEMLOCK; retry without it.
            let r = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    ring_len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    raw,
                    0,
                )
            };
            if r == libc::MAP_FAILED {
                return Err(last_err(&name, "mmap"));
            }
            r
        } else {
            ring
        };
        let mut me = AfPacket {
            fd,
            ring: ring.cast(),
            ring_len,
            cfg,
            next: 0,
            stats: SourceStats::default(),
            vlan_buf: Vec::with_capacity(65536),
            // For one interface, read back from the bound socket below.
            link: LinkType::LinuxSll2,
            framing: Framing::Any,
        };
        // SAFETY: sockaddr_ll is plain data; zeroed is a valid start.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ETH_P_ALL.to_be();
        sll.sll_ifindex = ifindex as i32;
        let rc = unsafe {
            libc::bind(
                raw,
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(last_err(&name, "bind"));
        }
        if any {
            // LINUX_SLL2 already; no one interface to make promiscuous.
            me.join_fanout()?;
            return Ok(me);
        }
        // The bound address names the interface's hardware type.
        // SAFETY: as above; the kernel fills at most `len` bytes.
        let mut bound: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        let rc = unsafe {
            libc::getsockname(raw, (&mut bound as *mut libc::sockaddr_ll).cast(), &mut len)
        };
        if rc < 0 {
            return Err(last_err(&name, "getsockname"));
        }
        (me.link, me.framing) = match LinkType::from_arphrd(&name, bound.sll_hatype) {
            Ok(link) => (link, Framing::Native),
            Err(e) => {
                tracing::info!(interface = %name, reason = %e, "capturing in cooked mode (LINUX_SLL)");
                (LinkType::LinuxSll, Framing::Cooked)
            }
        };
        if me.cfg.promiscuous {
            let mr = PacketMreq {
                mr_ifindex: ifindex as i32,
                mr_type: PACKET_MR_PROMISC,
                mr_alen: 0,
                mr_address: [0; 8],
            };
            if setsockopt(raw, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr) < 0 {
                return Err(last_err(&name, "PACKET_ADD_MEMBERSHIP"));
            }
        }
        me.join_fanout()?;
        Ok(me)
    }

    /// Joins the configured fanout group, if any.
    fn join_fanout(&self) -> Result<(), SourceError> {
        if let Some((id, mode)) = self.cfg.fanout {
            let v: u32 = u32::from(id) | ((mode as u32) << 16);
            if setsockopt(self.fd.as_raw_fd(), SOL_PACKET, PACKET_FANOUT, &v) < 0 {
                return Err(last_err(&self.cfg.interface, "PACKET_FANOUT"));
            }
        }
        Ok(())
    }

    /// The link type of the interface's frames.
    pub fn link_type(&self) -> LinkType {
        self.link
    }

    fn block(&self, i: u32) -> *mut u8 {
        // SAFETY: i < block_count, so the offset is inside the mapping.
        unsafe { self.ring.add(i as usize * self.cfg.block_size as usize) }
    }

    fn block_status(&self, i: u32) -> &AtomicU32 {
        // SAFETY: block_status is the aligned u32 at offset 8 of the block
        // descriptor; the kernel and we hand it over with release/acquire.
        unsafe { &*(self.block(i).add(8) as *const AtomicU32) }
    }

    /// Waits up to `timeout_ms` for a block, then calls `f(ts_ns, frame,
    /// wire_len)` for each of its packets and returns the block to the
    /// kernel. Returns the number of packets delivered (0 on timeout).
    pub fn next_block(
        &mut self,
        timeout_ms: i32,
        mut f: impl FnMut(u64, &[u8], u32),
    ) -> Result<usize, SourceError> {
        let i = self.next;
        if self.block_status(i).load(Ordering::Acquire) & TP_STATUS_USER == 0 {
            let mut pfd = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN | libc::POLLERR,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let rc = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
            if rc < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    return Ok(0);
                }
                return Err(SourceError::Sys {
                    interface: self.cfg.interface.clone(),
                    op: "poll",
                    source: e,
                });
            }
            if self.block_status(i).load(Ordering::Acquire) & TP_STATUS_USER == 0 {
                return Ok(0);
            }
        }
        let base = self.block(i);
        let bs = self.cfg.block_size as usize;
        // SAFETY: reading the block descriptor and packet headers inside the
        // block, which the kernel handed to us (status USER); every offset is
        // checked against the block size before use.
        let n = unsafe {
            let num = (base.add(12) as *const u32).read();
            let mut off = (base.add(16) as *const u32).read() as usize;
            let mut delivered = 0;
            for _ in 0..num {
                if off + SLL_AT + ADDR_LEN > bs {
                    break;
                }
                let h = base.add(off);
                let rd = |o: usize| (h.add(o) as *const u32).read_unaligned();
                let next_off = rd(0) as usize;
                let ts = u64::from(rd(4)) * 1_000_000_000 + u64::from(rd(8));
                let snap = rd(12) as usize;
                let len = rd(16);
                let status = rd(20);
                let mac = (h.add(24) as *const u16).read_unaligned() as usize;
                let tci = rd(32) as u16;
                let tpid = (h.add(36) as *const u16).read_unaligned();
                let sll = std::slice::from_raw_parts(h.add(SLL_AT), ADDR_LEN);
                let hatype = u16::from_ne_bytes([sll[8], sll[9]]);
                if !keep(sll[10], hatype) {
                    // The same packet arrives again as incoming.
                } else if off + mac + snap <= bs {
                    let data = std::slice::from_raw_parts(h.add(mac), snap);
                    let net = (h.add(26) as *const u16).read_unaligned() as usize;
                    if self.framing == Framing::Any {
                        // The datagram socket starts at the network header.
                        self.vlan_buf.clear();
                        self.vlan_buf.extend_from_slice(&cooked::sll2_header(sll));
                        self.vlan_buf.extend_from_slice(data);
                        f(ts, &self.vlan_buf, len + SLL2_LEN as u32);
                    } else if self.framing == Framing::Cooked {
                        // The network header on, behind a cooked header.
                        let skip = net.saturating_sub(mac).min(snap);
                        self.vlan_buf.clear();
                        self.vlan_buf.extend_from_slice(&cooked::sll_header(sll));
                        self.vlan_buf.extend_from_slice(&data[skip..]);
                        let wire = len.saturating_sub(skip as u32) + SLL_LEN as u32;
                        f(ts, &self.vlan_buf, wire);
                    } else if status & TP_STATUS_VLAN_VALID != 0
                        && snap >= 12
                        && self.link == LinkType::Ethernet
                    {
                        let tpid = if status & TP_STATUS_VLAN_TPID_VALID != 0 {
                            tpid
                        } else {
                            0x8100
                        };
                        self.vlan_buf.clear();
                        self.vlan_buf.extend_from_slice(&data[..12]);
                        self.vlan_buf.extend_from_slice(&tpid.to_be_bytes());
                        self.vlan_buf.extend_from_slice(&tci.to_be_bytes());
                        self.vlan_buf.extend_from_slice(&data[12..]);
                        f(ts, &self.vlan_buf, len + 4);
                    } else {
                        f(ts, data, len);
                    }
                    delivered += 1;
                }
                if next_off == 0 {
                    break;
                }
                off += next_off;
            }
            delivered
        };
        self.block_status(i)
            .store(TP_STATUS_KERNEL, Ordering::Release);
        self.next = (i + 1) % self.cfg.block_count;
        Ok(n)
    }

    /// Reads `PACKET_STATISTICS` (which the kernel resets) and returns the
    /// totals since the socket was opened.
    pub fn stats(&mut self) -> Result<SourceStats, SourceError> {
        let mut s = TpacketStatsV3::default();
        let mut len = std::mem::size_of::<TpacketStatsV3>() as libc::socklen_t;
        // SAFETY: s and len are valid for the kernel to fill.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                SOL_PACKET,
                PACKET_STATISTICS,
                (&mut s as *mut TpacketStatsV3).cast(),
                &mut len,
            )
        };
        if rc < 0 {
            return Err(last_err(&self.cfg.interface, "PACKET_STATISTICS"));
        }
        self.stats.packets += u64::from(s.tp_packets);
        self.stats.drops += u64::from(s.tp_drops);
        self.stats.freezes += u64::from(s.tp_freeze_q_cnt);
        Ok(self.stats)
    }
}

impl Drop for AfPacket {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping created in open; fd closes after.
        unsafe {
            libc::munmap(self.ring.cast(), self.ring_len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_outgoing_copy_on_loopback_is_dropped() {
        const HOST: u8 = 0;
        assert!(!keep(PACKET_OUTGOING, ARPHRD_LOOPBACK));
        assert!(keep(HOST, ARPHRD_LOOPBACK));
        assert!(keep(PACKET_OUTGOING, 1), "outgoing on Ethernet is kept");
    }
}
