//! What to do with a tuple of the metadata stream (schema 0).

use omsp::metadata::{MetadataColumns, HEADER_ONLY_KEYS, ROOT_SUBJECT, SCHEMA_KEY};
use omsp::{Schema, Value};

/// The fate of one schema-0 tuple.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataTuple {
    /// Ordinary metadata: store it as a row of `_experiment_metadata`.
    Store,
    /// Subject `.` and key `schema`: a stream declaration. The stream is
    /// registered instead; no row is stored (as the reference does).
    SchemaDeclaration,
    /// Subject `.` and a key only valid in the connection header (such as
    /// `domain`): dropped, and the caller should warn.
    HeaderOnlyKey(String),
}

/// Classifies a tuple of schema-0 stream `schema` (columns found by name, as
/// the reference does). Tuples of a schema without subject/key/value string
/// columns are stored as they are.
pub fn classify(schema: &Schema, values: &[Value]) -> MetadataTuple {
    let Some(cols) = MetadataColumns::of(schema) else {
        return MetadataTuple::Store;
    };
    let text = |i: usize| match values.get(i) {
        Some(Value::String(s)) => Some(s.as_str()),
        _ => None,
    };
    if text(cols.subject) != Some(ROOT_SUBJECT) {
        return MetadataTuple::Store;
    }
    match text(cols.key) {
        Some(SCHEMA_KEY) => MetadataTuple::SchemaDeclaration,
        Some(k) if HEADER_ONLY_KEYS.contains(&k) => MetadataTuple::HeaderOnlyKey(k.to_owned()),
        _ => MetadataTuple::Store,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use omsp::metadata::schema0;

    fn tuple(s: &str, k: &str, v: &str) -> Vec<Value> {
        [s, k, v]
            .iter()
            .map(|x| Value::String((*x).to_owned()))
            .collect()
    }

    #[test]
    fn classifies_root_keys_only() {
        let s0 = schema0();
        assert_eq!(
            classify(&s0, &tuple(".", "schema", "3 a_b x:int32")),
            MetadataTuple::SchemaDeclaration
        );
        assert_eq!(
            classify(&s0, &tuple(".", "domain", "x")),
            MetadataTuple::HeaderOnlyKey("domain".into())
        );
        assert_eq!(
            classify(&s0, &tuple(".a_b", "domain", "x")),
            MetadataTuple::Store
        );
        assert_eq!(
            classify(&s0, &tuple(".", "unit", "m")),
            MetadataTuple::Store
        );
    }
}
