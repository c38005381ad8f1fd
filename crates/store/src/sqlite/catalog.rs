//! The stream tables of one database: found at open, created on demand,
//! renamed `_2`..`_9` on schema conflicts.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use omsp::metadata::SCHEMA0_NAME;
use omsp::Schema;
use rusqlite::Connection;

use super::ddl;
use crate::error::StoreError;
use crate::row::TableId;

/// Prefix of the bookkeeping keys that hold each table's schema.
pub const TABLE_KEY_PREFIX: &str = "table_";

/// Highest suffix tried when a stream name is taken by another schema.
const MAX_SUFFIX: u32 = 9;

/// One stream table.
#[derive(Debug)]
pub struct Table {
    /// The schema as stored in `table_<name>` (stored name, client's index).
    pub schema: Schema,
    /// Its INSERT statement (prepared once, then served from the statement cache).
    pub insert_sql: String,
}

/// The known tables of one database.
#[derive(Debug, Default)]
pub struct Catalog {
    /// Tables by [`TableId`].
    tables: Vec<Table>,
    /// Lower-cased name → id: SQLite table names are case-insensitive.
    by_name: HashMap<String, usize>,
    /// Lower-cased names of tables that exist but have no usable schema row
    /// (including `_senders`); never written to, never re-created.
    foreign: HashSet<String>,
}

impl Catalog {
    /// Reads the tables of an existing database and their `table_<name>` rows.
    pub fn load(conn: &Connection, path: &Path) -> Result<Catalog, StoreError> {
        let mut cat = Catalog::default();
        let existing: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        let existing_lc: HashSet<String> =
            existing.iter().map(|n| n.to_ascii_lowercase()).collect();
        if existing_lc.contains(&SCHEMA0_NAME.to_ascii_lowercase()) {
            let mut stmt = conn.prepare(
                "SELECT key, value FROM _experiment_metadata WHERE oml_sender_id IS NULL \
                 AND key LIKE 'table\\_%' ESCAPE '\\' ORDER BY oml_tuple_id",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
            })?;
            for row in rows {
                let (key, value) = row?;
                let name = &key[TABLE_KEY_PREFIX.len()..];
                let lc = name.to_ascii_lowercase();
                if cat.by_name.contains_key(&lc) || !existing_lc.contains(&lc) {
                    continue;
                }
                match value.as_deref().map(Schema::parse) {
                    Some(Ok(schema)) if schema.name == name => {
                        if column_count(conn, name)? == 5 + schema.fields.len() {
                            cat.push(schema);
                        } else {
                            tracing::warn!(db = %path.display(), table = name,
                                "table columns do not match its schema row; not using it");
                        }
                    }
                    _ => tracing::warn!(db = %path.display(), key,
                        "unreadable schema bookkeeping row; ignoring it"),
                }
            }
        }
        for name in existing {
            let lc = name.to_ascii_lowercase();
            if !cat.by_name.contains_key(&lc) {
                if lc != "_senders" && !lc.starts_with("sqlite_") {
                    tracing::warn!(db = %path.display(), table = %name,
                        "table has no schema row; ignoring it");
                }
                cat.foreign.insert(lc);
            }
        }
        Ok(cat)
    }

    fn push(&mut self, schema: Schema) -> TableId {
        let id = self.tables.len();
        self.by_name.insert(schema.name.to_ascii_lowercase(), id);
        self.tables.push(Table {
            insert_sql: ddl::insert(&schema),
            schema,
        });
        TableId(id)
    }

    /// The table behind an id.
    pub fn get(&self, id: TableId) -> Option<&Table> {
        self.tables.get(id.0)
    }

    /// The table called `name` (exact spelling).
    pub fn find(&self, name: &str) -> Option<TableId> {
        let &id = self.by_name.get(&name.to_ascii_lowercase())?;
        (self.tables[id].schema.name == name).then_some(TableId(id))
    }

    /// Finds the table for `schema`, or creates it (with its `table_<name>`
    /// row); on a conflict tries `<name>_2` … `<name>_9`. Returns the id and
    /// whether a table was created.
    pub fn register(
        &mut self,
        conn: &Connection,
        schema: &Schema,
    ) -> Result<(TableId, bool), StoreError> {
        for k in 1..=MAX_SUFFIX {
            let name = if k == 1 {
                schema.name.clone()
            } else {
                format!("{}_{k}", schema.name)
            };
            let lc = name.to_ascii_lowercase();
            if let Some(&id) = self.by_name.get(&lc) {
                let t = &self.tables[id].schema;
                if t.name == name && t.fields == schema.fields {
                    return Ok((TableId(id), false));
                }
                continue;
            }
            if self.foreign.contains(&lc) {
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
            conn.execute_batch(&ddl::create_table(&stored))?;
            insert_bookkeeping(
                conn,
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
pub fn insert_bookkeeping(conn: &Connection, key: &str, value: &str) -> Result<(), StoreError> {
    conn.prepare_cached("INSERT INTO _experiment_metadata (key, value) VALUES (?1, ?2)")?
        .execute([key, value])?;
    Ok(())
}

fn column_count(conn: &Connection, table: &str) -> Result<usize, StoreError> {
    let sql = format!("PRAGMA table_info({})", ddl::quote(table));
    let mut stmt = conn.prepare(&sql)?;
    let n = stmt.query_map([], |_| Ok(()))?.count();
    Ok(n)
}
