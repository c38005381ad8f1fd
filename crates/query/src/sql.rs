//! SQL text with bound parameters for both backends. Every identifier goes
//! through [`Sql::ident`] (double-quoted) and every value through
//! [`Sql::bind`] (a placeholder): nothing a caller sends is ever spliced
//! into the statement text.
//!
//! The dialects, the quoting and the values are the store's
//! ([`store::sql`]). What is this crate's own is how values reach
//! PostgreSQL: as text, each placeholder cast to the column's type
//! ([`PgType`]), so that uint64 columns (`NUMERIC(20,0)`, which the
//! `postgres` crate has no Rust type for) compare exactly.

use store::sql::quote;
pub use store::sql::{Dialect, Value};

/// How PostgreSQL should read a text-bound parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PgType {
    /// `int8`.
    Int8,
    /// `numeric` (uint64 columns are NUMERIC(20,0)).
    Numeric,
    /// `float8`.
    Float8,
    /// `text`.
    Text,
    /// `boolean`.
    Bool,
}

impl PgType {
    fn name(self) -> &'static str {
        match self {
            PgType::Int8 => "int8",
            PgType::Numeric => "numeric",
            PgType::Float8 => "float8",
            PgType::Text => "text",
            PgType::Bool => "boolean",
        }
    }
}

/// A statement being built.
#[derive(Debug, Clone)]
pub struct Sql {
    /// Flavour of placeholders.
    pub dialect: Dialect,
    /// The statement text.
    pub text: String,
    /// Values of the placeholders, in order (SQLite takes them as they
    /// are, PostgreSQL as [`Sql::pg_params`]).
    pub params: Vec<Value>,
    /// At most this many rows come back (a `LIMIT`), if known: small
    /// results are fetched in one go.
    pub max_rows: Option<u64>,
}

impl Sql {
    /// An empty statement.
    pub fn new(dialect: Dialect) -> Sql {
        Sql {
            dialect,
            text: String::new(),
            params: Vec::new(),
            max_rows: None,
        }
    }

    /// Appends fixed SQL text (never caller input).
    pub fn push(&mut self, s: &str) -> &mut Sql {
        self.text.push_str(s);
        self
    }

    /// Appends a quoted identifier.
    pub fn ident(&mut self, name: &str) -> &mut Sql {
        self.text.push_str(&quote(name));
        self
    }

    /// Appends a placeholder bound to `v`, read by PostgreSQL as `ty`.
    pub fn bind(&mut self, v: Value, ty: PgType) -> &mut Sql {
        self.params.push(v);
        let n = self.dialect.placeholder(self.params.len());
        match self.dialect {
            Dialect::Sqlite => self.text.push_str(&n),
            Dialect::Postgres => self
                .text
                .push_str(&format!("CAST({n}::text AS {})", ty.name())),
        }
        self
    }

    /// The PostgreSQL text of the parameters (`None` for NULL), as the
    /// casts [`Sql::bind`] wrote read it.
    pub fn pg_params(&self) -> Vec<Option<String>> {
        self.params.iter().map(pg_text).collect()
    }
}

/// The text PostgreSQL's input function for the value's type reads.
fn pg_text(v: &Value) -> Option<String> {
    Some(match v {
        Value::Null => return None,
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Real(f) if f.is_nan() => "NaN".into(),
        Value::Real(f) if f.is_infinite() => if *f > 0.0 { "Infinity" } else { "-Infinity" }.into(),
        Value::Real(f) => format!("{f:?}"),
        Value::Text(t) => t.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Blob(b) => {
            let hex: String = b.iter().map(|byte| format!("{byte:02x}")).collect();
            format!("\\x{hex}")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_per_dialect() {
        let mut s = Sql::new(Dialect::Postgres);
        s.push("SELECT ").ident("a\"b").push(" WHERE x > ");
        s.bind(Value::UInt(u64::MAX), PgType::Numeric);
        s.push(" AND y = ").bind(Value::Real(0.1), PgType::Float8);
        assert_eq!(
            s.text,
            "SELECT \"a\"\"b\" WHERE x > CAST($1::text AS numeric) AND y = CAST($2::text AS float8)"
        );
        assert_eq!(
            s.pg_params(),
            [Some("18446744073709551615".into()), Some("0.1".into())]
        );
        let mut s = Sql::new(Dialect::Sqlite);
        s.bind(Value::UInt(u64::MAX), PgType::Numeric);
        s.bind(Value::Int(1), PgType::Int8);
        assert_eq!(s.text, "?1?2");
    }

    #[test]
    fn postgres_text_of_each_value() {
        let text = |v| pg_text(&v);
        assert_eq!(text(Value::Null), None);
        assert_eq!(text(Value::Int(-3)).as_deref(), Some("-3"));
        assert_eq!(text(Value::Real(f64::NAN)).as_deref(), Some("NaN"));
        assert_eq!(
            text(Value::Real(f64::NEG_INFINITY)).as_deref(),
            Some("-Infinity")
        );
        assert_eq!(text(Value::Real(1e300)).as_deref(), Some("1e300"));
        assert_eq!(text(Value::Bool(true)).as_deref(), Some("true"));
        assert_eq!(text(Value::Blob(vec![0, 255])).as_deref(), Some("\\x00ff"));
    }
}
