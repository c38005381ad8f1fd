//! `stddev` (reference): sample standard deviation and variance of each window.
//!
//! Columns `<prefix>_stddev` and `<prefix>_variance`, double. The variance is
//! the sample variance `M2 / (n − 1)`, accumulated with Welford's algorithm;
//! a window with at most one sample gives NaN in both columns.

use omsp::{OmlType, Value, ValueRef};

use crate::props::Props;
use crate::value::{require_numeric, to_f64};
use crate::{Filter, FilterError, Output, Property};

/// The `stddev` filter.
pub(crate) struct StdDev {
    /// `_stddev`, `_variance`.
    outputs: [Output; 2],
    /// Samples in the window.
    n: u64,
    /// Their running mean.
    mean: f64,
    /// Sum of squared deviations from the running mean.
    m2: f64,
}

impl StdDev {
    /// Creates the filter; it takes a numeric input and no properties.
    pub(crate) fn new(input: OmlType, props: &[Property]) -> Result<Self, FilterError> {
        require_numeric("stddev", input)?;
        Props::new("stddev", props, &[])?;
        Ok(StdDev {
            outputs: [
                Output::named("stddev", OmlType::Double),
                Output::named("variance", OmlType::Double),
            ],
            n: 0,
            mean: 0.0,
            m2: 0.0,
        })
    }
}

impl Filter for StdDev {
    fn outputs(&self) -> &[Output] {
        &self.outputs
    }

    fn sample(&mut self, value: ValueRef<'_>, _ts: f64) {
        if let Some(x) = to_f64(value) {
            self.n += 1;
            let d = x - self.mean;
            self.mean += d / self.n as f64;
            self.m2 += d * (x - self.mean);
        }
    }

    fn emit(&mut self, _now: f64, out: &mut Vec<Value>) {
        let variance = if self.n > 1 {
            self.m2 / (self.n - 1) as f64
        } else {
            f64::NAN
        };
        out.push(Value::Double(variance.sqrt()));
        out.push(Value::Double(variance));
        self.n = 0;
        self.mean = 0.0;
        self.m2 = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use omsp::OmlType;

    use crate::testutil::{assert_row, double, doubles, emit, make, window};

    #[test]
    fn sample_variance() {
        let mut f = make("stddev", OmlType::Double);
        let row = window(&mut *f, &[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0], 1.0);
        let var = 32.0 / 7.0;
        assert!((double(&row[1]) - var).abs() < 1e-12, "{row:?}");
        assert!((double(&row[0]) - var.sqrt()).abs() < 1e-12, "{row:?}");
        // The next window starts afresh.
        assert_row(
            &window(&mut *f, &[1.0, 3.0], 2.0),
            &doubles(&[2f64.sqrt(), 2.0]),
        );
    }

    #[test]
    fn one_sample_or_none_is_nan() {
        let mut f = make("stddev", OmlType::Int32);
        assert_row(&emit(&mut *f, 1.0), &doubles(&[f64::NAN, f64::NAN]));
        assert_row(
            &window(&mut *f, &[5.0], 2.0),
            &doubles(&[f64::NAN, f64::NAN]),
        );
    }
}
