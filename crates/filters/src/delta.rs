//! `delta` (reference): change of the last value from one window to the next.
//!
//! Columns `<prefix>_delta` and `<prefix>_last`, double. `_last` is the
//! window's last value and `_delta` is `_last` minus the previous window's
//! `_last`; the first window uses 0 as the previous value. An empty window
//! repeats the previous `_last` and so gives a `_delta` of 0.

use omsp::{OmlType, Value, ValueRef};

use crate::props::Props;
use crate::value::{require_numeric, to_f64};
use crate::{Filter, FilterError, Output, Property};

/// The `delta` filter.
pub(crate) struct Delta {
    /// `_delta`, `_last`.
    outputs: [Output; 2],
    /// The last value emitted (0 before the first window).
    previous: f64,
    /// This window's last value, if any.
    last: Option<f64>,
}

impl Delta {
    /// Creates the filter; it takes a numeric input and no properties.
    pub(crate) fn new(input: OmlType, props: &[Property]) -> Result<Self, FilterError> {
        require_numeric("delta", input)?;
        Props::new("delta", props, &[])?;
        Ok(Delta {
            outputs: [
                Output::named("delta", OmlType::Double),
                Output::named("last", OmlType::Double),
            ],
            previous: 0.0,
            last: None,
        })
    }
}

impl Filter for Delta {
    fn outputs(&self) -> &[Output] {
        &self.outputs
    }

    fn sample(&mut self, value: ValueRef<'_>, _ts: f64) {
        if let Some(x) = to_f64(value) {
            self.last = Some(x);
        }
    }

    fn emit(&mut self, _now: f64, out: &mut Vec<Value>) {
        let (delta, last) = match self.last.take() {
            Some(last) => (last - self.previous, last),
            None => (0.0, self.previous),
        };
        self.previous = last;
        out.push(Value::Double(delta));
        out.push(Value::Double(last));
    }
}

#[cfg(test)]
mod tests {
    use omsp::OmlType;

    use crate::testutil::{assert_row, doubles, emit, make, window};

    #[test]
    fn delta_against_the_previous_windows_last() {
        let mut f = make("delta", OmlType::UInt32);
        assert_row(&window(&mut *f, &[3.0, 5.0], 1.0), &doubles(&[5.0, 5.0]));
        assert_row(&window(&mut *f, &[9.0, 8.0], 2.0), &doubles(&[3.0, 8.0]));
        assert_row(&emit(&mut *f, 3.0), &doubles(&[0.0, 8.0]));
        assert_row(&window(&mut *f, &[2.0], 4.0), &doubles(&[-6.0, 2.0]));
    }

    #[test]
    fn empty_first_window_is_zero() {
        let mut f = make("delta", OmlType::Double);
        assert_row(&emit(&mut *f, 1.0), &doubles(&[0.0, 0.0]));
    }
}
