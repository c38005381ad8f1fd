//! Reading a stream table back: from an experiment's SQLite file or its
//! PostgreSQL database, with each column's OML type (from the
//! `table_<name>` rows of `_experiment_metadata`) and the experiment's
//! start time.

use anyhow::{bail, Context, Result};
use omsp::{OmlType, Schema};

/// A value as stored.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    UInt(u64),
    Real(f64),
    Text(String),
    Bytes(Vec<u8>),
    Bool(bool),
}

/// What a column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `oml_tuple_id`, `oml_sender_id`, `oml_seq`.
    Meta,
    /// `oml_ts_client`, `oml_ts_server`: seconds since `start_time`.
    Time,
    /// A field of the stream.
    Field(OmlType),
}

/// One column.
#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    pub kind: Kind,
}

/// An experiment database.
pub enum Source {
    Sqlite(rusqlite::Connection),
    Postgres(postgres::Client),
}

/// The bookkeeping columns every stream table starts with.
const META: [(&str, Kind); 5] = [
    ("oml_tuple_id", Kind::Meta),
    ("oml_sender_id", Kind::Meta),
    ("oml_seq", Kind::Meta),
    ("oml_ts_client", Kind::Time),
    ("oml_ts_server", Kind::Time),
];

impl Source {
    /// Opens `spec`: a `.sq3` path, or a PostgreSQL URI (`postgresql://…`)
    /// or key-value string (`host=… dbname=…`).
    pub fn open(spec: &str) -> Result<Source> {
        if spec.starts_with("postgresql://")
            || spec.starts_with("postgres://")
            || spec.contains("dbname=")
        {
            let client = postgres::Client::connect(spec, postgres::NoTls)
                .with_context(|| format!("connecting to PostgreSQL ({spec})"))?;
            return Ok(Source::Postgres(client));
        }
        let path = std::path::Path::new(spec);
        if !path.is_file() {
            bail!("{spec}: no such database file (give an experiment's <domain>.sq3, or a postgresql:// URI)");
        }
        let c =
            rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .with_context(|| format!("opening {spec}"))?;
        Ok(Source::Sqlite(c))
    }

    /// Runs a query whose every column is text (or NULL).
    fn text_rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>> {
        match self {
            Source::Sqlite(c) => {
                let mut st = c.prepare(sql)?;
                let n = st.column_count();
                let rows = st.query_map([], |r| {
                    (0..n)
                        .map(|i| r.get::<_, Option<String>>(i))
                        .collect::<rusqlite::Result<Vec<_>>>()
                })?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            }
            Source::Postgres(c) => Ok(c
                .query(sql, &[])?
                .iter()
                .map(|r| {
                    (0..r.len())
                        .map(|i| r.get::<_, Option<String>>(i))
                        .collect()
                })
                .collect()),
        }
    }

    /// The experiment's start time (Unix seconds), if recorded.
    pub fn start_time(&mut self) -> Result<Option<i64>> {
        let rows = self.text_rows(
            "SELECT value FROM _experiment_metadata WHERE key = 'start_time' ORDER BY oml_tuple_id LIMIT 1",
        )?;
        Ok(rows
            .first()
            .and_then(|r| r[0].as_deref())
            .and_then(|v| v.trim().parse().ok()))
    }

    /// Every stream table with its schema, from the `table_<name>` rows.
    pub fn streams(&mut self) -> Result<Vec<Schema>> {
        let rows = self
            .text_rows("SELECT key, value FROM _experiment_metadata WHERE key LIKE 'table\\_%' ESCAPE '\\' ORDER BY oml_tuple_id")
            .context("reading _experiment_metadata (is this an experiment database?)")?;
        let mut out: Vec<Schema> = Vec::new();
        for r in rows {
            let (Some(key), Some(value)) = (&r[0], &r[1]) else {
                continue;
            };
            let name = &key["table_".len()..];
            if out.iter().any(|s| s.name == name) {
                continue;
            }
            if let Ok(s) = Schema::parse(value) {
                if s.name == name {
                    out.push(s);
                }
            }
        }
        Ok(out)
    }

    /// Rows in `table`.
    pub fn count(&mut self, table: &str) -> Result<u64> {
        let rows = self.text_rows(&format!(
            "SELECT CAST(count(*) AS TEXT) FROM {}",
            quote(table)
        ))?;
        Ok(rows
            .first()
            .and_then(|r| r[0].as_deref())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0))
    }

    /// Calls `row` for every row of `schema`'s table, in `oml_tuple_id` order.
    pub fn rows(
        &mut self,
        schema: &Schema,
        mut row: impl FnMut(&[Cell]) -> Result<()>,
    ) -> Result<()> {
        let cols = columns(schema);
        let mut cells = Vec::with_capacity(cols.len());
        match self {
            Source::Sqlite(c) => {
                let list: Vec<String> = cols.iter().map(|c| quote(&c.name)).collect();
                let sql = format!(
                    "SELECT {} FROM {} ORDER BY oml_tuple_id",
                    list.join(", "),
                    quote(&schema.name)
                );
                let mut st = c.prepare(&sql)?;
                let mut rows = st.query([])?;
                while let Some(r) = rows.next()? {
                    cells.clear();
                    for (i, col) in cols.iter().enumerate() {
                        cells.push(sqlite_cell(r.get_ref(i)?, col.kind));
                    }
                    row(&cells)?;
                }
            }
            Source::Postgres(c) => {
                let list: Vec<String> = cols
                    .iter()
                    .map(|c| format!("{}::text", quote(&c.name)))
                    .collect();
                let sql = format!(
                    "SELECT {} FROM {} ORDER BY oml_tuple_id",
                    list.join(", "),
                    quote(&schema.name)
                );
                let mut it = c.query_raw(sql.as_str(), std::iter::empty::<&str>())?;
                use postgres::fallible_iterator::FallibleIterator;
                while let Some(r) = it.next()? {
                    cells.clear();
                    for (i, col) in cols.iter().enumerate() {
                        let v: Option<&str> = r.get(i);
                        cells.push(pg_cell(v, col.kind));
                    }
                    row(&cells)?;
                }
            }
        }
        Ok(())
    }
}

/// The columns of a stream table, bookkeeping first.
pub fn columns(schema: &Schema) -> Vec<Column> {
    META.iter()
        .map(|&(n, k)| Column {
            name: n.to_owned(),
            kind: k,
        })
        .chain(schema.fields.iter().map(|f| Column {
            name: f.name.clone(),
            kind: Kind::Field(f.ty),
        }))
        .collect()
}

/// An SQL identifier, double-quoted.
pub fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn is_unsigned64(kind: Kind) -> bool {
    matches!(kind, Kind::Field(OmlType::UInt64 | OmlType::Guid))
}

fn sqlite_cell(v: rusqlite::types::ValueRef<'_>, kind: Kind) -> Cell {
    use rusqlite::types::ValueRef as V;
    match v {
        V::Null => Cell::Null,
        V::Integer(i) => match kind {
            Kind::Field(OmlType::Bool) => Cell::Bool(i != 0),
            k if is_unsigned64(k) || kind == Kind::Field(OmlType::UInt32) => Cell::UInt(i as u64),
            Kind::Time | Kind::Field(OmlType::Double) => Cell::Real(i as f64),
            _ => Cell::Int(i),
        },
        V::Real(f) => Cell::Real(f),
        V::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
        // uint64 above 2^63-1: 8 bytes, big-endian (docs/storage.md).
        V::Blob(b) if is_unsigned64(kind) && b.len() == 8 => {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            Cell::UInt(u64::from_be_bytes(a))
        }
        V::Blob(b) => Cell::Bytes(b.to_vec()),
    }
}

fn pg_cell(v: Option<&str>, kind: Kind) -> Cell {
    let Some(v) = v else { return Cell::Null };
    let parsed = match kind {
        Kind::Meta => v.parse().ok().map(Cell::Int),
        Kind::Time => v.parse().ok().map(Cell::Real),
        Kind::Field(t) => match t {
            OmlType::Int32 | OmlType::Int64 => v.parse().ok().map(Cell::Int),
            OmlType::UInt32 | OmlType::UInt64 | OmlType::Guid => v.parse().ok().map(Cell::UInt),
            OmlType::Double => match v {
                "NaN" => Some(Cell::Real(f64::NAN)),
                "Infinity" => Some(Cell::Real(f64::INFINITY)),
                "-Infinity" => Some(Cell::Real(f64::NEG_INFINITY)),
                _ => v.parse().ok().map(Cell::Real),
            },
            OmlType::Bool => Some(Cell::Bool(v == "t" || v == "true")),
            OmlType::Blob => v.strip_prefix("\\x").and_then(hex).map(Cell::Bytes),
            _ => None,
        },
    };
    parsed.unwrap_or_else(|| Cell::Text(v.to_owned()))
}

fn hex(h: &str) -> Option<Vec<u8>> {
    if h.len() % 2 != 0 {
        return None;
    }
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
        .collect()
}
