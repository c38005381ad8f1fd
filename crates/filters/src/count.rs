//! `count`: how many samples each window saw.
//!
//! One column, `<prefix>_count`, uint64; 0 for an empty window. It takes any
//! input type and counts the samples of that type.

use omsp::{OmlType, Value, ValueRef};

use crate::props::Props;
use crate::{Filter, FilterError, Output, Property};

/// The `count` filter.
pub(crate) struct Count {
    /// `_count`.
    outputs: [Output; 1],
    /// The field type; samples of other types are not counted.
    input: OmlType,
    /// Samples in this window.
    n: u64,
}

impl Count {
    /// Creates the filter; it takes any input type and no properties.
    pub(crate) fn new(input: OmlType, props: &[Property]) -> Result<Self, FilterError> {
        Props::new("count", props, &[])?;
        Ok(Count {
            outputs: [Output::named("count", OmlType::UInt64)],
            input,
            n: 0,
        })
    }
}

impl Filter for Count {
    fn outputs(&self) -> &[Output] {
        &self.outputs
    }

    fn sample(&mut self, value: ValueRef<'_>, _ts: f64) {
        if value.oml_type() == self.input {
            self.n += 1;
        }
    }

    fn emit(&mut self, _now: f64, out: &mut Vec<Value>) {
        out.push(Value::UInt64(std::mem::take(&mut self.n)));
    }
}

#[cfg(test)]
mod tests {
    use omsp::{OmlType, Value, ValueRef};

    use crate::testutil::{emit, make};

    #[test]
    fn counts_per_window() {
        let mut f = make("count", OmlType::Blob);
        f.sample(ValueRef::Blob(b"a"), 0.0);
        f.sample(ValueRef::Blob(b""), 0.1);
        f.sample(ValueRef::Int32(1), 0.2);
        assert_eq!(emit(&mut *f, 1.0), [Value::UInt64(2)]);
        assert_eq!(emit(&mut *f, 2.0), [Value::UInt64(0)]);
    }
}
