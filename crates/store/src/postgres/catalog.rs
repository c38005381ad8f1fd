//! The SQL behind the shared [`catalog`](crate::catalog) in PostgreSQL, and
//! the state kept per stream table: its COPY statement and the COPY buffer
//! of its rows waiting to be written.
//!
//! PostgreSQL compares quoted identifiers exactly, so names are matched
//! case-sensitively (SQLite's catalog folds case).

use ::postgres::Client;
use omsp::Schema;

use super::columns::{Column, Layout, Uint64Layout};
use super::copy::CopyBuffer;
use super::ddl;
use super::partition::{self, Partitioning};
use crate::catalog::{self, CatalogDb, NameCase, StreamTable};
use crate::error::StoreError;

/// How PostgreSQL compares quoted table names.
pub const NAME_CASE: NameCase = NameCase::Exact;

/// The known tables of one PostgreSQL database.
pub type Catalog = catalog::Catalog<Table>;

/// One stream table.
#[derive(Debug)]
pub struct Table {
    /// The schema as stored in `table_<name>` (stored name, client's index).
    pub schema: Schema,
    /// Its `COPY … FROM STDIN` statement.
    pub copy_sql: String,
    /// The types its columns really have (read from the database when the
    /// table is first used: it may have been created by the reference).
    pub layout: Option<Layout>,
    /// Rows encoded and not yet committed.
    pub pending: CopyBuffer,
}

impl StreamTable for Table {
    fn from_schema(schema: Schema) -> Table {
        Table {
            copy_sql: ddl::copy_in(&schema),
            schema,
            layout: None,
            pending: CopyBuffer::default(),
        }
    }

    fn schema(&self) -> &Schema {
        &self.schema
    }
}

/// A connection as the catalog uses it: new tables get the server's
/// uint64 layout, and are partitioned if the server partitions.
pub struct Db<'a> {
    /// The domain's connection.
    pub client: &'a mut Client,
    /// How uint64 and guid fields of new tables are laid out.
    pub uint64: Uint64Layout,
    /// How new stream tables are partitioned, and pg_partman's schema.
    pub partition: Option<(&'a Partitioning, &'a str)>,
}

/// The types of the `oml_sender_id`, `oml_seq`, `oml_ts_client` and field
/// columns of table `schema.name`, by name (the order of columns does not
/// matter to COPY, which names them).
pub fn read_layout(client: &mut Client, schema: &Schema) -> Result<Layout, StoreError> {
    let rows = client.query(
        "SELECT a.attname::text, t.typname::text FROM pg_attribute a \
         JOIN pg_type t ON t.oid = a.atttypid \
         WHERE a.attrelid = to_regclass(quote_ident($1)) AND a.attnum > 0 AND NOT a.attisdropped",
        &[&schema.name],
    )?;
    let types: std::collections::HashMap<String, String> =
        rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let col = |name: &str| -> Result<Column, StoreError> {
        let ty = types.get(name).ok_or_else(|| StoreError::Unstorable {
            table: schema.name.clone(),
            reason: format!("column {name:?} is missing (table dropped or altered?)"),
        })?;
        Ok(Column::from_typname(ty))
    };
    Ok(Layout {
        sender: col("oml_sender_id")?,
        seq: col("oml_seq")?,
        ts: col("oml_ts_client")?,
        fields: schema
            .fields
            .iter()
            .map(|f| col(&f.name))
            .collect::<Result<_, _>>()?,
    })
}

impl CatalogDb for Db<'_> {
    const NAME_CASE: NameCase = NameCase::Exact;

    fn table_names(&mut self) -> Result<Vec<String>, StoreError> {
        self.client.table_names()
    }

    fn schema_rows(&mut self) -> Result<Vec<(String, Option<String>)>, StoreError> {
        self.client.schema_rows()
    }

    fn column_count(&mut self, table: &str) -> Result<usize, StoreError> {
        self.client.column_count(table)
    }

    fn create_table(&mut self, schema: &Schema) -> Result<(), StoreError> {
        let sql = ddl::create_table_with(schema, self.uint64)?;
        match self.partition {
            Some((p, partman)) if partition::applies_to(schema) => {
                self.client.batch_execute(&partition::parent_ddl(&sql))?;
                partition::create_parent(self.client, partman, &schema.name, p)
            }
            _ => Ok(self.client.batch_execute(&sql)?),
        }
    }

    fn insert_bookkeeping(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        self.client.insert_bookkeeping(key, value)
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
