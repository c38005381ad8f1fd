//! `histogram`: the reference's unregistered histogram, plus optional bin counts.
//!
//! The reference source declares `<prefix>_avg`, `<prefix>_min`,
//! `<prefix>_max` (double) but never registers the filter; streamgauge keeps
//! those three columns first, with `avg`'s semantics, so configurations
//! written for it keep their columns. It takes any numeric input (the
//! reference source took only `long` and `double`).
//!
//! With a `bins` property (1 to 65535, the largest vector the wire carries),
//! a fourth column `<prefix>_hist` of type `[uint64]` holds the window's bin
//! counts. The bins split `[min, max)` into `bins` equal widths; `min`
//! defaults to 0 and `max` to `min + bins` (unit-width bins, handy for small
//! integers). Values below `min` are counted in the first bin and values at
//! or above `max` in the last, so the counts always add up to the number of
//! non-NaN samples; NaN samples are not binned. An empty window gives NaN
//! statistics and all-zero counts. `min` or `max` without `bins` is an error.

use omsp::{OmlType, Value, ValueRef};

use crate::avg::Summary;
use crate::props::Props;
use crate::value::{require_numeric, to_f64};
use crate::{Filter, FilterError, Output, Property};

/// Most bins: a vector's element count is a uint16 on the wire.
const MAX_BINS: u64 = u16::MAX as u64;

/// Fixed-width bins over `[min, max)`.
struct Bins {
    /// Lower edge of the first bin.
    min: f64,
    /// Bin width.
    width: f64,
    /// This window's counts.
    counts: Vec<u64>,
}

impl Bins {
    /// Counts `x` in its bin, clamping values outside the range into the end bins.
    fn add(&mut self, x: f64) {
        if x.is_nan() {
            return;
        }
        let last = self.counts.len().saturating_sub(1);
        let pos = ((x - self.min) / self.width).floor();
        let i = if pos < 0.0 {
            0
        } else if pos >= last as f64 {
            last
        } else {
            pos as usize
        };
        if let Some(c) = self.counts.get_mut(i) {
            *c += 1;
        }
    }
}

/// The `histogram` filter.
pub(crate) struct Histogram {
    /// `_avg`, `_min`, `_max`, then `_hist` when binning.
    outputs: Vec<Output>,
    /// This window's statistics.
    summary: Summary,
    /// The bins, when the `bins` property asked for them.
    bins: Option<Bins>,
}

impl Histogram {
    /// Creates the filter; it takes a numeric input and properties `bins`, `min`, `max`.
    pub(crate) fn new(input: OmlType, props: &[Property]) -> Result<Self, FilterError> {
        require_numeric("histogram", input)?;
        let props = Props::new("histogram", props, &["bins", "min", "max"])?;
        let mut outputs = Summary::outputs().to_vec();
        let bins = match props.get("bins") {
            None => {
                if let Some(p) = props.get("min").or_else(|| props.get("max")) {
                    return Err(props.bad(p, "needs the `bins` property"));
                }
                None
            }
            Some(p) => {
                let n = props.parse_u64(p)?;
                if !(1..=MAX_BINS).contains(&n) {
                    return Err(props.bad(p, format!("expected 1 to {MAX_BINS} bins")));
                }
                let min = props.f64("min")?.unwrap_or(0.0);
                let max = props.f64("max")?.unwrap_or(min + n as f64);
                let width = (max - min) / n as f64;
                if !(max > min && width.is_finite() && width > 0.0) {
                    let blame = props.get("max").or_else(|| props.get("min")).unwrap_or(p);
                    return Err(props.bad(blame, "`max` must be greater than `min`"));
                }
                outputs.push(Output::named("hist", OmlType::VecUInt64));
                Some(Bins {
                    min,
                    width,
                    counts: vec![0; n as usize],
                })
            }
        };
        Ok(Histogram {
            outputs,
            summary: Summary::new(),
            bins,
        })
    }
}

impl Filter for Histogram {
    fn outputs(&self) -> &[Output] {
        &self.outputs
    }

    fn sample(&mut self, value: ValueRef<'_>, _ts: f64) {
        if let Some(x) = to_f64(value) {
            self.summary.add(x);
            if let Some(bins) = &mut self.bins {
                bins.add(x);
            }
        }
    }

    fn emit(&mut self, _now: f64, out: &mut Vec<Value>) {
        self.summary.emit(out);
        if let Some(bins) = &mut self.bins {
            out.push(Value::VecUInt64(bins.counts.clone()));
            bins.counts.fill(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use omsp::{OmlType, Value};

    use crate::testutil::{assert_row, doubles, emit, make, make_with, window};
    use crate::{create, FilterError, Property};

    #[test]
    fn without_bins_it_is_avg() {
        let mut f = make("histogram", OmlType::Double);
        assert_eq!(f.outputs().len(), 3);
        assert_row(
            &window(&mut *f, &[1.0, 2.0, 3.0, 4.0], 1.0),
            &doubles(&[2.5, 1.0, 4.0]),
        );
    }

    #[test]
    fn bin_counts_with_clamping() {
        let mut f = make_with(
            "histogram",
            OmlType::Double,
            &[("bins", "4"), ("min", "0"), ("max", "2")],
        );
        let suffixes: Vec<_> = f
            .outputs()
            .iter()
            .map(|o| o.suffix.clone().unwrap())
            .collect();
        assert_eq!(suffixes, ["avg", "min", "max", "hist"]);
        assert_eq!(f.outputs()[3].ty, OmlType::VecUInt64);
        // Bins [0,.5) [.5,1) [1,1.5) [1.5,2); -1 clamps low, 2 and 7 clamp high.
        let row = window(
            &mut *f,
            &[-1.0, 0.0, 0.49, 0.5, 1.2, 1.99, 2.0, 7.0, f64::NAN],
            1.0,
        );
        assert_eq!(row[3], Value::VecUInt64(vec![3, 1, 1, 3]));
        // A new window starts with zero counts.
        let row = emit(&mut *f, 2.0);
        assert_row(&row[..3], &doubles(&[f64::NAN; 3]));
        assert_eq!(row[3], Value::VecUInt64(vec![0; 4]));
    }

    #[test]
    fn default_range_is_unit_bins_from_zero() {
        let mut f = make_with("histogram", OmlType::Int32, &[("bins", "3")]);
        let row = window(&mut *f, &[0.0, 1.0, 1.0, 2.5, 3.0], 1.0);
        assert_eq!(row[3], Value::VecUInt64(vec![1, 2, 2]));
    }

    #[test]
    fn bad_ranges_are_errors() {
        let p = |name: &str, value: &str| Property {
            name: name.into(),
            ty: "double".into(),
            value: value.into(),
        };
        for props in [
            vec![p("bins", "0")],
            vec![p("bins", "65536")],
            vec![p("bins", "2"), p("min", "1"), p("max", "1")],
            vec![p("bins", "2"), p("min", "-1e308"), p("max", "1e308")],
            vec![p("min", "1")],
        ] {
            let r = create("histogram", "x", OmlType::Double, &props);
            assert!(
                matches!(r, Err(FilterError::BadProperty { .. })),
                "{props:?}"
            );
        }
    }
}
