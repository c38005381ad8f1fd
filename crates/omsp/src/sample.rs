//! A decoded tuple.

use crate::value::Value;

/// One tuple of a measurement stream, as it travels on the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Schema index of the stream (0 = `_experiment_metadata`).
    pub stream: u32,
    /// Sender's sequence number for this stream (liboml2 starts at 1, oml4py at 0).
    pub seq: i64,
    /// Seconds since the sender's `start-time`; NaN if the sender sent none.
    pub ts: f64,
    /// Field values in schema order, each of its field's type.
    pub values: Vec<Value>,
}

impl Sample {
    /// Equality that treats NaN as equal to NaN.
    pub fn same_as(&self, other: &Sample) -> bool {
        self.stream == other.stream
            && self.seq == other.seq
            && (self.ts.to_bits() == other.ts.to_bits()
                || (self.ts.is_nan() && other.ts.is_nan())
                || self.ts == other.ts)
            && self.values.len() == other.values.len()
            && self
                .values
                .iter()
                .zip(&other.values)
                .all(|(a, b)| a.same_as(b))
    }
}
