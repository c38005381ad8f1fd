//! `--from-db`: a description recovered from an OML database, so that an
//! old experiment's streams get typed helpers. Each `<app>_<mp>` table
//! becomes a measurement point; field types come from the server's
//! `table_<name>` schema rows in `_experiment_metadata` (exact), or from
//! the column types when a table has none (guids then read as uint64).

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::error::Error;
use crate::model::{App, DeclType, Located, Location, Measurement, Metric, MetricType, TypeRef};

/// Tables the server and clients create for their own bookkeeping.
fn is_internal(table: &str) -> bool {
    table.starts_with('_') || table.starts_with("sqlite_")
}

/// An OML schema type name (`int32`, `bool`, `[double]`, legacy names) as a
/// metric type.
fn schema_type(name: &str) -> Option<MetricType> {
    Some(match name {
        "int32" | "integer" | "long" | "int" => MetricType::Int32,
        "uint32" => MetricType::UInt32,
        "int64" => MetricType::Int64,
        "uint64" => MetricType::UInt64,
        "double" | "real" | "float" => MetricType::Double,
        "string" => MetricType::String,
        "blob" => MetricType::Blob,
        "guid" => MetricType::Guid,
        "bool" => MetricType::Boolean,
        "[double]" => MetricType::VecDouble,
        "[int32]" => MetricType::VecInt32,
        "[uint32]" => MetricType::VecUInt32,
        "[int64]" => MetricType::VecInt64,
        "[uint64]" => MetricType::VecUInt64,
        "[bool]" => MetricType::VecBool,
        _ => return None,
    })
}

/// A SQLite column type as the server declares it.
fn column_type(decl: &str) -> MetricType {
    match decl.to_ascii_uppercase().as_str() {
        "UNSIGNED INTEGER" => MetricType::UInt32,
        "BIGINT" => MetricType::Int64,
        "UNSIGNED BIGINT" => MetricType::UInt64,
        "REAL" => MetricType::Double,
        "TEXT" => MetricType::String,
        "BLOB" => MetricType::Blob,
        _ => MetricType::Int32,
    }
}

/// Reads the description of the streams stored in `path`.
pub fn describe(path: &Path) -> Result<App, Error> {
    let db_err = |e: rusqlite::Error| Error::Database {
        path: path.to_owned(),
        message: e.to_string(),
    };
    let db = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(db_err)?;
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(db_err)?;
    let streams: Vec<&String> = tables.iter().filter(|t| !is_internal(t)).collect();
    if streams.is_empty() {
        return Err(Error::Database {
            path: path.to_owned(),
            message: "no measurement tables in this database (is it an OML database?)".into(),
        });
    }
    let meta = |key: &str| -> Option<String> {
        db.query_row(
            "SELECT value FROM _experiment_metadata WHERE key = ?1 ORDER BY rowid LIMIT 1",
            [key],
            |r| r.get(0),
        )
        .ok()
    };
    let app_name = meta("appname").unwrap_or_else(|| {
        common_prefix(&streams).unwrap_or_else(|| {
            path.file_stem()
                .map_or("app".into(), |s| s.to_string_lossy().into_owned())
        })
    });
    let file = path.display().to_string();
    let here = Location {
        file: file.clone(),
        line: 1,
        col: 1,
    };
    let located = |s: &str| Located::new(s.to_owned(), here.clone());
    let mut measurements = Vec::new();
    for table in streams {
        let fields = match meta(&format!("table_{table}")) {
            Some(schema) => fields_of_schema(&schema),
            None => fields_of_columns(&db, table).map_err(db_err)?,
        };
        let mp = table
            .strip_prefix(&format!("{app_name}_"))
            .unwrap_or(table)
            .to_owned();
        measurements.push(Measurement {
            name: located(&mp),
            metrics: fields
                .into_iter()
                .map(|(name, t)| Metric {
                    name: located(&name),
                    ty: TypeRef {
                        written: located(t.name()),
                        decl: DeclType::Known(t),
                    },
                    description: None,
                    unit: None,
                })
                .collect(),
        });
    }
    Ok(App {
        uri: format!(
            "{}:app:{app_name}",
            std::env::var("USER").unwrap_or_else(|_| "user".into())
        ),
        name: located(&app_name),
        version: None,
        short_description: Some(format!("Streams recovered from {}", path.display())),
        description: None,
        path: None,
        properties: Vec::new(),
        measurements,
    })
}

/// `2 name f1:int32 f2:[double]` → fields.
fn fields_of_schema(schema: &str) -> Vec<(String, MetricType)> {
    schema
        .split_whitespace()
        .skip(2)
        .filter_map(|f| {
            let (name, ty) = f.split_once(':')?;
            Some((
                name.to_owned(),
                schema_type(ty).unwrap_or(MetricType::String),
            ))
        })
        .collect()
}

fn fields_of_columns(db: &Connection, table: &str) -> rusqlite::Result<Vec<(String, MetricType)>> {
    // The table-valued form takes the name as a bound parameter: no
    // identifier quoting to get right.
    let mut stmt = db.prepare("SELECT name, type FROM pragma_table_info(?1) ORDER BY cid")?;
    let cols = stmt.query_map([table], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
    })?;
    let mut out = Vec::new();
    for c in cols {
        let (name, decl) = c?;
        if !name.starts_with("oml_") {
            out.push((name, column_type(&decl)));
        }
    }
    Ok(out)
}

/// The application name the table names start with (`<app>_…`), if any.
fn common_prefix(tables: &[&String]) -> Option<String> {
    let first = tables.first()?;
    let mut candidates: Vec<&str> = first.match_indices('_').map(|(i, _)| &first[..i]).collect();
    // Several tables: the longest shared prefix; one: its first part.
    if tables.len() > 1 {
        candidates.reverse();
    }
    candidates
        .into_iter()
        .find(|p| tables.iter().all(|t| t.starts_with(&format!("{p}_"))))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without schema rows (an older or foreign database), the column types
    /// decide, and the application name is the tables' shared prefix.
    #[test]
    fn column_types_when_no_schema_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.sq3");
        let db = Connection::open(&path).unwrap();
        db.execute_batch(
            "CREATE TABLE iperf_transfer (oml_tuple_id INTEGER PRIMARY KEY, oml_seq INTEGER, a INTEGER, b UNSIGNED INTEGER, c BIGINT, d UNSIGNED BIGINT, e REAL, f TEXT, g BLOB);
             CREATE TABLE iperf_jitter_stats (oml_tuple_id INTEGER PRIMARY KEY, j REAL);",
        )
        .unwrap();
        drop(db);
        let app = describe(&path).unwrap();
        assert_eq!(app.name.value, "iperf");
        let mps: Vec<&str> = app
            .measurements
            .iter()
            .map(|m| m.name.value.as_str())
            .collect();
        assert_eq!(mps, ["transfer", "jitter_stats"]);
        let types: Vec<MetricType> = app.measurements[0]
            .metrics
            .iter()
            .map(|m| m.ty.decl.resolve(Default::default()))
            .collect();
        use MetricType::*;
        assert_eq!(types, [Int32, UInt32, Int64, UInt64, Double, String, Blob]);
    }

    #[test]
    fn an_empty_database_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.sq3");
        Connection::open(&path)
            .unwrap()
            .execute_batch("CREATE TABLE _senders (name TEXT)")
            .unwrap();
        let e = describe(&path).unwrap_err().to_string();
        assert!(e.contains("no measurement tables"), "{e}");
    }
}
