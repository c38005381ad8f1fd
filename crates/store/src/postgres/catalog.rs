//! The stream tables of one PostgreSQL database: found at open, created on
//! demand, renamed `_2`..`_9` on schema conflicts. Each table carries the
//! COPY buffer of its rows waiting to be written.
//!
//! PostgreSQL compares quoted identifiers exactly, so names are matched
//! case-sensitively (SQLite's catalog folds case).

use std::collections::{HashMap, HashSet};

use ::postgres::Client;
use omsp::metadata::SCHEMA0_NAME;
use omsp::Schema;

use super::copy::CopyBuffer;
use super::ddl;
use crate::error::StoreError;
use crate::row::TableId;
use crate::sqlite::TABLE_KEY_PREFIX;

/// Highest suffix tried when a stream name is taken by another schema.
const MAX_SUFFIX: u32 = 9;

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

/// The known tables of one database.
#[derive(Debug, Default)]
pub struct Catalog {
    /// Tables by [`TableId`].
    tables: Vec<Table>,
    /// Name → id.
    by_name: HashMap<String, usize>,
    /// Tables that exist without a usable schema row (including `_senders`):
    /// never written to, never re-created.
    foreign: HashSet<String>,
}

impl Catalog {
    /// Reads the tables of the current schema and their `table_<name>` rows.
    pub fn load(client: &mut Client, db: &str) -> Result<Catalog, StoreError> {
        let mut cat = Catalog::default();
        // Not a stream table even before it exists (it is created next).
        cat.foreign.insert("_senders".to_owned());
        let existing: HashSet<String> = client
            .query(
                "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()",
                &[],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
        if existing.contains(SCHEMA0_NAME) {
            let rows = client.query(
                "SELECT key, value FROM _experiment_metadata WHERE oml_sender_id IS NULL \
                 AND key LIKE 'table\\_%' ESCAPE '\\' ORDER BY oml_tuple_id",
                &[],
            )?;
            for row in rows {
                let (key, value): (String, Option<String>) = (row.get(0), row.get(1));
                let name = &key[TABLE_KEY_PREFIX.len()..];
                if cat.by_name.contains_key(name) || !existing.contains(name) {
                    continue;
                }
                match value.as_deref().map(Schema::parse) {
                    Some(Ok(schema)) if schema.name == name => {
                        if column_count(client, name)? == 5 + schema.fields.len() {
                            cat.push(schema);
                        } else {
                            tracing::warn!(
                                db,
                                table = name,
                                "table columns do not match its schema row; not using it"
                            );
                        }
                    }
                    _ => tracing::warn!(db, key, "unreadable schema bookkeeping row; ignoring it"),
                }
            }
        }
        for name in existing {
            if !cat.by_name.contains_key(&name) {
                if name != "_senders" {
                    tracing::warn!(db, table = %name, "table has no schema row; ignoring it");
                }
                cat.foreign.insert(name);
            }
        }
        Ok(cat)
    }

    fn push(&mut self, schema: Schema) -> TableId {
        let id = self.tables.len();
        self.by_name.insert(schema.name.clone(), id);
        self.tables.push(Table {
            copy_sql: ddl::copy_in(&schema),
            schema,
            pending: CopyBuffer::default(),
        });
        TableId(id)
    }

    /// The table behind an id.
    pub fn get(&self, id: TableId) -> Option<&Table> {
        self.tables.get(id.0)
    }

    /// The table behind an id, to queue rows.
    pub fn get_mut(&mut self, id: TableId) -> Option<&mut Table> {
        self.tables.get_mut(id.0)
    }

    /// Every table, to flush their rows.
    pub fn tables_mut(&mut self) -> impl Iterator<Item = &mut Table> {
        self.tables.iter_mut()
    }

    /// The table called `name`.
    pub fn find(&self, name: &str) -> Option<TableId> {
        self.by_name.get(name).map(|&id| TableId(id))
    }

    /// Finds the table for `schema`, or creates it (with its `table_<name>`
    /// row); on a conflict tries `<name>_2` … `<name>_9`. Returns the id and
    /// whether a table was created.
    pub fn register(
        &mut self,
        client: &mut Client,
        schema: &Schema,
    ) -> Result<(TableId, bool), StoreError> {
        for k in 1..=MAX_SUFFIX {
            let name = if k == 1 {
                schema.name.clone()
            } else {
                format!("{}_{k}", schema.name)
            };
            if let Some(&id) = self.by_name.get(&name) {
                if self.tables[id].schema.fields == schema.fields {
                    return Ok((TableId(id), false));
                }
                continue;
            }
            if self.foreign.contains(&name) {
                continue;
            }
            if k > 1 {
                tracing::warn!(table = %name, stream = %schema.name,
                    "creating a renamed table for a stream with an incompatible schema");
            }
            let stored = Schema {
                index: schema.index,
                name,
                fields: schema.fields.clone(),
            };
            client.batch_execute(&ddl::create_table(&stored)?)?;
            insert_bookkeeping(
                client,
                &format!("{TABLE_KEY_PREFIX}{}", stored.name),
                &stored.to_string(),
            )?;
            return Ok((self.push(stored), true));
        }
        Err(StoreError::SchemaConflict {
            name: schema.name.clone(),
        })
    }
}

/// Writes a `(key, value)` bookkeeping row into `_experiment_metadata`; its
/// sender, seq, timestamps and subject stay NULL, which is how bookkeeping is
/// told apart from client metadata with the same key.
pub fn insert_bookkeeping(client: &mut Client, key: &str, value: &str) -> Result<(), StoreError> {
    client.execute(
        "INSERT INTO _experiment_metadata (key, value) VALUES ($1, $2)",
        &[&key, &value],
    )?;
    Ok(())
}

fn column_count(client: &mut Client, table: &str) -> Result<usize, StoreError> {
    let n: i64 = client
        .query_one(
            "SELECT count(*) FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = $1",
            &[&table],
        )?
        .get(0);
    Ok(usize::try_from(n).unwrap_or(0))
}
