//! Live packet sources.

mod abi;
pub mod afpacket;
pub mod cooked;

pub use afpacket::{AfPacket, AfPacketConfig, FanoutMode, SourceError, SourceStats};

/// The interface name that means every interface of the network namespace
/// through one socket, as `tcpdump -i any`; its packets carry a Linux
/// cooked v2 header (`LINUX_SLL2`) naming the interface each came from.
pub const ANY: &str = "any";
