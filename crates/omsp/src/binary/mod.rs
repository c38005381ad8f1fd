//! Binary encoding (`content: binary`): packets, type codes, DOUBLE_T.

pub mod codes;
pub(crate) mod decode;
pub mod double;
mod encode;

pub use encode::{encode_value, put_double, BinaryEncoder};
