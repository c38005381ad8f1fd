//! The SQL behind the shared [`catalog`](crate::catalog) in PostgreSQL, and
//! the state kept per stream table: its COPY statement and the COPY buffer
//! of its rows waiting to be written.
//!
//! PostgreSQL compares quoted identifiers exactly, so names are matched
//! case-sensitively (SQLite's catalog folds case).

use ::postgres::Client;
use omsp::Schema;

use super::copy::CopyBuffer;
use super::ddl;
use crate::catalog::{self, CatalogDb, NameCase, StreamTable};
use crate::error::StoreError;

/// The known tables of one PostgreSQL database.
pub type Catalog = catalog::Catalog<Table>;

/// One stream table.
#[derive(Debug)]
pub struct Table {
    /// The schema as stored in `table_<name>` (stored name, client's index).
    pub schema: Schema,
    /// Its `COPY … FROM STDIN` statement.
    pub copy_sql: String,
    /// Rows encoded and not yet sent.
    pub pending: CopyBuffer,
}

impl StreamTable for Table {
    fn from_schema(schema: Schema) -> Table {
        Table {
            copy_sql: ddl::copy_in(&schema),
            schema,
            pending: CopyBuffer::default(),
        }
    }

    fn schema(&self) -> &Schema {
        &self.schema
    }
}

impl CatalogDb for Client {
    const NAME_CASE: NameCase = NameCase::Exact;

    /// The tables of the current schema.
    fn table_names(&mut self) -> Result<Vec<String>, StoreError> {
        let rows = self.query(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()",
            &[],
        )?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn schema_rows(&mut self) -> Result<Vec<(String, Option<String>)>, StoreError> {
        let rows = self.query(catalog::SCHEMA_ROWS_SQL, &[])?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn column_count(&mut self, table: &str) -> Result<usize, StoreError> {
        let n: i64 = self
            .query_one(
                "SELECT count(*) FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = $1",
                &[&table],
            )?
            .get(0);
        Ok(usize::try_from(n).unwrap_or(0))
    }

    fn create_table(&mut self, schema: &Schema) -> Result<(), StoreError> {
        Ok(self.batch_execute(&ddl::create_table(schema)?)?)
    }

    fn insert_bookkeeping(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO _experiment_metadata (key, value) VALUES ($1, $2)",
            &[&key, &value],
        )?;
        Ok(())
    }
}
