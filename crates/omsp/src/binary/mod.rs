//! Binary encoding (`content: binary`): packets, type codes, DOUBLE_T.

pub mod codes;
pub(crate) mod decode;
pub mod double;
mod encode;
mod transcode;

pub use encode::{
    encode_value, encode_value_as, put_double, put_double64, BinaryEncoder, DoubleEncoding,
};
pub use transcode::{to_reference, TranscodeError};
