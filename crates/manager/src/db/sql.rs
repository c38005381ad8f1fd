//! The small executor the queries are written against, so each query is
//! written once for SQLite and PostgreSQL.
//!
//! Queries use SQLite's numbered placeholders (`?1`, `?2`, …), which
//! [`Dialect::rewrite_placeholders`] turns into PostgreSQL's `$1`, `$2`, …
//! for that backend, and stick to SQL both accept: `INSERT … RETURNING id`
//! instead of `last_insert_rowid()`, `ON CONFLICT DO NOTHING` instead of
//! `INSERT OR IGNORE`, `CAST(?1 AS BIGINT)` where only a comparison with
//! NULL would leave a parameter's type open, quoted `"user"` (a keyword in
//! PostgreSQL), and no comments in the SQL text (see the rewrite's limits).
//! Only the schema (the migrations) is written per backend.
//!
//! Values cross the boundary as [`Value`]s (the store's, shared with the
//! query API, which also binds them) and rows come back whole ([`Row`]);
//! the conversions are where the two type systems meet:
//!
//! | Rust | SQLite | PostgreSQL |
//! |---|---|---|
//! | `i64` (ids, Unix seconds, versions) | INTEGER | BIGINT (INTEGER for ports) |
//! | `f64` | REAL | DOUBLE PRECISION |
//! | `bool` | INTEGER 0/1 | BOOLEAN |
//! | `String` (names, JSON documents) | TEXT | TEXT |
//! | `Vec<u8>` | BLOB | BYTEA |
//!
//! Times are Unix seconds in integer (or, for run events, floating)
//! columns in both, never a timestamp type, so nothing depends on the
//! server's time zone. A parameter is converted to the type PostgreSQL
//! inferred for it (an `i64` bound to an INTEGER column is range-checked,
//! a `bool` to a BIGINT one becomes 0/1), and a column is read as what
//! its type says; a mismatch is an error naming the column, never a
//! silent truncation.

use std::cell::RefCell;
use std::collections::HashMap;

use postgres::types::{ToSql, Type};
use store::sql::{Dialect, Value};

/// What a query may fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// SQLite's error.
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// PostgreSQL's error (with its SQLSTATE and detail when it has them).
    #[error("PostgreSQL: {}", describe_pg(.0))]
    Postgres(#[from] postgres::Error),
    /// A value did not fit where it went.
    #[error("{0}")]
    Type(String),
    /// A query that must return a row returned none.
    #[error("no such row")]
    NoRows,
    /// The database holds a schema newer than this manager knows.
    #[error(
        "the database's schema is version {found}, newer than this manager's {known}: \
         run the newer manager, or restore a backup taken before it migrated"
    )]
    NewerSchema {
        /// The database's version.
        found: i64,
        /// The newest this build knows.
        known: i64,
    },
}

/// Shorthand for query results.
pub type Result<T> = std::result::Result<T, Error>;

/// A PostgreSQL error with what the server said about it.
pub fn describe_pg(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut s = format!("{} ({})", db.message(), db.code().code());
            if let Some(d) = db.detail() {
                s.push_str(": ");
                s.push_str(d);
            }
            s
        }
        None => e.to_string(),
    }
}

/// What kind of constraint a statement violated, if that is why it
/// failed (both backends map to the same kinds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// A UNIQUE or PRIMARY KEY constraint: the name (or pair) is taken.
    Unique(String),
    /// A foreign key, CHECK or NOT NULL constraint: the statement refers to
    /// something missing or still in use, or carries a value the schema
    /// refuses.
    Other(String),
}

impl Error {
    /// The violated constraint, if that is the error.
    pub fn violation(&self) -> Option<Violation> {
        match self {
            Error::Sqlite(rusqlite::Error::SqliteFailure(f, msg))
                if f.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                let what = msg.clone().unwrap_or_default();
                Some(if what.contains("UNIQUE") || what.contains("PRIMARY KEY") {
                    Violation::Unique(what)
                } else {
                    Violation::Other(what)
                })
            }
            Error::Postgres(e) => {
                let db = e.as_db_error()?;
                let what = db.detail().unwrap_or(db.message()).to_owned();
                let code = db.code().code();
                if code == "23505" {
                    Some(Violation::Unique(what))
                } else if code.starts_with("23") {
                    Some(Violation::Other(what))
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// Whether the database could not be reached or was busy (worth
    /// answering 503 rather than 500).
    pub fn unavailable(&self) -> bool {
        match self {
            Error::Sqlite(rusqlite::Error::SqliteFailure(f, _)) => matches!(
                f.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            ),
            Error::Postgres(e) => {
                e.is_closed()
                    || match e.code() {
                        // Connection exceptions, insufficient resources,
                        // operator intervention (e.g. the server shutting down).
                        Some(c) => {
                            let c = c.code();
                            c.starts_with("08") || c.starts_with("53") || c.starts_with("57")
                        }
                        // No SQLSTATE: the connection itself failed.
                        None => true,
                    }
            }
            _ => false,
        }
    }
}

/// Turns a Rust value into a parameter.
pub trait ToValue {
    /// The parameter.
    fn to_value(&self) -> Value;
}

macro_rules! int_to_value {
    ($($t:ty),*) => {$(
        impl ToValue for $t {
            fn to_value(&self) -> Value {
                Value::Int(i64::from(*self))
            }
        }
    )*};
}
int_to_value!(i64, i32, i16, u32, u16, u8);

impl ToValue for f64 {
    fn to_value(&self) -> Value {
        Value::Real(*self)
    }
}

impl ToValue for bool {
    fn to_value(&self) -> Value {
        Value::Bool(*self)
    }
}

impl ToValue for str {
    fn to_value(&self) -> Value {
        Value::Text(self.to_owned())
    }
}

impl ToValue for String {
    fn to_value(&self) -> Value {
        Value::Text(self.clone())
    }
}

impl ToValue for [u8] {
    fn to_value(&self) -> Value {
        Value::Blob(self.to_vec())
    }
}

impl ToValue for Vec<u8> {
    fn to_value(&self) -> Value {
        Value::Blob(self.clone())
    }
}

impl ToValue for Value {
    fn to_value(&self) -> Value {
        self.clone()
    }
}

impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}

impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value {
        match self {
            Some(v) => v.to_value(),
            None => Value::Null,
        }
    }
}

/// A statement's parameters: `()`, an array, or a tuple of [`ToValue`]s.
pub trait Params {
    /// The values, in placeholder order (`?1` first).
    fn values(&self) -> Vec<Value>;
}

impl Params for () {
    fn values(&self) -> Vec<Value> {
        Vec::new()
    }
}

impl<T: ToValue, const N: usize> Params for [T; N] {
    fn values(&self) -> Vec<Value> {
        self.iter().map(ToValue::to_value).collect()
    }
}

impl<T: ToValue> Params for &[T] {
    fn values(&self) -> Vec<Value> {
        self.iter().map(ToValue::to_value).collect()
    }
}

macro_rules! tuple_params {
    ($($n:tt $t:ident),+) => {
        impl<$($t: ToValue),+> Params for ($($t,)+) {
            fn values(&self) -> Vec<Value> {
                vec![$(self.$n.to_value()),+]
            }
        }
    };
}
tuple_params!(0 A);
tuple_params!(0 A, 1 B);
tuple_params!(0 A, 1 B, 2 C);
tuple_params!(0 A, 1 B, 2 C, 3 D);
tuple_params!(0 A, 1 B, 2 C, 3 D, 4 E);
tuple_params!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F);
tuple_params!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G);
tuple_params!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H);
tuple_params!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I);
tuple_params!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J);
tuple_params!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K);
tuple_params!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L);

/// Reads a column into a Rust value.
pub trait FromValue: Sized {
    /// The value, or why it does not fit.
    fn from_value(v: &Value) -> std::result::Result<Self, String>;
}

impl FromValue for i64 {
    fn from_value(v: &Value) -> std::result::Result<i64, String> {
        match v {
            Value::Int(i) => Ok(*i),
            Value::Bool(b) => Ok(i64::from(*b)),
            other => Err(format!("expected an integer, found {}", other.kind())),
        }
    }
}

macro_rules! narrow_from_value {
    ($($t:ty),*) => {$(
        impl FromValue for $t {
            fn from_value(v: &Value) -> std::result::Result<$t, String> {
                let i = i64::from_value(v)?;
                <$t>::try_from(i).map_err(|_| format!("{i} does not fit in {}", stringify!($t)))
            }
        }
    )*};
}
narrow_from_value!(i32, u16, u32, u64);

impl FromValue for f64 {
    fn from_value(v: &Value) -> std::result::Result<f64, String> {
        match v {
            Value::Real(f) => Ok(*f),
            // SQLite hands back an integral REAL stored by hand as INTEGER.
            Value::Int(i) => Ok(*i as f64),
            other => Err(format!("expected a number, found {}", other.kind())),
        }
    }
}

impl FromValue for bool {
    fn from_value(v: &Value) -> std::result::Result<bool, String> {
        match v {
            Value::Bool(b) => Ok(*b),
            Value::Int(i) => Ok(*i != 0),
            other => Err(format!("expected a boolean, found {}", other.kind())),
        }
    }
}

impl FromValue for String {
    fn from_value(v: &Value) -> std::result::Result<String, String> {
        match v {
            Value::Text(s) => Ok(s.clone()),
            other => Err(format!("expected text, found {}", other.kind())),
        }
    }
}

impl FromValue for Vec<u8> {
    fn from_value(v: &Value) -> std::result::Result<Vec<u8>, String> {
        match v {
            Value::Blob(b) => Ok(b.clone()),
            other => Err(format!("expected bytes, found {}", other.kind())),
        }
    }
}

impl FromValue for Value {
    fn from_value(v: &Value) -> std::result::Result<Value, String> {
        Ok(v.clone())
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: &Value) -> std::result::Result<Option<T>, String> {
        match v {
            Value::Null => Ok(None),
            v => T::from_value(v).map(Some),
        }
    }
}

/// One result row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    values: Vec<Value>,
}

impl Row {
    /// Column `i` (from 0) as a `T`.
    pub fn get<T: FromValue>(&self, i: usize) -> Result<T> {
        let v = self
            .values
            .get(i)
            .ok_or_else(|| Error::Type(format!("column {i}: the row has {}", self.values.len())))?;
        T::from_value(v).map_err(|m| Error::Type(format!("column {i}: {m}")))
    }

    /// Every column.
    pub fn values(&self) -> &[Value] {
        &self.values
    }
}

/// A PostgreSQL connection with its prepared statements.
pub(crate) struct PgSession {
    pub(crate) client: postgres::Client,
    statements: HashMap<String, postgres::Statement>,
    /// A transaction is open (left open only by a panic: rolled back
    /// before the connection is used again).
    pub(crate) in_tx: bool,
}

impl PgSession {
    pub(crate) fn new(client: postgres::Client) -> PgSession {
        PgSession {
            client,
            statements: HashMap::new(),
            in_tx: false,
        }
    }

    fn statement(&mut self, sql: &str) -> Result<postgres::Statement> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self
            .client
            .prepare(&Dialect::Postgres.rewrite_placeholders(sql))?;
        if self.statements.len() >= 256 {
            self.statements.clear();
        }
        self.statements.insert(sql.to_owned(), s.clone());
        Ok(s)
    }

    fn run(&mut self, sql: &str, params: &[Value], rows: bool) -> Result<(u64, Vec<Row>)> {
        let stmt = self.statement(sql)?;
        if stmt.params().len() != params.len() {
            return Err(Error::Type(format!(
                "the statement takes {} parameters, {} given: {sql}",
                stmt.params().len(),
                params.len()
            )));
        }
        let bound = params
            .iter()
            .zip(stmt.params())
            .enumerate()
            .map(|(i, (v, ty))| {
                pg_param(v, ty).map_err(|m| Error::Type(format!("parameter ?{}: {m}", i + 1)))
            })
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&(dyn ToSql + Sync)> = bound.iter().map(|b| &**b as _).collect();
        if !rows {
            return Ok((self.client.execute(&stmt, &refs)?, Vec::new()));
        }
        let found = self.client.query(&stmt, &refs)?;
        let rows = found.iter().map(pg_row).collect::<Result<Vec<_>>>()?;
        Ok((rows.len() as u64, rows))
    }

    pub(crate) fn batch(&mut self, sql: &str) -> Result<()> {
        Ok(self.client.batch_execute(sql)?)
    }
}

type Param = Box<dyn ToSql + Sync>;

/// The PostgreSQL types the manager reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PgKind {
    Int8,
    Int4,
    Int2,
    Float8,
    Float4,
    Bool,
    Text,
    Bytea,
    Other,
}

fn pg_kind(ty: &Type) -> PgKind {
    let table = [
        (Type::INT8, PgKind::Int8),
        (Type::INT4, PgKind::Int4),
        (Type::INT2, PgKind::Int2),
        (Type::FLOAT8, PgKind::Float8),
        (Type::FLOAT4, PgKind::Float4),
        (Type::BOOL, PgKind::Bool),
        (Type::TEXT, PgKind::Text),
        (Type::VARCHAR, PgKind::Text),
        (Type::BPCHAR, PgKind::Text),
        (Type::NAME, PgKind::Text),
        (Type::UNKNOWN, PgKind::Text),
        (Type::BYTEA, PgKind::Bytea),
    ];
    table
        .iter()
        .find(|(t, _)| t == ty)
        .map_or(PgKind::Other, |(_, k)| *k)
}

/// A value as the Rust type that PostgreSQL's inferred parameter type
/// takes.
fn pg_param(v: &Value, ty: &Type) -> std::result::Result<Param, String> {
    let kind = pg_kind(ty);
    let mismatch = || format!("{} cannot be sent as {}", v.kind(), ty.name());
    let int = |i: i64| -> std::result::Result<Param, String> {
        Ok(match kind {
            PgKind::Int8 => Box::new(i),
            PgKind::Int4 => Box::new(i32::try_from(i).map_err(|_| format!("{i} exceeds int4"))?),
            PgKind::Int2 => Box::new(i16::try_from(i).map_err(|_| format!("{i} exceeds int2"))?),
            PgKind::Float8 => Box::new(i as f64),
            PgKind::Bool => Box::new(i != 0),
            PgKind::Text => Box::new(i.to_string()),
            _ => return Err(mismatch()),
        })
    };
    Ok(match v {
        Value::Null => match kind {
            PgKind::Int8 => Box::new(None::<i64>),
            PgKind::Int4 => Box::new(None::<i32>),
            PgKind::Int2 => Box::new(None::<i16>),
            PgKind::Float8 => Box::new(None::<f64>),
            PgKind::Float4 => Box::new(None::<f32>),
            PgKind::Bool => Box::new(None::<bool>),
            PgKind::Bytea => Box::new(None::<Vec<u8>>),
            PgKind::Text => Box::new(None::<String>),
            PgKind::Other => return Err(mismatch()),
        },
        Value::Int(i) => int(*i)?,
        Value::UInt(u) => int(i64::try_from(*u).map_err(|_| format!("{u} exceeds int8"))?)?,
        Value::Bool(b) => match kind {
            PgKind::Bool => Box::new(*b),
            _ => int(i64::from(*b))?,
        },
        Value::Real(f) => match kind {
            PgKind::Float8 => Box::new(*f),
            PgKind::Float4 => Box::new(*f as f32),
            _ => return Err(mismatch()),
        },
        Value::Text(s) => match kind {
            PgKind::Text => Box::new(s.clone()),
            _ => return Err(mismatch()),
        },
        Value::Blob(b) => match kind {
            PgKind::Bytea => Box::new(b.clone()),
            _ => return Err(mismatch()),
        },
    })
}

fn pg_row(r: &postgres::Row) -> Result<Row> {
    let mut values = Vec::with_capacity(r.len());
    for (i, col) in r.columns().iter().enumerate() {
        let ty = col.type_();
        let v = match pg_kind(ty) {
            PgKind::Int8 => r.try_get::<_, Option<i64>>(i)?.map(Value::Int),
            PgKind::Int4 => r
                .try_get::<_, Option<i32>>(i)?
                .map(|x| Value::Int(x.into())),
            PgKind::Int2 => r
                .try_get::<_, Option<i16>>(i)?
                .map(|x| Value::Int(x.into())),
            PgKind::Float8 => r.try_get::<_, Option<f64>>(i)?.map(Value::Real),
            PgKind::Float4 => r
                .try_get::<_, Option<f32>>(i)?
                .map(|x| Value::Real(x.into())),
            PgKind::Bool => r.try_get::<_, Option<bool>>(i)?.map(Value::Bool),
            PgKind::Text => r.try_get::<_, Option<String>>(i)?.map(Value::Text),
            PgKind::Bytea => r.try_get::<_, Option<Vec<u8>>>(i)?.map(Value::Blob),
            PgKind::Other => {
                return Err(Error::Type(format!(
                    "column {} ({}): type {} is not read by the manager",
                    i,
                    col.name(),
                    ty.name()
                )))
            }
        };
        values.push(v.unwrap_or(Value::Null));
    }
    Ok(Row { values })
}

fn sqlite_row(r: &rusqlite::Row<'_>, n: usize) -> Result<Row> {
    use rusqlite::types::ValueRef;
    let mut values = Vec::with_capacity(n);
    for i in 0..n {
        values.push(match r.get_ref(i)? {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(x) => Value::Int(x),
            ValueRef::Real(x) => Value::Real(x),
            ValueRef::Text(t) => Value::Text(
                std::str::from_utf8(t)
                    .map_err(|e| Error::Type(format!("column {i}: {e}")))?
                    .to_owned(),
            ),
            ValueRef::Blob(b) => Value::Blob(b.to_vec()),
        });
    }
    Ok(Row { values })
}

enum Inner<'a> {
    Sqlite(&'a rusqlite::Connection),
    Postgres(RefCell<&'a mut PgSession>),
}

/// A connection (or open transaction) handed to the queries by
/// [`super::Db::with`] and [`super::Db::tx`].
pub struct Conn<'a> {
    inner: Inner<'a>,
}

impl<'a> Conn<'a> {
    pub(crate) fn sqlite(c: &'a rusqlite::Connection) -> Conn<'a> {
        Conn {
            inner: Inner::Sqlite(c),
        }
    }

    pub(crate) fn postgres(s: &'a mut PgSession) -> Conn<'a> {
        Conn {
            inner: Inner::Postgres(RefCell::new(s)),
        }
    }

    /// The backend behind it.
    pub fn backend(&self) -> Dialect {
        match self.inner {
            Inner::Sqlite(_) => Dialect::Sqlite,
            Inner::Postgres(_) => Dialect::Postgres,
        }
    }

    fn run(&self, sql: &str, params: Vec<Value>, rows: bool) -> Result<(u64, Vec<Row>)> {
        match &self.inner {
            Inner::Sqlite(c) => {
                let mut st = c.prepare_cached(sql)?;
                let n = st.column_count();
                let bound = rusqlite::params_from_iter(&params);
                if !rows {
                    return Ok((st.execute(bound)? as u64, Vec::new()));
                }
                let mut found = Vec::new();
                let mut q = st.query(bound)?;
                while let Some(r) = q.next()? {
                    found.push(sqlite_row(r, n)?);
                }
                Ok((found.len() as u64, found))
            }
            Inner::Postgres(s) => s.borrow_mut().run(sql, &params, rows),
        }
    }

    /// Runs a statement that returns no rows; answers how many it changed.
    pub fn execute(&self, sql: &str, params: impl Params) -> Result<u64> {
        Ok(self.run(sql, params.values(), false)?.0)
    }

    /// Every row of a query.
    pub fn query(&self, sql: &str, params: impl Params) -> Result<Vec<Row>> {
        Ok(self.run(sql, params.values(), true)?.1)
    }

    /// Every row, mapped.
    pub fn query_map<T>(
        &self,
        sql: &str,
        params: impl Params,
        f: impl FnMut(&Row) -> Result<T>,
    ) -> Result<Vec<T>> {
        self.query(sql, params)?.iter().map(f).collect()
    }

    /// The first row, mapped, if there is one.
    pub fn query_opt<T>(
        &self,
        sql: &str,
        params: impl Params,
        f: impl FnOnce(&Row) -> Result<T>,
    ) -> Result<Option<T>> {
        self.query(sql, params)?.first().map(f).transpose()
    }

    /// The first row, mapped ([`Error::NoRows`] when there is none).
    pub fn query_row<T>(
        &self,
        sql: &str,
        params: impl Params,
        f: impl FnOnce(&Row) -> Result<T>,
    ) -> Result<T> {
        self.query_opt(sql, params, f)?.ok_or(Error::NoRows)
    }

    /// The first column of the first row.
    pub fn query_one<T: FromValue>(&self, sql: &str, params: impl Params) -> Result<T> {
        self.query_row(sql, params, |r| r.get(0))
    }

    /// Runs an `INSERT … RETURNING id`; answers the id.
    pub fn insert(&self, sql: &str, params: impl Params) -> Result<i64> {
        debug_assert!(sql.contains("RETURNING id"), "{sql}");
        self.query_one(sql, params)
    }

    /// Runs `f` in a transaction: committed when it answers `Ok`, rolled
    /// back otherwise. Transactions do not nest.
    pub fn transaction<T>(&self, f: impl FnOnce(&Conn<'_>) -> Result<T>) -> Result<T> {
        self.batch("BEGIN")?;
        self.set_in_tx(true);
        let result = f(self);
        let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
        let ended = self.batch(end);
        self.set_in_tx(false);
        match (result, ended) {
            (Ok(v), Ok(())) => Ok(v),
            (Ok(_), Err(e)) => {
                let _ = self.batch("ROLLBACK");
                Err(e)
            }
            (Err(e), _) => Err(e),
        }
    }

    fn set_in_tx(&self, on: bool) {
        if let Inner::Postgres(s) = &self.inner {
            s.borrow_mut().in_tx = on;
        }
    }

    /// Runs several statements without parameters (schema changes).
    pub fn batch(&self, sql: &str) -> Result<()> {
        match &self.inner {
            Inner::Sqlite(c) => Ok(c.execute_batch(sql)?),
            Inner::Postgres(s) => s.borrow_mut().batch(sql),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_round_trip_of_every_type() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        let conn = Conn::sqlite(&c);
        conn.batch(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, i INTEGER, f REAL, s TEXT, b INTEGER, x BLOB)",
        )
        .unwrap();
        let id = conn
            .insert(
                "INSERT INTO t (i, f, s, b, x) VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id",
                (i64::MAX, 0.5, "é", true, vec![0u8, 255]),
            )
            .unwrap();
        let r = conn
            .query_row("SELECT i, f, s, b, x FROM t WHERE id = ?1", [id], |r| {
                Ok((
                    r.get::<i64>(0)?,
                    r.get::<f64>(1)?,
                    r.get::<String>(2)?,
                    r.get::<bool>(3)?,
                    r.get::<Vec<u8>>(4)?,
                ))
            })
            .unwrap();
        assert_eq!(r, (i64::MAX, 0.5, "é".into(), true, vec![0, 255]));
        let none: Option<i64> = conn
            .query_opt("SELECT i FROM t WHERE id = ?1", [id + 1], |r| r.get(0))
            .unwrap();
        assert_eq!(none, None);
        assert!(matches!(
            conn.query_one::<i64>("SELECT i FROM t WHERE id = ?1", [id + 1]),
            Err(Error::NoRows)
        ));
        let e = conn.query_one::<u16>("SELECT i FROM t", ()).unwrap_err();
        assert!(e.to_string().contains("does not fit"), "{e}");
    }
}
