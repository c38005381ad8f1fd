//! Text encoding (`content: text`): tab-separated lines.

pub(crate) mod decode;
mod encode;
pub mod escape;

pub use decode::{parse_bool, parse_bool_as_reference, parse_double, parse_value, Leniency};
pub use encode::{encode_tuple, encode_value, put_double};
