//! `sum` (reference): the sum of each window.
//!
//! One column, `<prefix>_sum`, double; 0 for an empty window.

use omsp::{OmlType, Value, ValueRef};

use crate::props::Props;
use crate::value::{require_numeric, to_f64};
use crate::{Filter, FilterError, Output, Property};

/// The `sum` filter.
pub(crate) struct Sum {
    /// `_sum`.
    outputs: [Output; 1],
    /// This window's running sum.
    sum: f64,
}

impl Sum {
    /// Creates the filter; it takes a numeric input and no properties.
    pub(crate) fn new(input: OmlType, props: &[Property]) -> Result<Self, FilterError> {
        require_numeric("sum", input)?;
        Props::new("sum", props, &[])?;
        Ok(Sum {
            outputs: [Output::named("sum", OmlType::Double)],
            sum: 0.0,
        })
    }
}

impl Filter for Sum {
    fn outputs(&self) -> &[Output] {
        &self.outputs
    }

    fn sample(&mut self, value: ValueRef<'_>, _ts: f64) {
        if let Some(x) = to_f64(value) {
            self.sum += x;
        }
    }

    fn emit(&mut self, _now: f64, out: &mut Vec<Value>) {
        out.push(Value::Double(std::mem::take(&mut self.sum)));
    }
}

#[cfg(test)]
mod tests {
    use omsp::OmlType;

    use crate::testutil::{assert_row, doubles, emit, make, window};

    #[test]
    fn sums_per_window_and_zero_when_empty() {
        let mut f = make("sum", OmlType::Int64);
        assert_row(&emit(&mut *f, 0.0), &doubles(&[0.0]));
        assert_row(&window(&mut *f, &[1.0, 2.0, 3.5], 1.0), &doubles(&[6.5]));
        assert_row(&window(&mut *f, &[-1.0], 2.0), &doubles(&[-1.0]));
        assert_row(&emit(&mut *f, 3.0), &doubles(&[0.0]));
    }
}
