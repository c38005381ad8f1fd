//! `_client_instrumentation` under a window, as liboml2 does it.
//!
//! liboml2 registers its instrumentation as an ordinary measurement point,
//! so `--oml-samples N` / `--oml-interval S` (and a `<stream>` naming it in
//! a configuration file) give it a default stream with that window: every
//! field goes through the `avg` filter and the stream carries
//! `<field>_avg`, `<field>_min`, `<field>_max` (doubles), one row per N
//! reports or per S seconds. We do the same, so that a stock server's
//! tables and a user's scripts see what they saw with liboml2. Without a
//! window (the default) the counters are sent as they are.

use omsp::metadata::client_instrumentation_schema;
use omsp::{Field, Schema, Value};

use crate::spec::{DestinationSpec, Window};

/// The window of `_client_instrumentation` towards `dest`: the stream
/// naming it when the destination lists streams, else the default window
/// of unconfigured streams (`--oml-samples` / `--oml-interval`).
pub(crate) fn window_for(dest: &DestinationSpec, default: Window) -> Window {
    match &dest.streams {
        None => default,
        Some(list) => list
            .iter()
            .find(|s| s.mp == omsp::metadata::CLIENT_INSTRUMENTATION_NAME)
            .map_or(Window::PerSample, |s| s.window),
    }
}

/// True when `w` makes rows out of several reports.
fn aggregates(w: Window) -> bool {
    match w {
        Window::PerSample => false,
        Window::Samples(n) => n != 1,
        Window::Interval(_) => true,
    }
}

/// The stream's schema at `index` under window `w`.
pub(crate) fn schema(index: u32, w: Window) -> Schema {
    let base = client_instrumentation_schema(index);
    if !aggregates(w) {
        return base;
    }
    let fields = base
        .fields
        .iter()
        .flat_map(|f| {
            avg(f)
                .outputs()
                .iter()
                .map(|o| Field::new(filters::column_name(&f.name, o), o.ty))
                .collect::<Vec<_>>()
        })
        .collect();
    Schema { fields, ..base }
}

fn avg(f: &Field) -> Box<dyn filters::Filter> {
    // The avg filter takes every numeric type and has no required property.
    filters::create("avg", &f.name, f.ty, &[])
        .expect("avg accepts the instrumentation's integer fields")
}

/// The reports of one destination folded into windows.
pub(crate) struct InstrWindow {
    /// One `avg` per field.
    filters: Vec<Box<dyn filters::Filter>>,
    window: Window,
    /// Reports in the open window.
    count: i64,
    /// Client time the open window started at.
    opened: Option<f64>,
}

impl std::fmt::Debug for InstrWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstrWindow")
            .field("window", &self.window)
            .field("count", &self.count)
            .finish()
    }
}

impl InstrWindow {
    /// A fold for window `w`; `None` when `w` sends every report as it is.
    pub(crate) fn new(w: Window) -> Option<InstrWindow> {
        aggregates(w).then(|| InstrWindow {
            filters: client_instrumentation_schema(0)
                .fields
                .iter()
                .map(avg)
                .collect(),
            window: w,
            count: 0,
            opened: None,
        })
    }

    /// Adds one report taken at `ts`; the row to send when the window closes.
    pub(crate) fn report(&mut self, ts: f64, values: &[Value]) -> Option<Vec<Value>> {
        let opened = *self.opened.get_or_insert(ts);
        for (f, v) in self.filters.iter_mut().zip(values) {
            f.sample(v.as_value_ref(), ts);
        }
        self.count += 1;
        let due = match self.window {
            Window::Samples(n) => n > 0 && self.count >= n,
            Window::Interval(d) => ts - opened >= d.as_secs_f64(),
            Window::PerSample => true,
        };
        if !due {
            return None;
        }
        let mut row = Vec::with_capacity(self.filters.len() * 3);
        for f in &mut self.filters {
            f.emit(ts, &mut row);
        }
        self.count = 0;
        self.opened = Some(ts);
        Some(row)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn report(i: u32) -> Vec<Value> {
        let u = u64::from(i);
        vec![
            Value::UInt32(i),
            Value::UInt32(0),
            Value::UInt64(u),
            Value::UInt64(0),
            Value::UInt64(u),
            Value::UInt64(u),
        ]
    }

    #[test]
    fn samples_window_averages_every_n_reports() {
        let s = schema(1, Window::Samples(3));
        assert_eq!(s.fields.len(), 18);
        assert_eq!(s.fields[0].name, "measurements_injected_avg");
        assert_eq!(s.fields[1].name, "measurements_injected_min");
        assert_eq!(s.fields[2].name, "measurements_injected_max");
        let mut w = InstrWindow::new(Window::Samples(3)).unwrap();
        assert_eq!(w.report(1.0, &report(10)), None);
        assert_eq!(w.report(2.0, &report(20)), None);
        let row = w.report(3.0, &report(30)).unwrap();
        assert_eq!(row.len(), 18);
        assert_eq!(row[0], Value::Double(20.0));
        assert_eq!(row[1], Value::Double(10.0));
        assert_eq!(row[2], Value::Double(30.0));
    }

    #[test]
    fn interval_window_closes_on_time() {
        let mut w = InstrWindow::new(Window::Interval(Duration::from_secs(2))).unwrap();
        assert_eq!(w.report(1.0, &report(1)), None);
        assert_eq!(w.report(2.0, &report(2)), None);
        assert!(w.report(3.0, &report(3)).is_some());
    }

    #[test]
    fn no_window_sends_counters_as_they_are() {
        assert!(InstrWindow::new(Window::PerSample).is_none());
        assert!(InstrWindow::new(Window::Samples(1)).is_none());
        assert_eq!(
            schema(1, Window::Samples(1)),
            client_instrumentation_schema(1)
        );
    }
}
