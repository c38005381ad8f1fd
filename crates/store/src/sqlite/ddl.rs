//! SQL text of the OML layout in SQLite: column types, table DDL, inserts.
//! The parts both back ends share are in [`crate::sql`].

use omsp::{OmlType, Schema};

use crate::sql::{self, ColumnTypes};

use crate::sql::quote;
pub use crate::sql::{CREATE_SENDERS, OML_COLUMNS};

/// The reference's column types: `oml_tuple_id` is the rowid.
const COLUMN_TYPES: ColumnTypes = ColumnTypes {
    tuple_id: "INTEGER PRIMARY KEY",
    oml: ["INTEGER", "INTEGER", "REAL", "REAL"],
    field: sql_type,
};

/// The SQLite column type the reference declares for an OML type.
///
/// The names matter to analysis scripts that read `PRAGMA table_info`; their
/// affinity (INTEGER for the `*INT*` names) matters to how values are kept.
pub fn sql_type(ty: OmlType) -> &'static str {
    match ty {
        OmlType::Int32 | OmlType::Bool => "INTEGER",
        OmlType::UInt32 => "UNSIGNED INTEGER",
        OmlType::Int64 => "BIGINT",
        OmlType::UInt64 | OmlType::Guid => "UNSIGNED BIGINT",
        OmlType::Double => "REAL",
        OmlType::Blob => "BLOB",
        OmlType::String
        | OmlType::VecDouble
        | OmlType::VecInt32
        | OmlType::VecUInt32
        | OmlType::VecInt64
        | OmlType::VecUInt64
        | OmlType::VecBool => "TEXT",
    }
}

/// `CREATE TABLE "<name>" (oml_tuple_id INTEGER PRIMARY KEY, …, "<f>" <T>, …);`
pub fn create_table(schema: &Schema) -> String {
    sql::create_table(schema, &COLUMN_TYPES)
}

/// `INSERT INTO "<name>" ("oml_sender_id",…,"<f>",…) VALUES (?1,…);`
pub fn insert(schema: &Schema) -> String {
    insert_rows(schema, 1)
}

/// One INSERT of `rows` rows: `… VALUES (?,…),(?,…),…;`, parameters
/// numbered row after row (row `r`, column `c` is `r * columns + c + 1`).
pub fn insert_rows(schema: &Schema, rows: usize) -> String {
    let columns = OML_COLUMNS.len() + schema.fields.len();
    let one = format!("({})", vec!["?"; columns].join(","));
    format!(
        "INSERT INTO {} ({}) VALUES {};",
        quote(&schema.name),
        sql::row_columns(schema),
        vec![one; rows.max(1)].join(",")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_matches_the_reference_layout() {
        let s = Schema::parse("2 a_b x:uint32 y:[double] g:guid").unwrap();
        assert_eq!(
            create_table(&s),
            "CREATE TABLE \"a_b\" (oml_tuple_id INTEGER PRIMARY KEY, oml_sender_id INTEGER, \
             oml_seq INTEGER, oml_ts_client REAL, oml_ts_server REAL, \"x\" UNSIGNED INTEGER, \
             \"y\" TEXT, \"g\" UNSIGNED BIGINT);"
        );
        assert_eq!(
            insert(&s),
            "INSERT INTO \"a_b\" (\"oml_sender_id\",\"oml_seq\",\"oml_ts_client\",\
             \"oml_ts_server\",\"x\",\"y\",\"g\") VALUES (?,?,?,?,?,?,?);"
        );
        assert!(insert_rows(&s, 3)
            .ends_with(" VALUES (?,?,?,?,?,?,?),(?,?,?,?,?,?,?),(?,?,?,?,?,?,?);"));
        assert_eq!(quote("a\"b"), "\"a\"\"b\"");
    }
}
