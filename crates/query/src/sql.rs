//! SQL text with bound parameters for both backends. Every identifier goes
//! through [`Sql::ident`] (double-quoted) and every value through
//! [`Sql::bind`] (a placeholder): nothing a caller sends is ever spliced
//! into the statement text.

use crate::export::quote;

/// Which SQL flavour to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite: `?N` placeholders, typed values.
    Sqlite,
    /// PostgreSQL: `$N` placeholders, values sent as text and cast.
    Postgres,
}

/// A value bound to a placeholder.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    /// Signed integers (also row ids).
    Int(i64),
    /// Unsigned 64-bit integers (SQLite: an 8-byte blob above 2^63-1, as stored).
    UInt(u64),
    /// Doubles (timestamps, double fields).
    Real(f64),
    /// Strings.
    Text(String),
    /// Booleans (SQLite: 0/1).
    Bool(bool),
}

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
    /// Values of the placeholders, in order.
    pub params: Vec<Param>,
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

    /// Appends a placeholder bound to `p`, read by PostgreSQL as `ty`.
    pub fn bind(&mut self, p: Param, ty: PgType) -> &mut Sql {
        self.params.push(p);
        let n = self.params.len();
        match self.dialect {
            Dialect::Sqlite => self.text.push_str(&format!("?{n}")),
            Dialect::Postgres => self
                .text
                .push_str(&format!("CAST(${n}::text AS {})", ty.name())),
        }
        self
    }

    /// The SQLite values of the parameters.
    pub fn sqlite_params(&self) -> Vec<rusqlite::types::Value> {
        use rusqlite::types::Value as V;
        self.params
            .iter()
            .map(|p| match p {
                Param::Int(i) => V::Integer(*i),
                Param::UInt(u) => match i64::try_from(*u) {
                    Ok(i) => V::Integer(i),
                    Err(_) => V::Blob(u.to_be_bytes().to_vec()),
                },
                Param::Real(f) if f.is_nan() => V::Null,
                Param::Real(f) => V::Real(*f),
                Param::Text(t) => V::Text(t.clone()),
                Param::Bool(b) => V::Integer(i64::from(*b)),
            })
            .collect()
    }

    /// The PostgreSQL text of the parameters.
    pub fn pg_params(&self) -> Vec<String> {
        self.params
            .iter()
            .map(|p| match p {
                Param::Int(i) => i.to_string(),
                Param::UInt(u) => u.to_string(),
                Param::Real(f) if f.is_nan() => "NaN".into(),
                Param::Real(f) if f.is_infinite() => {
                    if *f > 0.0 { "Infinity" } else { "-Infinity" }.into()
                }
                Param::Real(f) => format!("{f:?}"),
                Param::Text(t) => t.clone(),
                Param::Bool(b) => b.to_string(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_per_dialect() {
        let mut s = Sql::new(Dialect::Postgres);
        s.push("SELECT ").ident("a\"b").push(" WHERE x > ");
        s.bind(Param::UInt(u64::MAX), PgType::Numeric);
        assert_eq!(
            s.text,
            "SELECT \"a\"\"b\" WHERE x > CAST($1::text AS numeric)"
        );
        assert_eq!(s.pg_params(), ["18446744073709551615"]);
        let mut s = Sql::new(Dialect::Sqlite);
        s.bind(Param::UInt(u64::MAX), PgType::Numeric);
        assert_eq!(s.text, "?1");
        assert_eq!(
            s.sqlite_params(),
            [rusqlite::types::Value::Blob(vec![255; 8])]
        );
    }
}
