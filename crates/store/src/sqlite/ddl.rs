//! SQL text of the OML layout: column types, quoting, table DDL, inserts.

use omsp::{OmlType, Schema};

/// The `oml_*` columns every stream table starts with, after `oml_tuple_id`.
pub const OML_COLUMNS: [&str; 4] = ["oml_sender_id", "oml_seq", "oml_ts_client", "oml_ts_server"];

/// DDL of the senders table (the reference's, byte for byte).
pub const CREATE_SENDERS: &str =
    "CREATE TABLE _senders (name TEXT PRIMARY KEY, id INTEGER UNIQUE);";

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

/// Quotes an SQL identifier: `"name"`, with embedded quotes doubled. Stream
/// and field names are validated before they get here; quoting is the second
/// line of defence.
pub fn quote(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

/// `CREATE TABLE "<name>" (oml_tuple_id INTEGER PRIMARY KEY, …, "<f>" <T>, …);`
pub fn create_table(schema: &Schema) -> String {
    let mut sql = format!(
        "CREATE TABLE {} (oml_tuple_id INTEGER PRIMARY KEY, oml_sender_id INTEGER, \
         oml_seq INTEGER, oml_ts_client REAL, oml_ts_server REAL",
        quote(&schema.name)
    );
    for f in &schema.fields {
        sql.push_str(", ");
        sql.push_str(&quote(&f.name));
        sql.push(' ');
        sql.push_str(sql_type(f.ty));
    }
    sql.push_str(");");
    sql
}

/// `INSERT INTO "<name>" ("oml_sender_id",…,"<f>",…) VALUES (?1,…);`
pub fn insert(schema: &Schema) -> String {
    let cols: Vec<String> = OML_COLUMNS
        .iter()
        .copied()
        .chain(schema.fields.iter().map(|f| f.name.as_str()))
        .map(quote)
        .collect();
    let params: Vec<String> = (1..=cols.len()).map(|i| format!("?{i}")).collect();
    format!(
        "INSERT INTO {} ({}) VALUES ({});",
        quote(&schema.name),
        cols.join(","),
        params.join(",")
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
             \"oml_ts_server\",\"x\",\"y\",\"g\") VALUES (?1,?2,?3,?4,?5,?6,?7);"
        );
        assert_eq!(quote("a\"b"), "\"a\"\"b\"");
    }
}
