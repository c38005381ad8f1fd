//! `where=` predicates: `field op value` with `=`, `!=`, `<`, `<=`, `>`,
//! `>=`, joined by `,` (or repeated parameters). Parsed into a typed
//! [`Predicate`] against the stream's columns (unknown names are refused),
//! the value converted to the field's type, then written with a quoted
//! identifier and a bound parameter: caller text never reaches SQL.

use omsp::OmlType;

use crate::error::QueryError;
use crate::export::{Column, Kind};
use crate::sql::{PgType, Sql, Value};

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Op {
    fn sql(self) -> &'static str {
        match self {
            Op::Eq => " = ",
            Op::Ne => " <> ",
            Op::Lt => " < ",
            Op::Le => " <= ",
            Op::Gt => " > ",
            Op::Ge => " >= ",
        }
    }
}

/// One parsed predicate.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicate {
    /// A column of the stream (checked).
    pub column: String,
    /// The comparison.
    pub op: Op,
    /// The value, typed like the column.
    pub value: Value,
    /// How PostgreSQL reads the value.
    pub pg: PgType,
}

/// Splits one `where` parameter on commas outside double quotes.
pub fn split(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in s.chars() {
        match c {
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => {
                if c == '"' {
                    quoted = !quoted;
                }
                cur.push(c);
            }
        }
    }
    out.push(cur);
    out.into_iter().filter(|x| !x.trim().is_empty()).collect()
}

/// Parses `field op value` against `cols`.
pub fn parse(s: &str, cols: &[Column]) -> Result<Predicate, QueryError> {
    let s = s.trim();
    let name_len = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
        .map_or(s.len(), |(i, _)| i);
    let (name, rest) = s.split_at(name_len);
    if name.is_empty() {
        return Err(QueryError::bad(
            "where",
            format!("{s:?}: expected `field op value`, e.g. rtt>10.5"),
        ));
    }
    let rest = rest.trim_start();
    let (op, value) = [
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("!=", Op::Ne),
        ("=", Op::Eq),
        ("<", Op::Lt),
        (">", Op::Gt),
    ]
    .iter()
    .find_map(|(t, op)| rest.strip_prefix(t).map(|v| (*op, v.trim())))
    .ok_or_else(|| {
        QueryError::bad(
            "where",
            format!("{s:?}: expected an operator (=, !=, <, <=, >, >=) after {name:?}"),
        )
    })?;
    let col = cols
        .iter()
        .find(|c| c.name == name)
        .ok_or_else(|| QueryError::UnknownField {
            param: "where",
            field: name.to_owned(),
            existing: cols.iter().map(|c| c.name.clone()).collect(),
        })?;
    let unquoted = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(value);
    let bad = |what: &str| {
        QueryError::bad(
            "where",
            format!(
                "{s:?}: {value:?} is not {what} (field {name} is {})",
                type_name(col.kind)
            ),
        )
    };
    let (value, pg) = match col.kind {
        Kind::Meta => (
            Value::Int(unquoted.parse().map_err(|_| bad("an integer"))?),
            PgType::Int8,
        ),
        Kind::Time => (
            Value::Real(finite(unquoted).ok_or_else(|| bad("a number"))?),
            PgType::Float8,
        ),
        Kind::Field(t) => match t {
            OmlType::Int32 | OmlType::Int64 => (
                Value::Int(unquoted.parse().map_err(|_| bad("an integer"))?),
                PgType::Int8,
            ),
            OmlType::UInt32 => (
                Value::Int(unquoted.parse::<u32>().map_err(|_| bad("a uint32"))?.into()),
                PgType::Int8,
            ),
            OmlType::UInt64 | OmlType::Guid => (
                Value::UInt(unquoted.parse().map_err(|_| bad("a uint64"))?),
                PgType::Numeric,
            ),
            OmlType::Double => (
                Value::Real(finite(unquoted).ok_or_else(|| bad("a finite number"))?),
                PgType::Float8,
            ),
            OmlType::Bool => (
                Value::Bool(match unquoted {
                    "true" | "1" => true,
                    "false" | "0" => false,
                    _ => return Err(bad("true or false")),
                }),
                PgType::Bool,
            ),
            OmlType::String => (Value::Text(unquoted.to_owned()), PgType::Text),
            _ => {
                return Err(QueryError::bad(
                    "where",
                    format!("{s:?}: field {name} ({}) cannot be compared", t.name()),
                ))
            }
        },
    };
    Ok(Predicate {
        column: col.name.clone(),
        op,
        value,
        pg,
    })
}

fn finite(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

fn type_name(k: Kind) -> &'static str {
    match k {
        Kind::Meta => "an integer",
        Kind::Time => "a time in seconds",
        Kind::Field(t) => t.name(),
    }
}

impl Predicate {
    /// Appends ` AND "column" op ?` to `sql`.
    pub fn write(&self, sql: &mut Sql) {
        sql.push(" AND ").ident(&self.column).push(self.op.sql());
        sql.bind(self.value.clone(), self.pg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::columns;
    use crate::sql::Dialect;
    use omsp::Schema;
    use proptest::prelude::*;

    fn cols() -> Vec<Column> {
        columns(
            &Schema::parse("1 s_t n:int32 u:uint64 d:double s:string b:bool v:[double]").unwrap(),
        )
    }

    #[test]
    fn typed_values() {
        let c = cols();
        let p = parse("u>=18446744073709551615", &c).unwrap();
        assert_eq!((p.op, p.value), (Op::Ge, Value::UInt(u64::MAX)));
        let p = parse(r#"s = "a,b""#, &c).unwrap();
        assert_eq!(p.value, Value::Text("a,b".into()));
        assert_eq!(split(r#"n>1,s="x,y",b=true"#).len(), 3);
        assert!(matches!(
            parse("zz=1", &c),
            Err(QueryError::UnknownField { .. })
        ));
        assert!(matches!(
            parse("n=abc", &c),
            Err(QueryError::BadParameter { .. })
        ));
        assert!(matches!(
            parse("v=1", &c),
            Err(QueryError::BadParameter { .. })
        ));
        assert!(matches!(
            parse("n~1", &c),
            Err(QueryError::BadParameter { .. })
        ));
        assert!(matches!(
            parse("d=NaN", &c),
            Err(QueryError::BadParameter { .. })
        ));
    }

    proptest! {
        /// Whatever the input, the SQL text holds only a known quoted
        /// column, an operator and a placeholder: the value is bound.
        #[test]
        fn input_never_reaches_sql(s in ".*", name in "[a-z]{1,3}", v in ".*") {
            let c = cols();
            for input in [s.clone(), format!("{name}={v}"), format!("s={v}"), format!("s=\"{v}\"")] {
                if let Ok(p) = parse(&input, &c) {
                    for d in [Dialect::Sqlite, Dialect::Postgres] {
                        let mut sql = Sql::new(d);
                        p.write(&mut sql);
                        let ok = c.iter().any(|col| {
                            ["=", "<>", "<", "<=", ">", ">="].iter().any(|op| {
                                let ph = match d {
                                    Dialect::Sqlite => "?1".to_owned(),
                                    Dialect::Postgres => format!("CAST($1::text AS {})", match p.pg {
                                        PgType::Int8 => "int8",
                                        PgType::Numeric => "numeric",
                                        PgType::Float8 => "float8",
                                        PgType::Text => "text",
                                        PgType::Bool => "boolean",
                                    }),
                                };
                                sql.text == format!(" AND \"{}\" {op} {ph}", col.name)
                            })
                        });
                        prop_assert!(ok, "{}", sql.text);
                        prop_assert_eq!(sql.params.len(), 1);
                    }
                }
            }
        }
    }
}
