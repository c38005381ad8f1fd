//! `avg` (reference): mean, minimum and maximum of each window.
//!
//! Columns `<prefix>_avg`, `<prefix>_min`, `<prefix>_max`, all double. An
//! empty window gives NaN in all three. A NaN sample makes the mean NaN; the
//! minimum and maximum skip it.

use omsp::{OmlType, Value, ValueRef};

use crate::props::Props;
use crate::value::{require_numeric, to_f64};
use crate::{Filter, FilterError, Output, Property};

/// Running mean, minimum and maximum of one window (shared with `histogram`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Summary {
    /// Samples in the window.
    n: u64,
    /// Their sum.
    sum: f64,
    /// Their minimum (`+inf` when none).
    min: f64,
    /// Their maximum (`-inf` when none).
    max: f64,
}

impl Summary {
    /// An empty window.
    pub(crate) fn new() -> Self {
        Summary {
            n: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    /// Adds one value.
    pub(crate) fn add(&mut self, x: f64) {
        self.n += 1;
        self.sum += x;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }

    /// Pushes mean, minimum and maximum (NaN when empty) and starts a new window.
    pub(crate) fn emit(&mut self, out: &mut Vec<Value>) {
        if self.n == 0 {
            out.extend((0..3).map(|_| Value::Double(f64::NAN)));
        } else {
            let (min, max) = if self.min <= self.max {
                (self.min, self.max)
            } else {
                // Only NaN samples were seen.
                (f64::NAN, f64::NAN)
            };
            out.push(Value::Double(self.sum / self.n as f64));
            out.push(Value::Double(min));
            out.push(Value::Double(max));
        }
        *self = Summary::new();
    }

    /// The three columns, for a filter's outputs.
    pub(crate) fn outputs() -> [Output; 3] {
        [
            Output::named("avg", OmlType::Double),
            Output::named("min", OmlType::Double),
            Output::named("max", OmlType::Double),
        ]
    }
}

/// The `avg` filter.
pub(crate) struct Avg {
    /// `_avg`, `_min`, `_max`.
    outputs: [Output; 3],
    /// This window's statistics.
    summary: Summary,
}

impl Avg {
    /// Creates the filter; it takes a numeric input and no properties.
    pub(crate) fn new(input: OmlType, props: &[Property]) -> Result<Self, FilterError> {
        require_numeric("avg", input)?;
        Props::new("avg", props, &[])?;
        Ok(Avg {
            outputs: Summary::outputs(),
            summary: Summary::new(),
        })
    }
}

impl Filter for Avg {
    fn outputs(&self) -> &[Output] {
        &self.outputs
    }

    fn sample(&mut self, value: ValueRef<'_>, _ts: f64) {
        if let Some(x) = to_f64(value) {
            self.summary.add(x);
        }
    }

    fn emit(&mut self, _now: f64, out: &mut Vec<Value>) {
        self.summary.emit(out);
    }
}

#[cfg(test)]
mod tests {
    use omsp::{OmlType, ValueRef};

    use crate::testutil::{assert_row, doubles, emit, make, window};

    #[test]
    fn mean_min_max_per_window() {
        let mut f = make("avg", OmlType::Double);
        let names: Vec<_> = f.outputs().iter().map(|o| o.suffix.clone()).collect();
        assert_eq!(
            names,
            [Some("avg".into()), Some("min".into()), Some("max".into())]
        );
        assert_row(
            &window(&mut *f, &[1.0, 2.0, 3.0, 4.0], 4.0),
            &doubles(&[2.5, 1.0, 4.0]),
        );
        assert_row(
            &window(&mut *f, &[-7.0], 5.0),
            &doubles(&[-7.0, -7.0, -7.0]),
        );
    }

    #[test]
    fn empty_window_is_nan() {
        let mut f = make("avg", OmlType::Int32);
        assert_row(&emit(&mut *f, 1.0), &doubles(&[f64::NAN; 3]));
        f.sample(ValueRef::Int32(3), 1.5);
        assert_row(&emit(&mut *f, 2.0), &doubles(&[3.0, 3.0, 3.0]));
        assert_row(&emit(&mut *f, 3.0), &doubles(&[f64::NAN; 3]));
    }

    #[test]
    fn any_numeric_variant_counts_and_others_are_ignored() {
        let mut f = make("avg", OmlType::UInt64);
        f.sample(ValueRef::UInt64(10), 0.0);
        f.sample(ValueRef::Int32(-2), 0.0);
        f.sample(ValueRef::Bool(true), 0.0);
        f.sample(ValueRef::String("9"), 0.0);
        assert_row(&emit(&mut *f, 1.0), &doubles(&[4.0, -2.0, 10.0]));
    }

    #[test]
    fn nan_samples_poison_the_mean_only() {
        let mut f = make("avg", OmlType::Double);
        assert_row(
            &window(&mut *f, &[f64::NAN, 2.0], 1.0),
            &doubles(&[f64::NAN, 2.0, 2.0]),
        );
        assert_row(&window(&mut *f, &[f64::NAN], 2.0), &doubles(&[f64::NAN; 3]));
    }
}
