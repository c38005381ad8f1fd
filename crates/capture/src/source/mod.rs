//! Live packet sources.

pub mod afpacket;

pub use afpacket::{AfPacket, AfPacketConfig, FanoutMode, SourceError, SourceStats};
