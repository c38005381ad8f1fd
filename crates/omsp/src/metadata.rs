//! Schema 0 (`_experiment_metadata`) and metadata subjects.

use crate::schema::{Field, Schema};
use crate::types::OmlType;

/// Name of the metadata stream, always declared at index 0.
pub const SCHEMA0_NAME: &str = "_experiment_metadata";

/// Name of liboml2's own instrumentation stream (index 1 when present).
pub const CLIENT_INSTRUMENTATION_NAME: &str = "_client_instrumentation";

/// Subject of experiment-level (root) metadata.
pub const ROOT_SUBJECT: &str = ".";

/// Key that, with subject `.`, declares a new stream through schema 0.
pub const SCHEMA_KEY: &str = "schema";

/// Header keys that a schema-0 tuple with subject `.` must not carry; the
/// reference ignores such tuples, and so should a store.
pub const HEADER_ONLY_KEYS: [&str; 8] = [
    "protocol",
    "domain",
    "experiment-id",
    "start-time",
    "start_time",
    "sender-id",
    "app-name",
    "content",
];

/// `0 _experiment_metadata subject:string key:string value:string`.
pub fn schema0() -> Schema {
    Schema {
        index: 0,
        name: SCHEMA0_NAME.to_owned(),
        fields: vec![
            Field::new("subject", OmlType::String),
            Field::new("key", OmlType::String),
            Field::new("value", OmlType::String),
        ],
    }
}

/// liboml2's `_client_instrumentation` schema at the given index.
pub fn client_instrumentation_schema(index: u32) -> Schema {
    let u32f = |n: &str| Field::new(n, OmlType::UInt32);
    let u64f = |n: &str| Field::new(n, OmlType::UInt64);
    Schema {
        index,
        name: CLIENT_INSTRUMENTATION_NAME.to_owned(),
        fields: vec![
            u32f("measurements_injected"),
            u32f("measurements_dropped"),
            u64f("bytes_allocated"),
            u64f("bytes_freed"),
            u64f("bytes_in_use"),
            u64f("bytes_max"),
        ],
    }
}

/// Builds a metadata subject: `.` for the experiment, `.<stream>` for one
/// stream, `.<stream>.<field>` for one field of it.
pub fn subject(stream: Option<&str>, field: Option<&str>) -> String {
    match (stream, field) {
        (None, _) => ROOT_SUBJECT.to_owned(),
        (Some(s), None) => format!(".{s}"),
        (Some(s), Some(f)) => format!(".{s}.{f}"),
    }
}

/// Column positions of subject, key and value in a metadata schema (found by
/// name, as the reference does, so a client's own field order is respected).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetadataColumns {
    /// Position of `subject`.
    pub subject: usize,
    /// Position of `key`.
    pub key: usize,
    /// Position of `value`.
    pub value: usize,
}

impl MetadataColumns {
    /// Finds the three string columns; `None` if the schema lacks one.
    pub fn of(schema: &Schema) -> Option<MetadataColumns> {
        let find = |n: &str| {
            schema
                .field_index(n)
                .filter(|&i| schema.fields[i].ty == OmlType::String)
        };
        Some(MetadataColumns {
            subject: find("subject")?,
            key: find("key")?,
            value: find("value")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema0_prints_as_the_reference_stores_it() {
        assert_eq!(
            schema0().to_string(),
            "0 _experiment_metadata subject:string key:string value:string"
        );
        assert_eq!(
            MetadataColumns::of(&schema0()),
            Some(MetadataColumns {
                subject: 0,
                key: 1,
                value: 2
            })
        );
    }

    #[test]
    fn subjects() {
        assert_eq!(subject(None, None), ".");
        assert_eq!(subject(Some("vec_scalars"), None), ".vec_scalars");
        assert_eq!(
            subject(Some("vec_scalars"), Some("dbl")),
            ".vec_scalars.dbl"
        );
    }
}
