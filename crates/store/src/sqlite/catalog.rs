//! The SQL behind the shared [`catalog`](crate::catalog) in SQLite, and the
//! state kept per stream table: its prepared INSERT.
//!
//! SQLite table names are case-insensitive, so the catalog folds case.

use omsp::Schema;
use rusqlite::Connection;

use super::ddl;
use crate::catalog::{self, CatalogDb, NameCase, StreamTable};
use crate::error::StoreError;

/// The known tables of one SQLite database.
pub type Catalog = catalog::Catalog<Table>;

/// One stream table.
#[derive(Debug)]
pub struct Table {
    /// The schema as stored in `table_<name>` (stored name, client's index).
    pub schema: Schema,
    /// Its INSERT statement (prepared once, then served from the statement cache).
    pub insert_sql: String,
    /// Rows per multi-row INSERT for this table (1: none, too many columns).
    pub multi_rows: usize,
    /// One INSERT of `multi_rows` rows, for full runs of rows (same cache).
    pub insert_multi_sql: String,
}

/// Most rows per multi-row INSERT. SQLite's fixed cost per statement
/// execution (reset, cursor set-up, VDBE start and halt) is paid once per
/// this many rows.
pub const MULTI_ROWS: usize = 64;

/// SQLite's default bound on parameters per statement (`SQLITE_MAX_VARIABLE_NUMBER`).
const MAX_PARAMETERS: usize = 32_766;

impl StreamTable for Table {
    fn from_schema(schema: Schema) -> Table {
        let columns = ddl::OML_COLUMNS.len() + schema.fields.len();
        let multi_rows = (MAX_PARAMETERS / columns).clamp(1, MULTI_ROWS);
        Table {
            insert_sql: ddl::insert(&schema),
            multi_rows,
            insert_multi_sql: ddl::insert_rows(&schema, multi_rows),
            schema,
        }
    }

    fn schema(&self) -> &Schema {
        &self.schema
    }
}

impl CatalogDb for Connection {
    const NAME_CASE: NameCase = NameCase::Folded;

    fn table_names(&mut self) -> Result<Vec<String>, StoreError> {
        Ok(self
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?)
    }

    fn schema_rows(&mut self) -> Result<Vec<(String, Option<String>)>, StoreError> {
        Ok(self
            .prepare(catalog::SCHEMA_ROWS_SQL)?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?)
    }

    fn column_count(&mut self, table: &str) -> Result<usize, StoreError> {
        let sql = format!("PRAGMA table_info({})", crate::sql::quote(table));
        let mut stmt = self.prepare(&sql)?;
        let n = stmt.query_map([], |_| Ok(()))?.count();
        Ok(n)
    }

    fn create_table(&mut self, schema: &Schema) -> Result<(), StoreError> {
        Ok(self.execute_batch(&ddl::create_table(schema))?)
    }

    fn insert_bookkeeping(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        self.prepare_cached("INSERT INTO _experiment_metadata (key, value) VALUES (?1, ?2)")?
            .execute([key, value])?;
        Ok(())
    }

    fn is_internal(name: &str) -> bool {
        name.starts_with("sqlite_")
    }
}
