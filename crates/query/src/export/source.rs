//! Reading an experiment database: its start time, its streams (from the
//! `table_<name>` rows of `_experiment_metadata`), row counts, and rows as
//! exact [`Cell`]s from SQLite or PostgreSQL.

use std::collections::HashMap;
use std::time::Duration;

use omsp::Schema;

use super::cell::{columns, sqlite_cell, Cell, Column};
use super::error::ExportError;
use super::pgbin::pg_binary_cell;
use crate::sql::{Dialect, Sql};

/// An open experiment database (one connection).
pub enum Source {
    /// A `<domain>.sq3` file, opened read-only.
    Sqlite(rusqlite::Connection),
    /// A domain's PostgreSQL database.
    Postgres(Box<Pg>),
}

/// A PostgreSQL connection, and how to open another one on the same
/// database for binary COPY (see [`super::pgcopy`]). Dereferences to the
/// blocking client.
pub struct Pg {
    client: postgres::Client,
    copy: tokio_postgres::Config,
    /// Statements prepared on this connection, by SQL text: a tail or tile
    /// upkeep runs the same few queries over and over, and preparing each
    /// time costs a round trip and a parse.
    statements: HashMap<String, postgres::Statement>,
}

/// Prepared statements kept per connection (the cache starts over beyond).
const STATEMENTS: usize = 64;

impl Pg {
    /// Connects with `config`.
    pub fn connect(config: &postgres::Config) -> Result<Pg, postgres::Error> {
        Ok(Pg {
            client: config.connect(postgres::NoTls)?,
            copy: async_config(config),
            statements: HashMap::new(),
        })
    }

    /// Settings of the connections that read binary COPY.
    pub fn copy_config(&self) -> &tokio_postgres::Config {
        &self.copy
    }

    /// `sql`, prepared once on this connection.
    pub fn prepared(&mut self, sql: &str) -> Result<postgres::Statement, postgres::Error> {
        if let Some(st) = self.statements.get(sql) {
            return Ok(st.clone());
        }
        let st = self.client.prepare(sql)?;
        if self.statements.len() >= STATEMENTS {
            self.statements.clear();
        }
        self.statements.insert(sql.to_owned(), st.clone());
        Ok(st)
    }

    /// Runs `sql` (prepared once) with `params`, passing each row to
    /// `row`. A failure forgets the statement, in case the table changed
    /// under it.
    ///
    /// Rows arrive in batches, not one by one: the blocking client enters
    /// its async runtime once per call, and per row that cost more than
    /// decoding the row (a third of a live tail's CPU). A statement that
    /// may return more than [`FETCH`] rows (an export with a filter) runs
    /// as a portal inside a transaction and is fetched [`FETCH`] rows at a
    /// time, so memory stays bounded; one known to return fewer (`bounded`:
    /// a tail round, a tile catch-up, metadata) is fetched in one go,
    /// without the transaction's two extra round trips.
    pub fn query_each<E: From<postgres::Error>>(
        &mut self,
        sql: &str,
        params: &[Option<String>],
        bounded: bool,
        mut row: impl FnMut(&postgres::Row) -> Result<(), E>,
    ) -> Result<(), E> {
        let st = self.prepared(sql)?;
        let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = params
            .iter()
            .map(|p| p as &(dyn postgres::types::ToSql + Sync))
            .collect();
        let client = &mut self.client;
        let r = (|| {
            if bounded {
                for r in client.query(&st, &refs)? {
                    row(&r)?;
                }
                return Ok(());
            }
            let mut tx = client.transaction()?;
            let portal = tx.bind(&st, &refs)?;
            loop {
                let rows = tx.query_portal(&portal, FETCH as i32)?;
                for r in &rows {
                    row(r)?;
                }
                if rows.len() < FETCH {
                    break;
                }
            }
            tx.commit()?;
            Ok(())
        })();
        if r.is_err() {
            self.statements.remove(sql);
        }
        r
    }
}

/// Rows fetched at a time from a statement that may return many.
pub const FETCH: usize = 16_384;

impl std::ops::Deref for Pg {
    type Target = postgres::Client;
    fn deref(&self) -> &postgres::Client {
        &self.client
    }
}

impl std::ops::DerefMut for Pg {
    fn deref_mut(&mut self) -> &mut postgres::Client {
        &mut self.client
    }
}

/// The same settings for the asynchronous client (the blocking client's
/// `Config` wraps one but does not give it out).
fn async_config(c: &postgres::Config) -> tokio_postgres::Config {
    use postgres::config::Host;
    let mut a = tokio_postgres::Config::new();
    for h in c.get_hosts() {
        match h {
            Host::Tcp(name) => a.host(name),
            Host::Unix(path) => a.host_path(path),
        };
    }
    for p in c.get_ports() {
        a.port(*p);
    }
    if let Some(u) = c.get_user() {
        a.user(u);
    }
    if let Some(p) = c.get_password() {
        a.password(p);
    }
    if let Some(d) = c.get_dbname() {
        a.dbname(d);
    }
    if let Some(o) = c.get_options() {
        a.options(o);
    }
    if let Some(n) = c.get_application_name() {
        a.application_name(n);
    }
    if let Some(t) = c.get_connect_timeout() {
        a.connect_timeout(*t);
    }
    a
}

impl Source {
    /// Opens `spec`: a `.sq3` path, or a PostgreSQL URI (`postgresql://…`)
    /// or key-value string (`host=… dbname=…`).
    pub fn open(spec: &str) -> Result<Source, ExportError> {
        if spec.starts_with("postgresql://")
            || spec.starts_with("postgres://")
            || spec.contains("dbname=")
        {
            let config: postgres::Config = spec.parse()?;
            return Ok(Source::Postgres(Box::new(Pg::connect(&config)?)));
        }
        Source::sqlite(std::path::Path::new(spec))
    }

    /// Opens a SQLite file read-only (a reader of a WAL database never
    /// blocks its writer).
    pub fn sqlite(path: &std::path::Path) -> Result<Source, ExportError> {
        if !path.is_file() {
            return Err(ExportError::NoFile {
                path: path.display().to_string(),
            });
        }
        let c = rusqlite::Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        c.busy_timeout(Duration::from_secs(5))?;
        Ok(Source::Sqlite(c))
    }

    /// The SQL flavour of this database.
    pub fn dialect(&self) -> Dialect {
        match self {
            Source::Sqlite(_) => Dialect::Sqlite,
            Source::Postgres(_) => Dialect::Postgres,
        }
    }

    /// Runs `f` with a time budget: SQLite statements are interrupted when
    /// it runs out, PostgreSQL ones cancelled by `statement_timeout`. The
    /// error then satisfies [`ExportError::is_timeout`].
    pub fn with_budget<T>(
        &mut self,
        budget: Option<Duration>,
        f: impl FnOnce(&mut Source) -> Result<T, ExportError>,
    ) -> Result<T, ExportError> {
        let Some(budget) = budget else { return f(self) };
        match self {
            Source::Sqlite(c) => {
                let handle = c.get_interrupt_handle();
                let (tx, rx) = std::sync::mpsc::channel::<()>();
                // sqlite3_interrupt only stops statements running at that
                // moment: past the deadline, keep interrupting until `f`
                // gives up, so a statement begun just after is stopped too.
                let watchdog = std::thread::spawn(move || {
                    let mut wait = budget;
                    while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                        rx.recv_timeout(wait)
                    {
                        handle.interrupt();
                        wait = Duration::from_millis(5);
                    }
                });
                let out = f(self);
                drop(tx);
                let _ = watchdog.join();
                out
            }
            Source::Postgres(c) => {
                let ms = budget.as_millis().max(1);
                c.batch_execute(&format!("SET statement_timeout = {ms}"))?;
                let out = f(self);
                if let Source::Postgres(c) = self {
                    let _ = c.batch_execute("SET statement_timeout = 0");
                }
                out
            }
        }
    }

    /// Runs a query whose every column is text (or NULL).
    pub fn text_rows(&mut self, sql: &Sql) -> Result<Vec<Vec<Option<String>>>, ExportError> {
        match self {
            Source::Sqlite(c) => {
                let mut st = c.prepare_cached(&sql.text)?;
                let n = st.column_count();
                let rows = st.query_map(rusqlite::params_from_iter(&sql.params), |r| {
                    (0..n)
                        .map(|i| {
                            Ok(match r.get_ref(i)? {
                                rusqlite::types::ValueRef::Null => None,
                                rusqlite::types::ValueRef::Integer(v) => Some(v.to_string()),
                                rusqlite::types::ValueRef::Real(v) => Some(v.to_string()),
                                rusqlite::types::ValueRef::Text(t)
                                | rusqlite::types::ValueRef::Blob(t) => Some(super::cell::text(t)),
                            })
                        })
                        .collect::<rusqlite::Result<Vec<_>>>()
                })?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            }
            Source::Postgres(c) => {
                let mut out = Vec::new();
                c.query_each(&sql.text, &sql.pg_params(), true, |r| {
                    out.push(
                        (0..r.len())
                            .map(|i| r.try_get::<_, Option<String>>(i))
                            .collect::<Result<_, postgres::Error>>()?,
                    );
                    Ok::<_, ExportError>(())
                })?;
                Ok(out)
            }
        }
    }

    /// Runs `sql`, whose select list was written by [`select_list`] for
    /// `cols`, calling `row` with each row's cells.
    pub fn run(
        &mut self,
        sql: &Sql,
        cols: &[Column],
        mut row: impl FnMut(&[Cell]) -> Result<(), ExportError>,
    ) -> Result<(), ExportError> {
        let mut cells = Vec::with_capacity(cols.len());
        match self {
            Source::Sqlite(c) => {
                let mut st = c.prepare_cached(&sql.text)?;
                let mut rows = st.query(rusqlite::params_from_iter(&sql.params))?;
                while let Some(r) = rows.next()? {
                    cells.clear();
                    for (i, col) in cols.iter().enumerate() {
                        cells.push(sqlite_cell(r.get_ref(i)?, col.kind));
                    }
                    row(&cells)?;
                }
            }
            // Without parameters (full exports), COPY streams the rows
            // faster than one protocol message per row through the client.
            Source::Postgres(c) if sql.params.is_empty() => {
                return super::pgcopy::run(c, &sql.text, cols, row);
            }
            Source::Postgres(c) => {
                let bounded = sql.max_rows.is_some_and(|n| n <= FETCH as u64);
                c.query_each(&sql.text, &sql.pg_params(), bounded, |r| {
                    cells.clear();
                    for (i, col) in cols.iter().enumerate() {
                        cells.push(pg_binary_cell(r.try_get(i)?, col.kind));
                    }
                    row(&cells)
                })?;
            }
        }
        Ok(())
    }

    /// The experiment's start time (Unix seconds), if recorded.
    pub fn start_time(&mut self) -> Result<Option<i64>, ExportError> {
        let mut sql = Sql::new(self.dialect());
        sql.push("SELECT value FROM _experiment_metadata WHERE key = 'start_time' ORDER BY oml_tuple_id LIMIT 1");
        let rows = self.text_rows(&sql)?;
        Ok(rows
            .first()
            .and_then(|r| r[0].as_deref())
            .and_then(|v| v.trim().parse().ok()))
    }

    /// Every stream table with its schema, from the `table_<name>` rows.
    pub fn streams(&mut self) -> Result<Vec<Schema>, ExportError> {
        let mut sql = Sql::new(self.dialect());
        sql.push("SELECT key, value FROM _experiment_metadata WHERE key LIKE 'table\\_%' ESCAPE '\\' ORDER BY oml_tuple_id");
        let rows = self
            .text_rows(&sql)
            .map_err(|e| ExportError::NotExperiment(Box::new(e)))?;
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
    pub fn count(&mut self, table: &str) -> Result<u64, ExportError> {
        let mut sql = Sql::new(self.dialect());
        sql.push("SELECT CAST(count(*) AS TEXT) FROM ").ident(table);
        let rows = self.text_rows(&sql)?;
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
        row: impl FnMut(&[Cell]) -> Result<(), ExportError>,
    ) -> Result<(), ExportError> {
        let cols = columns(schema);
        let mut sql = Sql::new(self.dialect());
        sql.push("SELECT ");
        select_list(&mut sql, &cols);
        // Qualified: PostgreSQL would otherwise order by the `::text` output column.
        sql.push(" FROM ")
            .ident(&schema.name)
            .push(" ORDER BY ")
            .ident(&schema.name)
            .push(".oml_tuple_id");
        self.run(&sql, &cols, row)
    }
}

/// Appends the select list of `cols`: the columns as stored. PostgreSQL
/// sends them in its binary format (FLOAT8 bit for bit, NUMERIC as
/// base-10000 digits), decoded exactly by [`pg_binary_cell`].
pub fn select_list(sql: &mut Sql, cols: &[Column]) {
    for (i, c) in cols.iter().enumerate() {
        if i > 0 {
            sql.push(", ");
        }
        sql.ident(&c.name);
    }
}

impl ExportError {
    /// True if the query was stopped by its time budget.
    pub fn is_timeout(&self) -> bool {
        match self {
            ExportError::Sqlite(e) => {
                e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted)
            }
            ExportError::Postgres(e) => {
                e.code() == Some(&postgres::error::SqlState::QUERY_CANCELED)
            }
            ExportError::NotExperiment(e) => e.is_timeout(),
            _ => false,
        }
    }
}

/// A [`Source`] that may be dropped anywhere. Readers that live in async
/// tasks (a live tail, the tiles' background catch-up) end on async
/// workers, and a PostgreSQL client blocks while it closes, which tokio
/// refuses there (it panics): so a PostgreSQL connection dropped inside a
/// runtime is closed on a thread of its own.
pub struct Conn(Option<Source>);

impl Conn {
    /// Wraps `src`.
    pub fn new(src: Source) -> Conn {
        Conn(Some(src))
    }
}

impl std::ops::Deref for Conn {
    type Target = Source;
    fn deref(&self) -> &Source {
        self.0.as_ref().expect("present until dropped")
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Source {
        self.0.as_mut().expect("present until dropped")
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(src) = self.0.take() {
            if matches!(src, Source::Postgres(_)) && tokio::runtime::Handle::try_current().is_ok() {
                std::thread::spawn(move || drop(src));
            }
        }
    }
}
