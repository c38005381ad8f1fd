//! `quantile`: quantiles of each window from a bounded-memory sketch.
//!
//! Properties:
//! - `q`: comma-separated quantiles, each strictly between 0 and 1; default
//!   `0.5,0.9,0.99`;
//! - `accuracy`: the sketch's relative accuracy α, strictly between 0 and 1;
//!   default 0.01.
//!
//! One double column per quantile, in the order given, named `p` followed by
//! the quantile in percent without trailing zeros, with `.` written `_` so the
//! column stays a valid name: 0.5 → `<prefix>_p50`, 0.999 → `<prefix>_p99_9`.
//! Two quantiles that give the same name are an error.
//!
//! The window's values go into a DDSketch-style sketch (see `sketch.rs`):
//! the estimate of quantile q is within relative error α of the window's
//! sample at 0-based rank ⌊q·(n − 1)⌋, i.e. |estimate − x| ≤ α·|x|, and is
//! clamped to the window's exact minimum and maximum. Memory is bounded by
//! 2048 buckets per sign (16 KiB each); a window whose magnitudes span more
//! than γ^2048 (≈ 6·10^17 at α = 1%) collapses its smallest magnitudes
//! together, and only quantiles falling there lose the bound. NaN and
//! infinite samples are skipped. An empty window gives NaN.

use omsp::{OmlType, Value, ValueRef};

use crate::props::Props;
use crate::sketch::Sketch;
use crate::value::{require_numeric, to_f64};
use crate::{Filter, FilterError, Output, Property};

/// Default quantiles.
const DEFAULT_Q: &str = "0.5,0.9,0.99";
/// Default relative accuracy.
const DEFAULT_ACCURACY: &str = "0.01";
/// Most buckets per sign.
const MAX_BUCKETS: usize = 2048;

/// The `quantile` filter.
pub(crate) struct Quantile {
    /// One `_p<q>` column per quantile.
    outputs: Vec<Output>,
    /// The quantiles, in column order.
    qs: Vec<f64>,
    /// This window's sketch.
    sketch: Sketch,
}

/// The column suffix of quantile `q`: `p` + q in percent, trailing zeros
/// dropped, `.` → `_`.
fn suffix(q: f64) -> String {
    let percent = format!("{:.10}", q * 100.0);
    let percent = percent.trim_end_matches('0').trim_end_matches('.');
    format!("p{}", percent.replace('.', "_"))
}

impl Quantile {
    /// Creates the filter; it takes a numeric input and properties `q`, `accuracy`.
    pub(crate) fn new(input: OmlType, props: &[Property]) -> Result<Self, FilterError> {
        require_numeric("quantile", input)?;
        let props = Props::new("quantile", props, &["q", "accuracy"])?;
        let default = |name: &str, value: &str| Property {
            name: name.into(),
            ty: "string".into(),
            value: value.into(),
        };
        let (default_accuracy, default_q) = (
            default("accuracy", DEFAULT_ACCURACY),
            default("q", DEFAULT_Q),
        );
        let accuracy = props.get("accuracy").unwrap_or(&default_accuracy);
        let sketch = Sketch::new(props.parse_f64(accuracy)?, MAX_BUCKETS)
            .ok_or_else(|| props.bad(accuracy, "expected a number strictly between 0 and 1"))?;
        let q_prop = props.get("q").unwrap_or(&default_q);
        let bad = |reason: String| props.bad(q_prop, reason);
        let mut qs = Vec::new();
        let mut outputs: Vec<Output> = Vec::new();
        for item in q_prop.value.split(',') {
            let item = item.trim();
            let q = match item.parse::<f64>() {
                Ok(q) if q > 0.0 && q < 1.0 => q,
                _ => {
                    return Err(bad(format!(
                        "`{item}` is not a quantile strictly between 0 and 1"
                    )))
                }
            };
            let name = suffix(q);
            if name == "p0" || name == "p100" {
                return Err(bad(format!("`{item}` is too close to 0 or 1 to name")));
            }
            if outputs
                .iter()
                .any(|o| o.suffix.as_deref() == Some(name.as_str()))
            {
                return Err(bad(format!("`{item}` repeats column `{name}`")));
            }
            outputs.push(Output::named(&name, OmlType::Double));
            qs.push(q);
        }
        Ok(Quantile {
            outputs,
            qs,
            sketch,
        })
    }
}

impl Filter for Quantile {
    fn outputs(&self) -> &[Output] {
        &self.outputs
    }

    fn sample(&mut self, value: ValueRef<'_>, _ts: f64) {
        if let Some(x) = to_f64(value) {
            self.sketch.add(x);
        }
    }

    fn emit(&mut self, _now: f64, out: &mut Vec<Value>) {
        out.extend(
            self.qs
                .iter()
                .map(|q| Value::Double(self.sketch.quantile(*q))),
        );
        self.sketch.clear();
    }
}

#[cfg(test)]
mod tests {
    use omsp::{OmlType, ValueRef};

    use super::suffix;
    use crate::testutil::{assert_row, double, doubles, emit, make, make_with};
    use crate::{column_name, create, FilterError, Property};

    #[test]
    fn suffixes() {
        for (q, want) in [
            (0.5, "p50"),
            (0.9, "p90"),
            (0.99, "p99"),
            (0.999, "p99_9"),
            (0.25, "p25"),
            (0.001, "p0_1"),
            (0.9999, "p99_99"),
            (0.123456, "p12_3456"),
        ] {
            assert_eq!(suffix(q), want, "{q}");
        }
    }

    #[test]
    fn default_columns_and_one_to_ten_thousand() {
        let mut f = make("quantile", OmlType::UInt32);
        let names: Vec<_> = f.outputs().iter().map(|o| column_name("x", o)).collect();
        assert_eq!(names, ["x_p50", "x_p90", "x_p99"]);
        for x in 1..=10_000u32 {
            f.sample(ValueRef::UInt32(x), 0.0);
        }
        let row = emit(&mut *f, 1.0);
        for (got, want) in row.iter().map(double).zip([5000.0, 9000.0, 9900.0]) {
            assert!((got - want).abs() <= 0.01 * want, "{got} vs {want}");
        }
        // A new window starts empty.
        assert_row(&emit(&mut *f, 2.0), &doubles(&[f64::NAN; 3]));
    }

    #[test]
    fn custom_quantiles_and_accuracy() {
        let mut f = make_with(
            "quantile",
            OmlType::Double,
            &[("q", " 0.999, 0.1"), ("accuracy", "0.001")],
        );
        let names: Vec<_> = f.outputs().iter().map(|o| column_name("rtt", o)).collect();
        assert_eq!(names, ["rtt_p99_9", "rtt_p10"]);
        for x in 0..1000 {
            f.sample(ValueRef::Double(f64::from(x) + 1.0), 0.0);
        }
        let row = emit(&mut *f, 1.0);
        assert!((double(&row[0]) - 999.0).abs() <= 0.001 * 999.0, "{row:?}");
        assert!((double(&row[1]) - 100.0).abs() <= 0.001 * 100.0, "{row:?}");
    }

    #[test]
    fn bad_properties() {
        let p = |name: &str, value: &str| Property {
            name: name.into(),
            ty: "string".into(),
            value: value.into(),
        };
        for props in [
            vec![p("q", "0.5,1")],
            vec![p("q", "0")],
            vec![p("q", "")],
            vec![p("q", "0.5,,0.9")],
            vec![p("q", "0.5,0.50")],
            vec![p("q", "abc")],
            vec![p("q", "1e-20")],
            vec![p("accuracy", "0")],
            vec![p("accuracy", "1.5")],
        ] {
            let r = create("quantile", "x", OmlType::Double, &props);
            assert!(
                matches!(r, Err(FilterError::BadProperty { .. })),
                "{props:?}"
            );
        }
    }
}
