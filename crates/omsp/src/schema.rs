//! Stream schemas: `<index> <name> <field>:<type> ...`.

use std::collections::HashSet;
use std::fmt;

use crate::names::is_valid_name;
use crate::types::OmlType;

/// One named, typed column of a stream.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Field {
    /// Column name; a valid name (see [`crate::names::is_valid_name`]).
    pub name: String,
    /// Column type.
    pub ty: OmlType,
}

impl Field {
    /// Builds a field (the name is not checked here; [`Schema::new`] checks it).
    pub fn new(name: impl Into<String>, ty: OmlType) -> Field {
        Field {
            name: name.into(),
            ty,
        }
    }
}

/// A measurement stream's schema: the index tuples use to refer to it, the
/// stream (table) name and its fields.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Schema {
    /// Index that tuples carry; 0 is reserved for `_experiment_metadata`.
    pub index: u32,
    /// Stream name, which becomes the table name (`<app>_<mp>` by convention).
    pub name: String,
    /// Fields in wire order.
    pub fields: Vec<Field>,
}

/// Why a schema string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The string has no index token or no name token.
    #[error("schema is empty or has no stream name")]
    Incomplete,
    /// The index is not a non-negative integer (decimal, `0x` hex or `0` octal).
    #[error("schema index {0:?} is not a non-negative integer")]
    BadIndex(String),
    /// The index is larger than the decoder's limit.
    #[error("schema index {index} is above the limit {max}")]
    IndexTooLarge {
        /// Index found.
        index: u32,
        /// Configured maximum.
        max: u32,
    },
    /// The stream name is not `[A-Za-z_][A-Za-z0-9_]*`.
    #[error("invalid stream name {0:?} (want [A-Za-z_][A-Za-z0-9_]*)")]
    BadName(String),
    /// A field token has no `:` separating name and type.
    #[error("field {0:?} has no ':type'")]
    NoType(String),
    /// A field name is not `[A-Za-z_][A-Za-z0-9_]*`.
    #[error("invalid field name {0:?} (want [A-Za-z_][A-Za-z0-9_]*)")]
    BadFieldName(String),
    /// The type name is not one OMSP knows.
    #[error("unknown type {ty:?} for field {field:?}")]
    UnknownType {
        /// Field whose type is unknown.
        field: String,
        /// The type name as given.
        ty: String,
    },
    /// Two fields share a name (they would be two columns of one name).
    #[error("field {0:?} appears twice")]
    DuplicateField(String),
    /// More fields than the configured maximum.
    #[error("{found} fields is above the limit {max}")]
    TooManyFields {
        /// Number of fields given.
        found: usize,
        /// Configured maximum.
        max: usize,
    },
}

/// Parses an integer the way C's `strtol(…, 0)` reads an index: decimal,
/// `0x` hexadecimal or leading-`0` octal; no sign.
fn parse_index(tok: &str) -> Option<u32> {
    if let Some(hex) = tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")) {
        u32::from_str_radix(hex, 16).ok()
    } else if tok.len() > 1 && tok.starts_with('0') {
        u32::from_str_radix(&tok[1..], 8).ok()
    } else if !tok.is_empty() && tok.bytes().all(|b| b.is_ascii_digit()) {
        tok.parse().ok()
    } else {
        None
    }
}

/// The first item equal to an earlier one, in one pass (a hash set, whose
/// keys are randomised: input chosen to collide gains nothing).
fn first_duplicate<T: std::hash::Hash + Eq>(items: impl ExactSizeIterator<Item = T>) -> Option<T> {
    let mut seen = HashSet::with_capacity(items.len());
    for item in items {
        if seen.contains(&item) {
            return Some(item);
        }
        seen.insert(item);
    }
    None
}

impl Schema {
    /// Builds a schema, validating the stream and field names.
    pub fn new(
        index: u32,
        name: impl Into<String>,
        fields: Vec<Field>,
    ) -> Result<Schema, SchemaError> {
        let schema = Schema {
            index,
            name: name.into(),
            fields,
        };
        schema.validate(usize::MAX)?;
        Ok(schema)
    }

    /// Checks the names and the field count. Linear in the number of
    /// fields (duplicates are found with a hash set): a header may carry
    /// thousands of schemas of thousands of fields from an unauthenticated
    /// sender, and a pairwise comparison cost seconds of CPU per header.
    fn validate(&self, max_fields: usize) -> Result<(), SchemaError> {
        if !is_valid_name(&self.name) {
            return Err(SchemaError::BadName(self.name.clone()));
        }
        if self.fields.len() > max_fields {
            return Err(SchemaError::TooManyFields {
                found: self.fields.len(),
                max: max_fields,
            });
        }
        if let Some(f) = self.fields.iter().find(|f| !is_valid_name(&f.name)) {
            return Err(SchemaError::BadFieldName(f.name.clone()));
        }
        match first_duplicate(self.fields.iter().map(|f| f.name.as_str())) {
            Some(name) => Err(SchemaError::DuplicateField(name.to_owned())),
            None => Ok(()),
        }
    }

    /// Parses `<index> <name> <field>:<type> ...` (tokens separated by any
    /// whitespace, trailing whitespace allowed), with at most `max_fields` fields.
    pub fn parse_with_limit(s: &str, max_fields: usize) -> Result<Schema, SchemaError> {
        let mut toks = s.split_ascii_whitespace();
        let idx_tok = toks.next().ok_or(SchemaError::Incomplete)?;
        let index =
            parse_index(idx_tok).ok_or_else(|| SchemaError::BadIndex(idx_tok.to_owned()))?;
        let name = toks.next().ok_or(SchemaError::Incomplete)?.to_owned();
        let mut fields = Vec::new();
        for tok in toks {
            let (fname, tname) = tok
                .split_once(':')
                .ok_or_else(|| SchemaError::NoType(tok.to_owned()))?;
            let ty = OmlType::from_name(tname).ok_or_else(|| SchemaError::UnknownType {
                field: fname.to_owned(),
                ty: tname.to_owned(),
            })?;
            fields.push(Field::new(fname, ty));
            if fields.len() > max_fields {
                return Err(SchemaError::TooManyFields {
                    found: fields.len(),
                    max: max_fields,
                });
            }
        }
        let schema = Schema {
            index,
            name,
            fields,
        };
        schema.validate(max_fields)?;
        Ok(schema)
    }

    /// Parses a schema with no limit on the number of fields.
    pub fn parse(s: &str) -> Result<Schema, SchemaError> {
        Schema::parse_with_limit(s, usize::MAX)
    }

    /// True when both schemas define the same table: same name, field names
    /// and types in the same order. The index is not compared.
    pub fn same_definition(&self, other: &Schema) -> bool {
        self.name == other.name && self.fields == other.fields
    }

    /// The same schema under another index.
    pub fn with_index(&self, index: u32) -> Schema {
        Schema {
            index,
            ..self.clone()
        }
    }

    /// Position of the field called `name`.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }

    /// The lowest protocol version that can carry every field type.
    pub fn min_protocol(&self) -> u8 {
        self.fields
            .iter()
            .map(|f| f.ty.min_protocol())
            .max()
            .unwrap_or(1)
    }
}

/// Canonical form: `<index> <name> <f>:<t> ...`, no trailing space (the form
/// stored in `table_<name>` rows).
impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.index, self.name)?;
        for field in &self.fields {
            write!(f, " {}:{}", field.name, field.ty)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_liboml2_line_with_trailing_space() {
        let s = Schema::parse("2 vec_scalars i32:int32 u32:uint32 v:[double] l:long ").unwrap();
        assert_eq!(s.index, 2);
        assert_eq!(s.name, "vec_scalars");
        assert_eq!(s.fields.len(), 4);
        assert_eq!(s.fields[3].ty, OmlType::Int32);
        assert_eq!(
            s.to_string(),
            "2 vec_scalars i32:int32 u32:uint32 v:[double] l:int32"
        );
    }

    #[test]
    fn index_forms() {
        assert_eq!(Schema::parse("0x10 a").unwrap().index, 16);
        assert_eq!(Schema::parse("010 a").unwrap().index, 8);
        assert_eq!(Schema::parse("0 a").unwrap().index, 0);
        assert_eq!(Schema::parse("300 a").unwrap().index, 300);
        assert!(matches!(
            Schema::parse("-1 a"),
            Err(SchemaError::BadIndex(_))
        ));
        assert!(matches!(
            Schema::parse("x a"),
            Err(SchemaError::BadIndex(_))
        ));
    }

    #[test]
    fn rejections() {
        assert_eq!(Schema::parse(""), Err(SchemaError::Incomplete));
        assert_eq!(Schema::parse("1"), Err(SchemaError::Incomplete));
        assert!(matches!(
            Schema::parse("1 a-b x:int32"),
            Err(SchemaError::BadName(_))
        ));
        assert!(matches!(
            Schema::parse("1 a x"),
            Err(SchemaError::NoType(_))
        ));
        assert!(matches!(
            Schema::parse("1 a 9x:int32"),
            Err(SchemaError::BadFieldName(_))
        ));
        assert!(matches!(
            Schema::parse("1 a x:int"),
            Err(SchemaError::UnknownType { .. })
        ));
        assert!(matches!(
            Schema::parse("1 a x:int32 x:double"),
            Err(SchemaError::DuplicateField(_))
        ));
        assert!(matches!(
            Schema::parse_with_limit("1 a x:int32 y:int32", 1),
            Err(SchemaError::TooManyFields { .. })
        ));
    }

    /// A schema of `n` distinct fields `f0:bool f1:bool …`.
    fn wide(n: usize) -> String {
        let fields: Vec<String> = (0..n).map(|i| format!("f{i}:bool")).collect();
        format!("1 wide {}", fields.join(" "))
    }

    /// A pairwise duplicate check made a header of wide schemas cost
    /// seconds. Counting comparisons rather than timing them (a busy
    /// machine would decide a timing): n distinct names take about n
    /// comparisons, where the pairwise check took n(n-1)/2.
    #[test]
    fn duplicate_check_is_linear_in_the_number_of_fields() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static EQ: AtomicUsize = AtomicUsize::new(0);
        struct Counted(usize);
        impl std::hash::Hash for Counted {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.0.hash(state);
            }
        }
        impl PartialEq for Counted {
            fn eq(&self, other: &Counted) -> bool {
                EQ.fetch_add(1, Ordering::Relaxed);
                self.0 == other.0
            }
        }
        impl Eq for Counted {}
        let n = 4096;
        assert!(first_duplicate((0..n).map(Counted)).is_none());
        let eq = EQ.swap(0, Ordering::Relaxed);
        assert!(eq <= n, "{eq} comparisons for {n} distinct items");
        let items: Vec<Counted> = (0..n).chain([7]).map(Counted).collect();
        let dup = first_duplicate(items.into_iter());
        assert_eq!(dup.map(|c| c.0), Some(7));
        let dup = format!("{} f0:int32", wide(4096));
        assert_eq!(
            Schema::parse(&dup),
            Err(SchemaError::DuplicateField("f0".into()))
        );
    }

    #[test]
    fn definition_equality_ignores_index() {
        let a = Schema::parse("1 a x:double").unwrap();
        let b = Schema::parse("7 a x:real").unwrap();
        assert!(a.same_definition(&b));
        assert!(!a.same_definition(&Schema::parse("1 a x:int32").unwrap()));
    }
}
