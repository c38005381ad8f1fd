//! `rate`: the window's sum per second.
//!
//! One column, `<prefix>_rate`, double: the sum of the window's values divided
//! by the window's duration in seconds. A window runs from the previous emit
//! to this one; the first window starts at time 0, the client's start (the
//! time base of every `ts`), so a counter injected since start-up is not
//! over-reported. An empty window gives 0. A window of zero or negative
//! duration (two emits at the same instant) gives NaN.
//!
//! Typical use: a field carrying bytes per packet gives bytes per second.

use omsp::{OmlType, Value, ValueRef};

use crate::props::Props;
use crate::value::{require_numeric, to_f64};
use crate::{Filter, FilterError, Output, Property};

/// The `rate` filter.
pub(crate) struct Rate {
    /// `_rate`.
    outputs: [Output; 1],
    /// This window's sum.
    sum: f64,
    /// When this window started: the previous emit's `now`, or 0.
    start: f64,
}

impl Rate {
    /// Creates the filter; it takes a numeric input and no properties.
    pub(crate) fn new(input: OmlType, props: &[Property]) -> Result<Self, FilterError> {
        require_numeric("rate", input)?;
        Props::new("rate", props, &[])?;
        Ok(Rate {
            outputs: [Output::named("rate", OmlType::Double)],
            sum: 0.0,
            start: 0.0,
        })
    }
}

impl Filter for Rate {
    fn outputs(&self) -> &[Output] {
        &self.outputs
    }

    fn sample(&mut self, value: ValueRef<'_>, _ts: f64) {
        if let Some(x) = to_f64(value) {
            self.sum += x;
        }
    }

    fn emit(&mut self, now: f64, out: &mut Vec<Value>) {
        let duration = now - self.start;
        let rate = if duration > 0.0 {
            self.sum / duration
        } else {
            f64::NAN
        };
        out.push(Value::Double(rate));
        self.sum = 0.0;
        self.start = now;
    }
}

#[cfg(test)]
mod tests {
    use omsp::OmlType;

    use crate::testutil::{assert_row, doubles, emit, make, window};

    #[test]
    fn sum_over_duration_since_the_previous_emit() {
        let mut f = make("rate", OmlType::UInt32);
        // First window: [0, 2] s.
        assert_row(&window(&mut *f, &[100.0, 300.0], 2.0), &doubles(&[200.0]));
        // Second window: [2, 2.5] s.
        assert_row(&window(&mut *f, &[50.0], 2.5), &doubles(&[100.0]));
        // Empty window: 0 per second.
        assert_row(&emit(&mut *f, 3.5), &doubles(&[0.0]));
        // Zero-length window.
        assert_row(&window(&mut *f, &[1.0], 3.5), &doubles(&[f64::NAN]));
    }
}
