//! The stream tables of one database, whatever holds it: found at open,
//! created on demand, renamed `<name>_2` … `<name>_9` on schema conflicts.
//!
//! The rules live here once. A back end supplies its SQL by implementing
//! [`CatalogDb`] for its connection, and the state its write path keeps per
//! table by implementing [`StreamTable`].
//!
//! Each stream table has a bookkeeping row in `_experiment_metadata`: key
//! `table_<name>`, value the canonical schema (`<index> <name> <f>:<t> …`,
//! the [`Display`](std::fmt::Display) of [`Schema`], with the stored name and
//! the index the client declared). At open, the tables that have such a row
//! and the matching number of columns are the catalog; every other table is
//! *foreign*: never written to, never re-created, its name skipped when
//! renaming.

use std::collections::{HashMap, HashSet};

use omsp::metadata::SCHEMA0_NAME;
use omsp::Schema;

use crate::error::StoreError;
use crate::row::TableId;
use crate::sql::OML_COLUMN_COUNT;

/// Prefix of the bookkeeping keys that hold each table's schema.
pub const TABLE_KEY_PREFIX: &str = "table_";

/// Bookkeeping key of the database's start time (Unix seconds, decimal).
pub const START_TIME_KEY: &str = "start_time";

/// The senders table: not a stream table, even before it is created.
pub const SENDERS_TABLE: &str = "_senders";

/// Resume state of resumable sessions (spec §3.6; not a stream table).
pub const SESSIONS_TABLE: &str = "_streamgauge_sessions";

/// The `table_<name>` bookkeeping rows, oldest first. Bookkeeping rows have
/// no sender, which tells them apart from client metadata with the same key.
pub const SCHEMA_ROWS_SQL: &str = "SELECT key, value FROM _experiment_metadata \
     WHERE oml_sender_id IS NULL AND key LIKE 'table\\_%' ESCAPE '\\' ORDER BY oml_tuple_id";

/// Highest suffix tried when a stream name is taken by another schema.
const MAX_SUFFIX: u32 = 9;

/// The bookkeeping key of table `name`: `table_<name>`.
pub fn table_key(name: &str) -> String {
    format!("{TABLE_KEY_PREFIX}{name}")
}

/// The schema a `table_<name>` bookkeeping row holds, if its value parses
/// and names that very table.
pub fn schema_of_row(name: &str, value: Option<&str>) -> Option<Schema> {
    let schema = Schema::parse(value?).ok()?;
    (schema.name == name).then_some(schema)
}

/// The name tried for a stream at attempt `k` (1-based): `<name>`, then
/// `<name>_2` … `<name>_9`.
fn candidate_name(name: &str, k: u32) -> String {
    if k == 1 {
        name.to_owned()
    } else {
        format!("{name}_{k}")
    }
}

/// Where a schema goes (see [`Catalog::first_slot`]).
enum Slot {
    /// A table with the same definition.
    Same(TableId),
    /// A free name (attempt `k`), as the schema to store.
    Free(Schema, u32),
    /// Every name holds another definition.
    Exhausted,
}

/// How a database compares table names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameCase {
    /// ASCII case is ignored (SQLite: `a_m` and `A_M` are one table).
    Folded,
    /// Names are compared byte for byte (PostgreSQL's quoted identifiers).
    Exact,
}

impl NameCase {
    /// The form under which `name` is looked up.
    fn key(self, name: &str) -> String {
        match self {
            NameCase::Folded => name.to_ascii_lowercase(),
            NameCase::Exact => name.to_owned(),
        }
    }
}

/// The SQL the catalog needs from a database connection.
pub trait CatalogDb {
    /// How this database compares table names.
    const NAME_CASE: NameCase;

    /// Names of the tables this store may see (its file, its schema).
    fn table_names(&mut self) -> Result<Vec<String>, StoreError>;

    /// `(key, value)` of each `table_<name>` bookkeeping row, oldest first
    /// (the rows of [`SCHEMA_ROWS_SQL`]).
    fn schema_rows(&mut self) -> Result<Vec<(String, Option<String>)>, StoreError>;

    /// Number of columns of table `name`.
    fn column_count(&mut self, table: &str) -> Result<usize, StoreError>;

    /// Creates the stream table of `schema` (its stored name).
    fn create_table(&mut self, schema: &Schema) -> Result<(), StoreError>;

    /// Writes a `(key, value)` bookkeeping row into `_experiment_metadata`;
    /// its sender, seq, timestamps and subject stay NULL.
    fn insert_bookkeeping(&mut self, key: &str, value: &str) -> Result<(), StoreError>;

    /// True for the database's own tables (`sqlite_*`), which are foreign
    /// without a warning. `name` is in the lookup form of [`Self::NAME_CASE`].
    fn is_internal(_name: &str) -> bool {
        false
    }
}

/// A back end's state for one stream table.
pub trait StreamTable {
    /// Sets up the table of `schema` (as stored: final name, client's index).
    fn from_schema(schema: Schema) -> Self;

    /// The schema as stored in `table_<name>`.
    fn schema(&self) -> &Schema;
}

/// The known stream tables of one database.
#[derive(Debug)]
pub struct Catalog<T> {
    /// How names are compared, which decides the keys below.
    case: NameCase,
    /// Tables by [`TableId`].
    tables: Vec<T>,
    /// Name (in lookup form) → index in `tables`.
    by_name: HashMap<String, usize>,
    /// Names (in lookup form) of tables that exist without a usable schema
    /// row, and `_senders`: never written to, never re-created.
    foreign: HashSet<String>,
}

impl<T: StreamTable> Catalog<T> {
    /// An empty catalog (of a database with no stream table yet).
    pub fn new(case: NameCase) -> Catalog<T> {
        Catalog {
            case,
            tables: Vec::new(),
            by_name: HashMap::new(),
            foreign: HashSet::from([case.key(SENDERS_TABLE)]),
        }
    }

    /// Reads the tables of an existing database and their `table_<name>`
    /// rows. `db_name` names the database in warnings.
    pub fn load<D: CatalogDb>(db: &mut D, db_name: &str) -> Result<Catalog<T>, StoreError> {
        Catalog::read(db, db_name, true)
    }

    /// [`Catalog::load`], warning about unusable tables if `warn`.
    fn read<D: CatalogDb>(db: &mut D, db_name: &str, warn: bool) -> Result<Catalog<T>, StoreError> {
        let mut cat = Catalog::new(D::NAME_CASE);
        let case = cat.case;
        let existing = db.table_names()?;
        let existing_keys: HashSet<String> = existing.iter().map(|n| case.key(n)).collect();
        if existing_keys.contains(&case.key(SCHEMA0_NAME)) {
            for (key, value) in db.schema_rows()? {
                // The query selects `table_%` keys only.
                let Some(name) = key.get(TABLE_KEY_PREFIX.len()..) else {
                    continue;
                };
                let name_key = case.key(name);
                if cat.by_name.contains_key(&name_key) || !existing_keys.contains(&name_key) {
                    continue;
                }
                match schema_of_row(name, value.as_deref()) {
                    Some(schema) => {
                        if db.column_count(name)? == OML_COLUMN_COUNT + schema.fields.len() {
                            cat.push(schema);
                        } else if warn {
                            tracing::warn!(
                                db = db_name,
                                table = name,
                                "table columns do not match its schema row; not using it"
                            );
                        }
                    }
                    None if !warn => {}
                    None => tracing::warn!(
                        db = db_name,
                        key,
                        "unreadable schema bookkeeping row; ignoring it"
                    ),
                }
            }
        }
        let senders = case.key(SENDERS_TABLE);
        let sessions = case.key(SESSIONS_TABLE);
        let clock = case.key(crate::clock::CLOCK_TABLE);
        for name in existing {
            let key = case.key(&name);
            if !cat.by_name.contains_key(&key) {
                let ours = key == senders || key == sessions || key == clock;
                if warn && !ours && !D::is_internal(&key) {
                    tracing::warn!(db = db_name, table = %name, "table has no schema row; ignoring it");
                }
                cat.foreign.insert(key);
            }
        }
        Ok(cat)
    }

    /// Adds what other writers of the database created since it was read:
    /// the tables this catalog does not know yet. Known tables keep their
    /// ids; a name that was foreign becomes a table once its schema row is
    /// there.
    pub fn refresh<D: CatalogDb>(&mut self, db: &mut D, db_name: &str) -> Result<(), StoreError> {
        let fresh = Catalog::<T>::read(db, db_name, false)?;
        for t in fresh.tables {
            let key = self.case.key(&t.schema().name);
            if !self.by_name.contains_key(&key) {
                self.foreign.remove(&key);
                self.push(t.schema().clone());
            }
        }
        for key in fresh.foreign {
            if !self.by_name.contains_key(&key) {
                self.foreign.insert(key);
            }
        }
        Ok(())
    }

    /// The table of `schema` if the catalog alone can tell — a name of
    /// `<name>`, `<name>_2` … with the same definition comes before any
    /// free name — or `None` if the database must be asked (another writer
    /// may have taken the free name meanwhile).
    pub fn lookup(&self, schema: &Schema) -> Option<TableId> {
        match self.first_slot(schema) {
            Slot::Same(id) => Some(id),
            Slot::Free(..) | Slot::Exhausted => None,
        }
    }

    /// The first of `<name>`, `<name>_2` … `<name>_9` that holds the same
    /// definition or is free.
    fn first_slot(&self, schema: &Schema) -> Slot {
        for k in 1..=MAX_SUFFIX {
            let stored = Schema {
                index: schema.index,
                name: candidate_name(&schema.name, k),
                fields: schema.fields.clone(),
            };
            let key = self.case.key(&stored.name);
            match self.by_name.get(&key) {
                Some(&id) if self.tables[id].schema().same_definition(&stored) => {
                    return Slot::Same(TableId(id))
                }
                Some(_) => {}
                None if self.foreign.contains(&key) => {}
                None => return Slot::Free(stored, k),
            }
        }
        Slot::Exhausted
    }

    fn push(&mut self, schema: Schema) -> TableId {
        let id = self.tables.len();
        self.by_name.insert(self.case.key(&schema.name), id);
        self.tables.push(T::from_schema(schema));
        TableId(id)
    }

    /// Number of known tables (ids are `0..len`).
    pub fn len(&self) -> usize {
        self.tables.len()
    }

    /// Forgets the tables from id `len` on (added by a transaction that
    /// then failed: they do not exist).
    pub fn truncate(&mut self, len: usize) {
        for t in self.tables.drain(len.min(self.tables.len())..) {
            self.by_name.remove(&self.case.key(&t.schema().name));
        }
    }

    /// The table behind an id.
    pub fn get(&self, id: TableId) -> Option<&T> {
        self.tables.get(id.0)
    }

    /// The table behind an id, to change its state.
    pub fn get_mut(&mut self, id: TableId) -> Option<&mut T> {
        self.tables.get_mut(id.0)
    }

    /// Every table, to change their state.
    pub fn tables_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.tables.iter_mut()
    }

    /// The table called `name` (exact spelling).
    pub fn find(&self, name: &str) -> Option<TableId> {
        let &id = self.by_name.get(&self.case.key(name))?;
        (self.tables[id].schema().name == name).then_some(TableId(id))
    }

    /// Finds the table for `schema` — the first of `<name>`, `<name>_2` …
    /// `<name>_9` whose stored schema has the [same
    /// definition](Schema::same_definition) — or creates it, with its
    /// `table_<name>` row, under the first of those names that is free.
    /// Returns the id and whether a table was created.
    pub fn register<D: CatalogDb>(
        &mut self,
        db: &mut D,
        schema: &Schema,
    ) -> Result<(TableId, bool), StoreError> {
        let (stored, k) = match self.first_slot(schema) {
            Slot::Same(id) => return Ok((id, false)),
            Slot::Free(stored, k) => (stored, k),
            Slot::Exhausted => {
                return Err(StoreError::SchemaConflict {
                    name: schema.name.clone(),
                })
            }
        };
        if k > 1 {
            tracing::warn!(table = %stored.name, stream = %schema.name,
                "creating a renamed table for a stream with an incompatible schema");
        }
        db.create_table(&stored)?;
        db.insert_bookkeeping(&table_key(&stored.name), &stored.to_string())?;
        Ok((self.push(stored), true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database in memory: tables with their column counts, bookkeeping rows.
    #[derive(Default)]
    struct FakeDb {
        tables: Vec<(String, usize)>,
        rows: Vec<(String, Option<String>)>,
    }

    impl CatalogDb for FakeDb {
        const NAME_CASE: NameCase = NameCase::Folded;

        fn table_names(&mut self) -> Result<Vec<String>, StoreError> {
            Ok(self.tables.iter().map(|t| t.0.clone()).collect())
        }

        fn schema_rows(&mut self) -> Result<Vec<(String, Option<String>)>, StoreError> {
            Ok(self.rows.clone())
        }

        fn column_count(&mut self, table: &str) -> Result<usize, StoreError> {
            Ok(self.tables.iter().find(|t| t.0 == table).map_or(0, |t| t.1))
        }

        fn create_table(&mut self, schema: &Schema) -> Result<(), StoreError> {
            let columns = OML_COLUMN_COUNT + schema.fields.len();
            self.tables.push((schema.name.clone(), columns));
            Ok(())
        }

        fn insert_bookkeeping(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
            self.rows.push((key.to_owned(), Some(value.to_owned())));
            Ok(())
        }
    }

    impl StreamTable for Schema {
        fn from_schema(schema: Schema) -> Schema {
            schema
        }

        fn schema(&self) -> &Schema {
            self
        }
    }

    fn schema(s: &str) -> Schema {
        Schema::parse(s).unwrap()
    }

    #[test]
    fn conflicts_are_renamed_up_to_9_and_found_again() {
        let mut db = FakeDb::default();
        let mut cat = Catalog::<Schema>::new(FakeDb::NAME_CASE);
        let (base, created) = cat.register(&mut db, &schema("1 a_m x:double")).unwrap();
        assert!(created);
        for k in 2..=9 {
            let s = schema(&format!("3 a_m x:double y{k}:int32"));
            let (id, created) = cat.register(&mut db, &s).unwrap();
            assert!(created);
            assert_eq!(cat.get(id).unwrap().name, format!("a_m_{k}"));
        }
        let err = cat.register(&mut db, &schema("1 a_m z:bool")).unwrap_err();
        assert!(matches!(err, StoreError::SchemaConflict { name } if name == "a_m"));
        // Same definition under another index: the same table.
        assert_eq!(
            cat.register(&mut db, &schema("5 a_m x:double")).unwrap(),
            (base, false)
        );
        assert_eq!(db.rows[1].0, "table_a_m_2");
        assert_eq!(db.rows[1].1.as_deref(), Some("3 a_m_2 x:double y2:int32"));
    }

    #[test]
    fn load_keeps_tables_with_a_matching_row_only() {
        let mut db = FakeDb::default();
        let mut cat = Catalog::<Schema>::new(FakeDb::NAME_CASE);
        cat.register(&mut db, &omsp::metadata::schema0()).unwrap();
        cat.register(&mut db, &schema("2 good x:int32")).unwrap();
        cat.register(&mut db, &schema("3 wide x:int32")).unwrap();
        db.tables.push(("_senders".into(), 2));
        db.tables.push(("Other".into(), 6));
        db.tables.push(("garbled".into(), 6));
        db.rows
            .push(("table_garbled".into(), Some("not a schema".into())));
        db.tables.iter_mut().find(|t| t.0 == "wide").unwrap().1 = 9;

        let cat = Catalog::<Schema>::load(&mut db, "test").unwrap();
        assert!(cat.find("good").is_some());
        assert!(cat.find("GOOD").is_none(), "exact spelling");
        for foreign in ["wide", "other", "garbled", "_senders"] {
            assert!(cat.find(foreign).is_none());
            assert!(cat.foreign.contains(foreign), "{foreign}");
        }
    }

    #[test]
    fn senders_and_foreign_names_are_skipped() {
        let mut db = FakeDb::default();
        let mut cat = Catalog::<Schema>::new(FakeDb::NAME_CASE);
        let (id, _) = cat
            .register(&mut db, &schema("1 _senders x:int32"))
            .unwrap();
        assert_eq!(cat.get(id).unwrap().name, "_senders_2");
        // SQLite folds case: `A_M` holds another definition than `a_m`.
        cat.register(&mut db, &schema("1 A_M x:int32")).unwrap();
        let (id, _) = cat.register(&mut db, &schema("1 a_m x:int32")).unwrap();
        assert_eq!(cat.get(id).unwrap().name, "a_m_2");
    }

    #[test]
    fn refresh_adds_what_another_writer_created_and_keeps_ids() {
        let mut db = FakeDb::default();
        let mut mine = Catalog::<Schema>::new(FakeDb::NAME_CASE);
        mine.register(&mut db, &omsp::metadata::schema0()).unwrap();
        let (a, _) = mine.register(&mut db, &schema("1 a x:int32")).unwrap();
        // Another writer, with its own catalog, creates b and a_2.
        let mut other = Catalog::<Schema>::load(&mut db, "t").unwrap();
        other.register(&mut db, &schema("1 b x:int32")).unwrap();
        other.register(&mut db, &schema("1 a y:bool")).unwrap();
        assert_eq!(mine.lookup(&schema("2 a x:int32")), Some(a));
        assert_eq!(mine.lookup(&schema("1 b x:int32")), None, "must ask the db");
        mine.refresh(&mut db, "t").unwrap();
        assert_eq!(mine.find("a"), Some(a));
        let b = mine.lookup(&schema("1 b x:int32")).expect("b now known");
        assert_eq!(mine.get(b).unwrap().name, "b");
        // The conflict is resolved to the table the other writer created.
        let (a2, created) = mine.register(&mut db, &schema("1 a y:bool")).unwrap();
        assert!(!created);
        assert_eq!(mine.get(a2).unwrap().name, "a_2");
    }

    #[test]
    fn bookkeeping_values_parse_back() {
        assert_eq!(
            schema_of_row("a_2", Some("4 a_2 x:int32")),
            Some(schema("4 a_2 x:int32"))
        );
        assert_eq!(schema_of_row("a", Some("4 a_2 x:int32")), None);
        assert_eq!(schema_of_row("a", Some("garbage")), None);
        assert_eq!(schema_of_row("a", None), None);
        assert_eq!(table_key("a_2"), "table_a_2");
    }
}
