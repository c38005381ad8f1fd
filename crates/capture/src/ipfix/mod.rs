//! IPFIX (RFC 7011/7012): sans-I/O encoder and UDP/TCP/file exporters.

pub mod encode;
pub mod export;

pub use encode::{Encoder, TimeResolution, REVERSE_PEN};
pub use export::{ExportError, Exporter, IpfixTarget};
