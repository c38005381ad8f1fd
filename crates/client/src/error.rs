//! What can go wrong, per operation.

use omsp::OmlType;

/// Why a client operation failed.
///
/// Configuration problems are reported by [`crate::Client::new`],
/// [`crate::Client::add_mp`] and [`crate::Client::start`]; the injection
/// calls only report misuse (wrong arity or type, wrong lifecycle state).
/// Overload is never an error: a dropped sample is counted (see
/// [`crate::Stats`]) and inject returns `Ok`.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// A name that becomes a table, column or metadata key is not
    /// `[A-Za-z_][A-Za-z0-9_]*`.
    #[error("invalid {what} name {name:?} (want [A-Za-z_][A-Za-z0-9_]*)")]
    InvalidName {
        /// `application`, `measurement point`, `field`, `stream`, `metadata key`…
        what: &'static str,
        /// The rejected name.
        name: String,
    },
    /// A header value (domain, sender id) would break the header or the
    /// collection server's file naming.
    #[error("invalid {what} {value:?}: {reason}")]
    InvalidHeaderValue {
        /// `domain` or `sender id`.
        what: &'static str,
        /// The rejected value.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Two measurement points share a name.
    #[error("measurement point {0:?} is already defined")]
    DuplicateMp(String),
    /// A measurement point was declared without fields.
    #[error("measurement point {0:?} has no fields")]
    NoFields(String),
    /// Two fields of one measurement point share a name.
    #[error("measurement point {mp:?} declares field {field:?} twice")]
    DuplicateField {
        /// The measurement point.
        mp: String,
        /// The repeated field.
        field: String,
    },
    /// `start` was called twice.
    #[error("the client is already started")]
    AlreadyStarted,
    /// Injection before `start`.
    #[error("the client is not started")]
    NotStarted,
    /// Injection or configuration after `close`.
    #[error("the client is closed")]
    Closed,
    /// A tuple has the wrong number of values.
    #[error("measurement point {mp:?} has {expected} fields but {found} values were injected")]
    Arity {
        /// The measurement point.
        mp: String,
        /// Its field count.
        expected: usize,
        /// Values given.
        found: usize,
    },
    /// A value does not have its field's type.
    #[error("field {field:?} of {mp:?} is {expected} but a {found} value was injected")]
    Type {
        /// The measurement point.
        mp: String,
        /// The field.
        field: String,
        /// Declared type.
        expected: OmlType,
        /// Type of the injected value.
        found: OmlType,
    },
    /// One sample is larger than a per-thread queue can ever hold.
    #[error("a sample of {size} bytes does not fit the per-thread queue of {capacity} bytes")]
    SampleTooLarge {
        /// Encoded size of the sample in the queue.
        size: usize,
        /// Capacity of the queue ([`crate::Options::ring_bytes`]).
        capacity: usize,
    },
    /// A configured stream names a measurement point that does not exist.
    #[error("stream {stream:?} refers to unknown measurement point {mp:?}; defined: {valid}")]
    UnknownMp {
        /// The stream (its name, or its MP name when unnamed).
        stream: String,
        /// The unknown MP name.
        mp: String,
        /// The defined MP names, comma-separated.
        valid: String,
    },
    /// A configured filter names a field its measurement point lacks.
    #[error("stream {stream:?}: measurement point {mp:?} has no field {field:?}; fields: {valid}")]
    UnknownField {
        /// The stream.
        stream: String,
        /// Its measurement point.
        mp: String,
        /// The unknown field.
        field: String,
        /// The MP's field names, comma-separated.
        valid: String,
    },
    /// Two streams of one destination would use the same table name.
    #[error("destination {uri}: two streams are named {name:?}")]
    DuplicateStream {
        /// The destination.
        uri: String,
        /// The table name.
        name: String,
    },
    /// A filter could not be created.
    #[error("stream {stream:?}, field {field:?}: {source}")]
    Filter {
        /// The stream.
        stream: String,
        /// The input field.
        field: String,
        /// Why (boxed: filter errors are large, and this enum is returned
        /// on the injection fast path).
        source: Box<filters::FilterError>,
    },
    /// A binary destination can address stream indices 0..=255 only.
    #[error("destination {uri}: stream {name:?} would get index {index}, but binary streams stop at 255")]
    TooManyStreams {
        /// The destination.
        uri: String,
        /// The stream.
        name: String,
        /// The index it would get.
        index: u32,
    },
    /// A binary tuple carries at most 255 values.
    #[error("stream {name:?} has {columns} columns; binary tuples carry at most 255")]
    TooManyColumns {
        /// The stream.
        name: String,
        /// Its column count.
        columns: usize,
    },
    /// A declaration sent through schema 0 must fit a binary string (254 bytes).
    #[error(
        "the schema-0 declaration of stream {name:?} is {len} bytes; binary strings stop at 254"
    )]
    DeclarationTooLong {
        /// The stream.
        name: String,
        /// Length of the declaration text.
        len: usize,
    },
    /// Metadata with subject `.` and a header-only key (or `schema`) would be
    /// ignored or misread by the collection point.
    #[error("metadata key {0:?} is reserved at the experiment level")]
    ReservedKey(String),
    /// A metadata field does not exist.
    #[error("measurement point {mp:?} has no field {field:?}")]
    NoSuchField {
        /// The measurement point.
        mp: String,
        /// The field.
        field: String,
    },
    /// A destination could not be opened at start.
    #[error("destination {uri}: {source}")]
    Destination {
        /// The destination.
        uri: String,
        /// The system error.
        source: std::io::Error,
    },
    /// A thread could not be started.
    #[error("cannot start the {what} thread: {source}")]
    Spawn {
        /// `writer` or `sender`.
        what: &'static str,
        /// The system error.
        source: std::io::Error,
    },
}
