//! `jitter`: RFC 3550 §6.4.1 interarrival jitter.
//!
//! The field holds the sender's timestamp in seconds (any numeric type); the
//! arrival time is the sample's `ts`. For consecutive samples i and j,
//! `D = (Rj − Ri) − (Sj − Si)` and the estimate moves by
//! `J += (|D| − J) / 16`, starting from 0 at the second sample, as in the RFC.
//! The estimate is in seconds, not in RTP timestamp units.
//!
//! One column, `<prefix>_jitter`, double: the estimate when the window
//! closes. The state spans windows (an empty window repeats the estimate);
//! it is NaN until two samples have arrived. Samples whose sender timestamp
//! or arrival time is not finite are skipped.

use omsp::{OmlType, Value, ValueRef};

use crate::props::Props;
use crate::value::{require_numeric, to_f64};
use crate::{Filter, FilterError, Output, Property};

/// The `jitter` filter.
pub(crate) struct Jitter {
    /// `_jitter`.
    outputs: [Output; 1],
    /// The previous sample's (sender timestamp, arrival time).
    previous: Option<(f64, f64)>,
    /// The estimate J, once two samples have arrived.
    jitter: Option<f64>,
}

impl Jitter {
    /// Creates the filter; it takes a numeric input and no properties.
    pub(crate) fn new(input: OmlType, props: &[Property]) -> Result<Self, FilterError> {
        require_numeric("jitter", input)?;
        Props::new("jitter", props, &[])?;
        Ok(Jitter {
            outputs: [Output::named("jitter", OmlType::Double)],
            previous: None,
            jitter: None,
        })
    }
}

impl Filter for Jitter {
    fn outputs(&self) -> &[Output] {
        &self.outputs
    }

    fn sample(&mut self, value: ValueRef<'_>, ts: f64) {
        let Some(sent) = to_f64(value) else {
            return;
        };
        if !sent.is_finite() || !ts.is_finite() {
            return;
        }
        if let Some((prev_sent, prev_arrived)) = self.previous {
            let d = (ts - prev_arrived) - (sent - prev_sent);
            let j = self.jitter.unwrap_or(0.0);
            self.jitter = Some(j + (d.abs() - j) / 16.0);
        }
        self.previous = Some((sent, ts));
    }

    fn emit(&mut self, _now: f64, out: &mut Vec<Value>) {
        out.push(Value::Double(self.jitter.unwrap_or(f64::NAN)));
    }
}

#[cfg(test)]
mod tests {
    use omsp::{OmlType, ValueRef};

    use crate::testutil::{assert_row, double, doubles, emit, make};

    #[test]
    fn rfc3550_estimator_by_hand() {
        let mut f = make("jitter", OmlType::Double);
        assert_row(&emit(&mut *f, 0.0), &doubles(&[f64::NAN]));
        // (sent, arrived): transit times 0.10, 0.12, 0.11, 0.15.
        f.sample(ValueRef::Double(0.0), 0.10);
        assert_row(&emit(&mut *f, 0.5), &doubles(&[f64::NAN]));
        f.sample(ValueRef::Double(1.0), 1.12);
        // |D| = 0.02: J = 0.02 / 16 = 0.00125.
        let j1 = double(&emit(&mut *f, 1.5)[0]);
        assert!((j1 - 0.00125).abs() < 1e-12, "{j1}");
        f.sample(ValueRef::Double(2.0), 2.11);
        f.sample(ValueRef::Double(3.0), 3.15);
        // |D| = 0.01: J = 0.00125 + (0.01 − 0.00125)/16 = 0.00179688
        // |D| = 0.04: J = 0.00179688 + (0.04 − 0.00179688)/16 = 0.00418457
        let j2: f64 = 0.00125 + (0.01 - 0.00125) / 16.0;
        let j3 = j2 + (0.04 - j2) / 16.0;
        assert!((j3 - 0.004_184_57).abs() < 1e-8, "{j3}");
        let got = double(&emit(&mut *f, 3.5)[0]);
        assert!((got - j3).abs() < 1e-12, "{got} vs {j3}");
        // The estimate carries over empty windows.
        let again = double(&emit(&mut *f, 4.5)[0]);
        assert_eq!(again, got);
    }

    #[test]
    fn constant_transit_gives_zero_and_integer_timestamps_work() {
        let mut f = make("jitter", OmlType::Int64);
        for s in 0..10 {
            f.sample(ValueRef::Int64(s), s as f64 + 0.25);
        }
        assert_row(&emit(&mut *f, 10.0), &doubles(&[0.0]));
    }
}
