//! The one SQL dialect layer: what the store, the query API and the
//! manager share when they write SQL for SQLite and PostgreSQL.
//!
//! - [`quote`]: identifier quoting, the one way a name is quoted;
//! - [`Dialect`]: each back end's placeholders, and the rewrite of a
//!   statement written once with SQLite's `?N` into PostgreSQL's `$N`;
//! - [`Value`]: a value bound to a parameter, and how SQLite takes it (as
//!   the store writes fields: uint64 above 2^63−1 as 8 bytes, NaN as NULL);
//! - the OML layout's text both back ends write: the `oml_*` columns, the
//!   senders table and the shape of a stream table's DDL. What differs —
//!   column types, statements — stays in [`crate::sqlite::ddl`] and
//!   [`crate::postgres::ddl`].
//!
//! How a [`Value`] reaches PostgreSQL differs on purpose between the two
//! crates that bind them, so each keeps its own. The query API sends every
//! parameter as text behind a cast to the column's type
//! (`CAST($1::text AS numeric)`): uint64 columns are `NUMERIC(20,0)`, which
//! the `postgres` crate has no Rust type for, and text is exact for every
//! type. The manager's schema has no NUMERIC: it binds native values of
//! the type PostgreSQL inferred for each parameter, range-checked (an
//! `i64` bound to an INTEGER column), and reads rows back as [`Value`]s.

use omsp::{OmlType, Schema};

mod dialect;
mod value;

pub use dialect::Dialect;
pub use value::Value;

/// The `oml_*` columns every stream table starts with, after `oml_tuple_id`:
/// the ones a row sets, in the order a row's values are given.
pub const OML_COLUMNS: [&str; 4] = ["oml_sender_id", "oml_seq", "oml_ts_client", "oml_ts_server"];

/// Columns a stream table has before its fields: `oml_tuple_id`, then the
/// [`OML_COLUMNS`].
pub const OML_COLUMN_COUNT: usize = 1 + OML_COLUMNS.len();

/// DDL of the senders table (the reference's, byte for byte, on both back ends).
pub const CREATE_SENDERS: &str =
    "CREATE TABLE _senders (name TEXT PRIMARY KEY, id INTEGER UNIQUE);";

/// Resume state of streamgauge's resumable sessions (spec §3.6), created on
/// first use only, so databases of stock clients never have it.
pub const CREATE_SESSIONS: &str = "CREATE TABLE IF NOT EXISTS _streamgauge_sessions \
     (session TEXT PRIMARY KEY, sender_id INTEGER, data_offset BIGINT);";

/// Quotes an SQL identifier: `"name"`, with embedded quotes doubled. Stream
/// and field names are validated before they get here; quoting is the second
/// line of defence.
pub fn quote(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

/// The column types of one back end's stream tables.
#[derive(Debug, Clone, Copy)]
pub struct ColumnTypes {
    /// Declaration of `oml_tuple_id` (the row's key, numbered by the database).
    pub tuple_id: &'static str,
    /// Types of the [`OML_COLUMNS`], in that order.
    pub oml: [&'static str; 4],
    /// Type of a field of each OML type.
    pub field: fn(OmlType) -> &'static str,
}

/// `CREATE TABLE "<name>" (oml_tuple_id <T>, oml_sender_id <T>, …, "<f>" <T>, …);`
pub fn create_table(schema: &Schema, types: &ColumnTypes) -> String {
    let mut sql = format!(
        "CREATE TABLE {} (oml_tuple_id {}",
        quote(&schema.name),
        types.tuple_id
    );
    for (column, ty) in OML_COLUMNS.iter().zip(types.oml) {
        sql.push_str(", ");
        sql.push_str(column);
        sql.push(' ');
        sql.push_str(ty);
    }
    for f in &schema.fields {
        sql.push_str(", ");
        sql.push_str(&quote(&f.name));
        sql.push(' ');
        sql.push_str((types.field)(f.ty));
    }
    sql.push_str(");");
    sql
}

/// The columns a row sets, quoted and comma-separated (no spaces):
/// `"oml_sender_id","oml_seq","oml_ts_client","oml_ts_server","<f>",…`.
pub fn row_columns(schema: &Schema) -> String {
    let cols: Vec<String> = OML_COLUMNS
        .iter()
        .copied()
        .chain(schema.fields.iter().map(|f| f.name.as_str()))
        .map(quote)
        .collect();
    cols.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_and_lists_columns() {
        assert_eq!(quote("a\"b"), "\"a\"\"b\"");
        let s = Schema::parse("1 t x:int32").unwrap();
        assert_eq!(
            row_columns(&s),
            "\"oml_sender_id\",\"oml_seq\",\"oml_ts_client\",\"oml_ts_server\",\"x\""
        );
    }
}
