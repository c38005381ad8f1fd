//! Why a filter could not be created.

use omsp::OmlType;

/// Why a filter could not be created.
///
/// Every variant is a configuration mistake: creation fails before any sample
/// is seen, and a running filter never fails.
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
    /// The filter cannot run over a field of this type (e.g. `avg` on a string).
    #[error("filter `{filter}` cannot take a `{ty}` input; it takes {accepted}")]
    Input {
        /// The filter's name.
        filter: String,
        /// The field's type.
        ty: OmlType,
        /// The input types the filter takes, in words.
        accepted: &'static str,
    },
    /// The filter has no property of this name.
    #[error("filter `{filter}` has no property `{name}`; valid properties: {valid}")]
    UnknownProperty {
        /// The filter's name.
        filter: String,
        /// The property name given.
        name: String,
        /// The filter's properties, comma-separated (`none` when it takes none).
        valid: String,
    },
    /// A property's value is malformed or out of range.
    #[error("filter `{filter}`: property `{name}` = `{value}`: {reason}")]
    BadProperty {
        /// The filter's name.
        filter: String,
        /// The property name.
        name: String,
        /// The value text given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A column name built from the prefix is not a valid OML name
    /// (`[A-Za-z_][A-Za-z0-9_]*`).
    #[error("filter column name `{name}` is not a valid name")]
    ColumnName {
        /// The column name that would have been used.
        name: String,
    },
}
