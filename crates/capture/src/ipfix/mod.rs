//! IPFIX (RFC 7011/7012): sans-I/O encoder and decoder, UDP/TCP/file
//! exporters and crash repair of IPFIX files.

pub mod decode;
pub mod encode;
pub mod export;
pub mod repair;

pub use decode::{read_all, DecodeError, Decoder};
pub use encode::{Encoder, TimeResolution, REVERSE_PEN};
pub use export::{ExportError, Exporter, IpfixTarget};
pub use repair::{repair, IpfixRepair};
