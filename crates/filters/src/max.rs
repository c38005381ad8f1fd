//! `max`: the largest value of each window.
//!
//! One column, `<prefix>_max`, double. An empty window (or one with only
//! NaN samples) gives NaN; NaN samples are otherwise skipped.

use omsp::{OmlType, Value, ValueRef};

use crate::props::Props;
use crate::value::{require_numeric, to_f64};
use crate::{Filter, FilterError, Output, Property};

/// The `max` filter.
pub(crate) struct Max {
    /// `_max`.
    outputs: [Output; 1],
    /// The largest value so far in this window, if any.
    best: Option<f64>,
}

impl Max {
    /// Creates the filter; it takes a numeric input and no properties.
    pub(crate) fn new(input: OmlType, props: &[Property]) -> Result<Self, FilterError> {
        require_numeric("max", input)?;
        Props::new("max", props, &[])?;
        Ok(Max {
            outputs: [Output::named("max", OmlType::Double)],
            best: None,
        })
    }
}

impl Filter for Max {
    fn outputs(&self) -> &[Output] {
        &self.outputs
    }

    fn sample(&mut self, value: ValueRef<'_>, _ts: f64) {
        if let Some(x) = to_f64(value).filter(|x| !x.is_nan()) {
            self.best = Some(self.best.map_or(x, |b| b.max(x)));
        }
    }

    fn emit(&mut self, _now: f64, out: &mut Vec<Value>) {
        out.push(Value::Double(self.best.take().unwrap_or(f64::NAN)));
    }
}

#[cfg(test)]
mod tests {
    use omsp::OmlType;

    use crate::testutil::{assert_row, doubles, emit, make, window};

    #[test]
    fn largest_per_window_nan_when_empty() {
        let mut f = make("max", OmlType::Double);
        assert_row(
            &window(&mut *f, &[3.0, 1.0, 4.0, 1.5], 1.0),
            &doubles(&[4.0]),
        );
        assert_row(&emit(&mut *f, 2.0), &doubles(&[f64::NAN]));
        assert_row(&window(&mut *f, &[-2.0, -9.0], 3.0), &doubles(&[-2.0]));
    }
}
