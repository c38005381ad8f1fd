//! Decoding and encoding errors.

use crate::header::HeaderError;
use crate::schema::SchemaError;
use crate::types::OmlType;

/// An error found while decoding a stream, at a byte offset of that stream.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("offset {offset}: {kind}")]
pub struct DecodeError {
    /// Offset in the whole stream (header included) of the line, packet or
    /// byte run the error is about.
    pub offset: u64,
    /// What went wrong.
    pub kind: ErrorKind,
}

impl DecodeError {
    /// True if the decoder cannot go on (the session must end); otherwise
    /// only the reported line, packet or byte run was lost.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Header(_) | ErrorKind::Truncated { .. }
        )
    }
}

/// Where a value could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("field {field} ({ty}): {reason}")]
pub struct ValueError {
    /// 0-based position of the value in the tuple.
    pub field: usize,
    /// The schema type expected there.
    pub ty: OmlType,
    /// What was wrong.
    pub reason: String,
}

/// What went wrong; see [`DecodeError::is_fatal`] for the consequence.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ErrorKind {
    /// The connection header is invalid (fatal).
    #[error("bad header: {0}")]
    Header(HeaderError),
    /// The stream ended inside a header or packet (fatal, reported by `finish`).
    #[error("stream ends inside {what} ({bytes} bytes left undecoded)")]
    Truncated {
        /// `header`, `line` or `packet`.
        what: &'static str,
        /// Bytes that could not be decoded.
        bytes: usize,
    },
    /// A schema declared through schema 0 did not parse; the tuple was dropped.
    #[error("bad schema declaration: {0}")]
    Schema(SchemaError),
    /// A text line or the header line is longer than the limit; skipped to the next LF.
    #[error("line longer than {max} bytes; skipped")]
    LineTooLong {
        /// Configured maximum.
        max: usize,
    },
    /// A text line has fewer than the three prefix fields.
    #[error("line has {found} tab-separated fields, at least 3 needed (timestamp, stream, seq)")]
    TooFewFields {
        /// Fields found.
        found: usize,
    },
    /// The timestamp, stream index or sequence number does not parse.
    #[error("bad {what} {text:?}")]
    BadPrefix {
        /// `timestamp`, `stream index` or `sequence number`.
        what: &'static str,
        /// What was found.
        text: String,
    },
    /// A tuple names a stream index no schema was declared for.
    #[error("stream index {index} was never declared")]
    UndeclaredStream {
        /// The index.
        index: u32,
    },
    /// A tuple's value count differs from its schema's field count.
    #[error("stream {index} ({name}) has {expected} fields but the tuple has {found} values")]
    ValueCount {
        /// Stream index.
        index: u32,
        /// Stream name.
        name: String,
        /// Field count of the schema.
        expected: usize,
        /// Values in the tuple.
        found: usize,
    },
    /// A value does not parse or does not match its field's type.
    #[error("stream {index}: {error}")]
    BadValue {
        /// Stream index.
        index: u32,
        /// Which value and why.
        error: ValueError,
    },
    /// Bytes before the next sync (`AA AA`) were skipped.
    #[error("skipped {bytes} bytes of garbage looking for a packet sync (AA AA)")]
    Garbage {
        /// Bytes skipped.
        bytes: u64,
    },
    /// A packet type other than 0x01/0x02 follows the sync; resynced.
    #[error("unknown packet type 0x{0:02x}; resyncing")]
    UnknownPacketType(u8),
    /// A packet's declared length exceeds the limit; resynced.
    #[error("packet length {len} is above the limit {max}; resyncing")]
    PacketTooLarge {
        /// Declared length.
        len: u64,
        /// Configured maximum.
        max: usize,
    },
    /// A packet body's values do not fill its declared length exactly.
    #[error("packet body is {declared} bytes but its values {detail}")]
    LengthMismatch {
        /// Declared body length.
        declared: usize,
        /// `need N` or `end after N`.
        detail: String,
    },
    /// The seq or timestamp of a binary tuple has the wrong type code.
    #[error("bad tuple prefix: {0}")]
    BadBinaryPrefix(String),
}

impl ErrorKind {
    /// A stable, machine-readable name for the error (used in test vectors).
    pub fn code(&self) -> &'static str {
        match self {
            ErrorKind::Header(_) => "header",
            ErrorKind::Truncated { .. } => "truncated",
            ErrorKind::Schema(_) => "schema",
            ErrorKind::LineTooLong { .. } => "line_too_long",
            ErrorKind::TooFewFields { .. } => "too_few_fields",
            ErrorKind::BadPrefix { .. } => "bad_prefix",
            ErrorKind::UndeclaredStream { .. } => "undeclared_stream",
            ErrorKind::ValueCount { .. } => "value_count",
            ErrorKind::BadValue { .. } => "bad_value",
            ErrorKind::Garbage { .. } => "garbage",
            ErrorKind::UnknownPacketType(_) => "unknown_packet_type",
            ErrorKind::PacketTooLarge { .. } => "packet_too_large",
            ErrorKind::LengthMismatch { .. } => "length_mismatch",
            ErrorKind::BadBinaryPrefix(_) => "bad_binary_prefix",
        }
    }
}

/// Why a tuple could not be encoded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EncodeError {
    /// Binary tuples address streams 0..=255 only.
    #[error("stream index {0} does not fit the binary encoding (0..=255)")]
    IndexTooLarge(u32),
    /// Binary tuples carry at most 255 values.
    #[error("{0} values do not fit one binary tuple (at most 255)")]
    TooManyValues(usize),
    /// A binary string is limited to 254 bytes (what stock servers read safely).
    #[error("string of {0} bytes exceeds the binary limit of 254")]
    StringTooLong(usize),
    /// A blob is limited to 2^32−1 bytes.
    #[error("blob of {0} bytes exceeds 2^32-1")]
    BlobTooLong(usize),
    /// A vector is limited to 65535 elements.
    #[error("vector of {0} elements exceeds 65535")]
    VectorTooLong(usize),
}
