//! IPFIX (RFC 7011/7012): sans-I/O encoder, UDP/TCP/file exporters and
//! crash repair of IPFIX files.

pub mod encode;
pub mod export;
pub mod repair;

pub use encode::{Encoder, TimeResolution, REVERSE_PEN};
pub use export::{ExportError, Exporter, IpfixTarget};
pub use repair::{repair, IpfixRepair};
