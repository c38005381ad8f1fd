//! Windowed filters over one field of a measurement point.
//!
//! A filter sees every value injected into one field during a window and, when
//! the window closes, emits one or more output columns. The client library runs
//! them before encoding; server-side processing reuses them.
//!
//! The six filters liboml2 registers (`delta`, `sum`, `stddev`, `last`,
//! `first`, `avg`) keep the reference's column names, types and per-window
//! semantics (spec §8.6). The others (`histogram`, `min`, `max`, `count`,
//! `rate`, `jitter`, `loss`, `quantile`) are streamgauge's own; [`catalogue`]
//! lists them all with their inputs and outputs, and each module documents
//! its semantics and edge cases.
//!
//! Filters do no I/O and hold no clock: the caller passes each sample's time
//! to [`Filter::sample`] and the window's end time to [`Filter::emit`].
//!
//! # Example
//!
//! ```
//! use filters::{column_name, create};
//! use omsp::{OmlType, Value, ValueRef};
//!
//! let mut avg = create("avg", "rtt", OmlType::Int32, &[]).unwrap();
//! let columns: Vec<String> = avg.outputs().iter().map(|o| column_name("rtt", o)).collect();
//! assert_eq!(columns, ["rtt_avg", "rtt_min", "rtt_max"]);
//!
//! for (i, v) in [1, 2, 3, 4].into_iter().enumerate() {
//!     avg.sample(ValueRef::Int32(v), i as f64);
//! }
//! let mut row = Vec::new();
//! avg.emit(4.0, &mut row);
//! assert_eq!(row, [Value::Double(2.5), Value::Double(1.0), Value::Double(4.0)]);
//! ```
#![deny(missing_docs)]

mod error;
mod props;
mod registry;
mod value;

#[cfg(test)]
mod testutil;

mod avg;
mod count;
mod delta;
mod first;
mod histogram;
mod jitter;
mod last;
mod loss;
mod max;
mod min;
mod quantile;
mod rate;
mod sketch;
mod stddev;
mod sum;

pub use error::FilterError;
pub use registry::{catalogue, create, default_operation, FilterInfo};

use omsp::{OmlType, Value, ValueRef};

/// One output column of a filter.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// Column suffix appended as `<prefix>_<suffix>`; `None` means the bare prefix.
    pub suffix: Option<String>,
    /// Column type.
    pub ty: OmlType,
}

impl Output {
    /// A column named `<prefix>_<suffix>`.
    pub(crate) fn named(suffix: &str, ty: OmlType) -> Output {
        Output {
            suffix: Some(suffix.to_owned()),
            ty,
        }
    }
}

/// A filter property from a configuration (`<property name= type=>value</property>`).
#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    /// Property name.
    pub name: String,
    /// Declared type name (`string` when the config gave none).
    pub ty: String,
    /// Raw value text.
    pub value: String,
}

/// A running filter over one field.
pub trait Filter: Send {
    /// The columns this filter emits, in order.
    fn outputs(&self) -> &[Output];
    /// Feeds one value of the window; `ts` is the sample's time in seconds since the client's start.
    fn sample(&mut self, value: ValueRef<'_>, ts: f64);
    /// Closes the window at time `now`: pushes exactly `outputs().len()` values onto `out`, then starts a new window.
    fn emit(&mut self, now: f64, out: &mut Vec<Value>);
}

/// The schema column name of `out` for a filter whose columns are prefixed by
/// `prefix`: `prefix` alone when the output has no suffix, else `prefix_suffix`.
pub fn column_name(prefix: &str, out: &Output) -> String {
    match &out.suffix {
        None => prefix.to_owned(),
        Some(suffix) => format!("{prefix}_{suffix}"),
    }
}
