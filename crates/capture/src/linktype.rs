//! Link types: the framing in front of the network layer of a source.
//!
//! Every source has one link type, fixed when it opens: a capture file
//! says it in its header (pcap) or interface description block (pcapng),
//! and a live interface says it through its hardware type (`ARPHRD_*`),
//! mapped as libpcap maps it. The link type decides three things: the
//! data link for which libpcap compiles a session's filter, where
//! [`crate::packet::Parsed`] looks for the IP header, and the link type
//! written into the session's pcap and pcapng files. A link type we cannot
//! parse is refused when the source opens, with its name and number, so
//! no frame of an unknown framing is ever read as Ethernet.

/// A link type the pipeline parses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LinkType {
    /// Ethernet II / 802.3, with up to two VLAN tags (LINKTYPE 1).
    #[default]
    Ethernet,
    /// Linux cooked capture v1, 16-byte header (LINKTYPE 113).
    LinuxSll,
    /// Linux cooked capture v2, 20-byte header (LINKTYPE 276).
    LinuxSll2,
    /// BSD loopback: a 4-byte address family in host byte order (LINKTYPE 0).
    Null,
    /// OpenBSD loopback: the family in network byte order (LINKTYPE 108).
    Loop,
    /// Raw IPv4 or IPv6, told apart by the version nibble (LINKTYPE 101;
    /// the DLT values 12 and 14 mean the same).
    Raw,
    /// Raw IPv4 only (LINKTYPE 228).
    Ipv4,
    /// Raw IPv6 only (LINKTYPE 229).
    Ipv6,
    /// IEEE 802.11 frames without a radio header (LINKTYPE 105).
    Ieee80211,
    /// IEEE 802.11 frames behind a radiotap header (LINKTYPE 127).
    Radiotap,
}

/// Why a source's link type cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkTypeError {
    /// A file or handle reports a link type we do not parse.
    #[error(
        "link type {name} ({number}) is not supported; supported: {}",
        LinkType::supported_list()
    )]
    Unsupported {
        /// The link type number.
        number: u32,
        /// Its libpcap name, or "unknown".
        name: String,
    },
    /// A live interface's hardware type maps to no link type we parse.
    #[error(
        "interface {interface}: hardware type ARPHRD_{name} ({arphrd}) has no link type we parse; supported: {}",
        LinkType::supported_list()
    )]
    Hardware {
        /// The interface.
        interface: String,
        /// Its `ARPHRD_*` number.
        arphrd: u16,
        /// The `ARPHRD_*` name without the prefix, or "unknown".
        name: &'static str,
    },
}

impl LinkType {
    /// Every link type the pipeline parses.
    pub const ALL: [LinkType; 10] = [
        LinkType::Ethernet,
        LinkType::LinuxSll,
        LinkType::LinuxSll2,
        LinkType::Null,
        LinkType::Loop,
        LinkType::Raw,
        LinkType::Ipv4,
        LinkType::Ipv6,
        LinkType::Ieee80211,
        LinkType::Radiotap,
    ];

    /// The link type of a file header's or libpcap handle's number. Both
    /// numberings are accepted: LINKTYPE 101 and the DLT values 12 and 14
    /// are all raw IP.
    pub fn from_number(number: u32) -> Result<LinkType, LinkTypeError> {
        Ok(match number {
            1 => LinkType::Ethernet,
            113 => LinkType::LinuxSll,
            276 => LinkType::LinuxSll2,
            0 => LinkType::Null,
            108 => LinkType::Loop,
            12 | 14 | 101 => LinkType::Raw,
            228 => LinkType::Ipv4,
            229 => LinkType::Ipv6,
            105 => LinkType::Ieee80211,
            127 => LinkType::Radiotap,
            _ => {
                let name = i32::try_from(number)
                    .ok()
                    .and_then(|n| pcap::Linktype(n).get_name().ok())
                    .unwrap_or_else(|| "unknown".into());
                return Err(LinkTypeError::Unsupported { number, name });
            }
        })
    }

    /// The link type of a live interface with hardware type `arphrd`, as
    /// libpcap maps it for a raw packet socket.
    pub fn from_arphrd(interface: &str, arphrd: u16) -> Result<LinkType, LinkTypeError> {
        Ok(match arphrd {
            // ETHER, LOOPBACK (the kernel gives lo a zero Ethernet header).
            1 | 772 => LinkType::Ethernet,
            // SLIP, CSLIP, SLIP6, CSLIP6, ADAPT, PPP, RAWIP, TUNNEL,
            // TUNNEL6, SIT, NONE (tun, WireGuard): no link header at all.
            256..=259 | 264 | 512 | 519 | 768 | 769 | 776 | 0xfffe => LinkType::Raw,
            801 => LinkType::Ieee80211,
            803 => LinkType::Radiotap,
            _ => {
                return Err(LinkTypeError::Hardware {
                    interface: interface.to_string(),
                    arphrd,
                    name: arphrd_name(arphrd),
                })
            }
        })
    }

    /// The number written into pcap and pcapng files (LINKTYPE_*).
    pub fn number(self) -> u32 {
        match self {
            LinkType::Ethernet => 1,
            LinkType::LinuxSll => 113,
            LinkType::LinuxSll2 => 276,
            LinkType::Null => 0,
            LinkType::Loop => 108,
            LinkType::Raw => 101,
            LinkType::Ipv4 => 228,
            LinkType::Ipv6 => 229,
            LinkType::Ieee80211 => 105,
            LinkType::Radiotap => 127,
        }
    }

    /// The data link value libpcap compiles filters for (DLT_*; raw IP is
    /// DLT_RAW, 12 on Linux).
    pub fn dlt(self) -> i32 {
        match self {
            LinkType::Raw => 12,
            other => other.number() as i32,
        }
    }

    /// libpcap's name of the link type.
    pub fn name(self) -> &'static str {
        match self {
            LinkType::Ethernet => "EN10MB",
            LinkType::LinuxSll => "LINUX_SLL",
            LinkType::LinuxSll2 => "LINUX_SLL2",
            LinkType::Null => "NULL",
            LinkType::Loop => "LOOP",
            LinkType::Raw => "RAW",
            LinkType::Ipv4 => "IPV4",
            LinkType::Ipv6 => "IPV6",
            LinkType::Ieee80211 => "IEEE802_11",
            LinkType::Radiotap => "IEEE802_11_RADIO",
        }
    }

    fn supported_list() -> String {
        LinkType::ALL
            .iter()
            .map(|l| format!("{} ({})", l.name(), l.number()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl std::fmt::Display for LinkType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name(), self.number())
    }
}

/// Names of the hardware types an error is likely to meet.
fn arphrd_name(arphrd: u16) -> &'static str {
    match arphrd {
        6 => "IEEE802",
        24 => "IEEE1394",
        32 => "INFINIBAND",
        280 => "CAN",
        513 => "CISCO",
        778 => "IPGRE",
        779 => "PIMREG",
        783 => "IRDA",
        802 => "IEEE80211_PRISM",
        804 => "IEEE802154",
        820 => "PHONET",
        823 => "IP6GRE",
        824 => "NETLINK",
        825 => "6LOWPAN",
        826 => "VSOCKMON",
        0xffff => "VOID",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_round_trip_and_raw_aliases() {
        for l in LinkType::ALL {
            assert_eq!(LinkType::from_number(l.number()), Ok(l));
        }
        assert_eq!(LinkType::from_number(12), Ok(LinkType::Raw));
        assert_eq!(LinkType::from_number(14), Ok(LinkType::Raw));
        assert_eq!(LinkType::Raw.dlt(), 12);
    }

    #[test]
    fn refusals_name_the_type() {
        let e = LinkType::from_number(147).unwrap_err().to_string();
        assert!(e.contains("(147)"), "{e}");
        let e = LinkType::from_arphrd("can0", 280).unwrap_err().to_string();
        assert!(e.contains("ARPHRD_CAN (280)") && e.contains("can0"), "{e}");
    }

    #[test]
    fn hardware_types_map_as_libpcap() {
        assert_eq!(LinkType::from_arphrd("lo", 772), Ok(LinkType::Ethernet));
        assert_eq!(LinkType::from_arphrd("tun0", 0xfffe), Ok(LinkType::Raw));
        assert_eq!(LinkType::from_arphrd("ppp0", 512), Ok(LinkType::Raw));
        assert_eq!(LinkType::from_arphrd("mon0", 803), Ok(LinkType::Radiotap));
    }
}
