//! SQL text of the OML layout in PostgreSQL: column types, table DDL, COPY.
//! The parts both back ends share are in [`crate::sql`].
//!
//! Identifiers are validated names (stream and field names by the protocol
//! decoder, domains by [`omsp::names::is_valid_domain`]), checked here for
//! PostgreSQL's 63-byte limit and always quoted.

use omsp::{OmlType, Schema};

use super::columns::Uint64Layout;
use crate::error::StoreError;
use crate::sql::{self, quote, ColumnTypes};

pub use crate::sql::CREATE_SENDERS;

/// Longest identifier PostgreSQL keeps (NAMEDATALEN − 1); longer ones are
/// silently truncated, which could make two streams share a table.
pub const MAX_IDENTIFIER: usize = 63;

/// The reference's column types, except `oml_seq`, which is INT8 where the
/// reference has INT4: text-mode clients send it as a C `long`, which
/// exceeds 2^31−1 on long runs.
const COLUMN_TYPES: ColumnTypes = ColumnTypes {
    tuple_id: "SERIAL PRIMARY KEY",
    oml: ["INT4", "INT8", "FLOAT8", "FLOAT8"],
    field: pg_type,
};

/// [`COLUMN_TYPES`] with the reference's BIGINT for uint64 and guid
/// ([`Uint64Layout::Bigint`]).
const COLUMN_TYPES_BIGINT: ColumnTypes = ColumnTypes {
    field: pg_type_bigint,
    ..COLUMN_TYPES
};

/// [`pg_type`] with uint64 and guid as the reference's BIGINT.
fn pg_type_bigint(ty: OmlType) -> &'static str {
    match ty {
        OmlType::UInt64 | OmlType::Guid => Uint64Layout::Bigint.sql_type(),
        other => pg_type(other),
    }
}

/// The PostgreSQL column type of an OML type.
///
/// As the reference, except uint64 and guid: the reference's BIGINT cannot
/// hold 2^63 … 2^64−1 (its INSERT fails and aborts the transaction), so
/// they are `NUMERIC(20,0)`, exact and correctly ordered.
pub fn pg_type(ty: OmlType) -> &'static str {
    match ty {
        OmlType::Int32 => "INT4",
        OmlType::UInt32 | OmlType::Int64 => "INT8",
        OmlType::UInt64 | OmlType::Guid => "NUMERIC(20,0)",
        OmlType::Double => "FLOAT8",
        OmlType::Bool => "BOOLEAN",
        OmlType::Blob => "BYTEA",
        OmlType::String
        | OmlType::VecDouble
        | OmlType::VecInt32
        | OmlType::VecUInt32
        | OmlType::VecInt64
        | OmlType::VecUInt64
        | OmlType::VecBool => "TEXT",
    }
}

/// Fails if `name` would be truncated by PostgreSQL.
pub fn check_identifier(name: &str) -> Result<(), StoreError> {
    if name.len() > MAX_IDENTIFIER {
        return Err(StoreError::NameTooLong {
            name: name.to_owned(),
            max: MAX_IDENTIFIER,
        });
    }
    Ok(())
}

/// `CREATE TABLE "<name>" (oml_tuple_id SERIAL PRIMARY KEY, …, "<f>" <T>, …);`,
/// after checking the table and field names against [`MAX_IDENTIFIER`].
pub fn create_table(schema: &Schema) -> Result<String, StoreError> {
    create_table_with(schema, Uint64Layout::Numeric)
}

/// [`create_table`] with uint64 and guid fields laid out as `uint64` says.
pub fn create_table_with(schema: &Schema, uint64: Uint64Layout) -> Result<String, StoreError> {
    check_identifier(&schema.name)?;
    for f in &schema.fields {
        check_identifier(&f.name)?;
    }
    let types = match uint64 {
        Uint64Layout::Numeric => &COLUMN_TYPES,
        Uint64Layout::Bigint => &COLUMN_TYPES_BIGINT,
    };
    Ok(sql::create_table(schema, types))
}

/// `COPY "<name>" ("oml_sender_id",…,"<f>",…) FROM STDIN (FORMAT binary)`.
pub fn copy_in(schema: &Schema) -> String {
    format!(
        "COPY {} ({}) FROM STDIN (FORMAT binary)",
        quote(&schema.name),
        sql::row_columns(schema)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_uses_exact_types() {
        let s = Schema::parse("2 a_b x:uint32 y:[double] g:guid ok:bool").unwrap();
        assert_eq!(
            create_table(&s).unwrap(),
            "CREATE TABLE \"a_b\" (oml_tuple_id SERIAL PRIMARY KEY, oml_sender_id INT4, \
             oml_seq INT8, oml_ts_client FLOAT8, oml_ts_server FLOAT8, \"x\" INT8, \
             \"y\" TEXT, \"g\" NUMERIC(20,0), \"ok\" BOOLEAN);"
        );
        assert_eq!(
            copy_in(&s),
            "COPY \"a_b\" (\"oml_sender_id\",\"oml_seq\",\"oml_ts_client\",\
             \"oml_ts_server\",\"x\",\"y\",\"g\",\"ok\") FROM STDIN (FORMAT binary)"
        );
    }

    #[test]
    fn bigint_layout_for_uint64() {
        let s = Schema::parse("2 t u:uint64 g:guid").unwrap();
        let sql = create_table_with(&s, Uint64Layout::Bigint).unwrap();
        assert!(sql.ends_with("\"u\" INT8, \"g\" INT8);"), "{sql}");
    }

    #[test]
    fn long_names_are_refused() {
        let long = "a".repeat(64);
        let s = Schema::parse(&format!("1 {long} x:int32")).unwrap();
        assert!(matches!(
            create_table(&s),
            Err(StoreError::NameTooLong { .. })
        ));
        let s = Schema::parse(&format!("1 t {long}:int32")).unwrap();
        assert!(matches!(
            create_table(&s),
            Err(StoreError::NameTooLong { .. })
        ));
    }
}
