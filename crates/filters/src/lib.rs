//! Windowed filters over one field of a measurement point.
//!
//! A filter sees every value injected into one field during a window and, when
//! the window closes, emits one or more output columns. The client library runs
//! them before encoding; server-side processing reuses them.
#![deny(missing_docs)]

use omsp::{OmlType, Value, ValueRef};

/// One output column of a filter.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// Column suffix appended as `<prefix>_<suffix>`; `None` means the bare prefix.
    pub suffix: Option<String>,
    /// Column type.
    pub ty: OmlType,
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

/// Why a filter could not be created.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FilterError {
    /// No filter has this name.
    #[error("unknown filter `{name}`; known filters: {known}")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
}

/// Creates filter `operation` over a field of type `input`, whose columns are prefixed by `prefix`.
pub fn create(
    operation: &str,
    _prefix: &str,
    _input: OmlType,
    _properties: &[Property],
) -> Result<Box<dyn Filter>, FilterError> {
    Err(FilterError::Unknown {
        name: operation.to_string(),
        known: String::new(),
    })
}
