//! The manager's database: a SQLite file by default (`manager.db` in the
//! data directory, WAL journal) or a PostgreSQL database by option
//! ([`DbTarget`]), with versioned schema migrations applied on open
//! ([`migrations`]) and one module of queries per resource.
//!
//! The queries are written once against the small executor of [`sql`]
//! (portable SQL, values converted at the boundary); only the schema is
//! written per backend. Every query runs through [`Db::with`] (or
//! [`Db::tx`] for a transaction), which holds the connection for the
//! closure only and turns database errors into API errors the same way
//! for both backends: a violated constraint is 409 `conflict` (a taken
//! name; something missing or still in use), an unreachable or busy
//! database 503 `database_unavailable`, anything else 500 (logged).
//!
//! One connection serves the manager on either backend (its load is people
//! and a monitor, and queries are short). On PostgreSQL a connection that
//! broke (the server restarted) is replaced on next use; the request that
//! met the break answers 503. The blocking PostgreSQL client must not run
//! on an async worker thread as is, so [`Db::with`] moves off it
//! (`block_in_place`) when called from one.

pub mod audit;
pub mod configs;
pub mod dashboards;
pub mod devices;
pub mod experiments;
pub mod migrations;
pub mod monitor;
pub mod runs;
pub mod sql;
pub mod users;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use httpkit::ApiError;

use sql::PgSession;
pub use sql::{Conn, Error, Result, Row, Violation};
pub use store::sql::{Dialect, Value};

/// Where the database is.
#[derive(Clone, PartialEq, Eq)]
pub enum DbTarget {
    /// A SQLite file (created if missing).
    Sqlite(PathBuf),
    /// A PostgreSQL database: a `postgres://` / `postgresql://` URL or a
    /// libpq-style `key=value` string, and the password when it is not
    /// in there (from a file or the environment, kept out of the URL so it
    /// is not on a command line).
    Postgres {
        /// The connection string.
        url: String,
        /// The password, if given apart.
        password: Option<String>,
    },
}

impl DbTarget {
    /// Parses a `--db` value: `postgres://…`, `postgresql://…` or
    /// `key=value …` (containing `dbname=` or `host=`) is PostgreSQL,
    /// `sqlite:PATH` or a plain path is a SQLite file.
    pub fn parse(s: &str) -> std::result::Result<DbTarget, String> {
        let s = s.trim();
        if s.is_empty() {
            return Err("empty database location".into());
        }
        if let Some(path) = s
            .strip_prefix("sqlite://")
            .or_else(|| s.strip_prefix("sqlite:"))
        {
            if path.is_empty() {
                return Err("sqlite: give a file path (sqlite:/var/lib/…/manager.db)".into());
            }
            return Ok(DbTarget::Sqlite(PathBuf::from(path)));
        }
        let pg = s.starts_with("postgres://")
            || s.starts_with("postgresql://")
            || (s.contains('=') && (s.contains("dbname=") || s.contains("host=")));
        if pg {
            let t = DbTarget::Postgres {
                url: s.to_owned(),
                password: None,
            };
            t.pg_config()?;
            return Ok(t);
        }
        if s.contains("://") {
            return Err(format!(
                "{}: not a database this manager knows (postgres://… or a SQLite file path)",
                redact(s)
            ));
        }
        Ok(DbTarget::Sqlite(PathBuf::from(s)))
    }

    /// The same target with a password given apart (PostgreSQL only; a
    /// password in the URL wins).
    pub fn with_password(self, p: Option<String>) -> DbTarget {
        match self {
            DbTarget::Postgres { url, .. } => DbTarget::Postgres { url, password: p },
            other => other,
        }
    }

    /// The backend.
    pub fn backend(&self) -> Dialect {
        match self {
            DbTarget::Sqlite(_) => Dialect::Sqlite,
            DbTarget::Postgres { .. } => Dialect::Postgres,
        }
    }

    /// For messages and logs: the file, or the URL without its password.
    pub fn describe(&self) -> String {
        match self {
            DbTarget::Sqlite(p) => p.display().to_string(),
            DbTarget::Postgres { url, .. } => redact(url),
        }
    }

    /// The PostgreSQL client settings (no I/O).
    fn pg_config(&self) -> std::result::Result<postgres::Config, String> {
        let DbTarget::Postgres { url, password } = self else {
            return Err("not a PostgreSQL target".into());
        };
        let mut cfg =
            postgres::Config::from_str(url).map_err(|e| format!("{}: {e}", redact(url)))?;
        if cfg.get_password().is_none() {
            if let Some(p) = password {
                cfg.password(p);
            }
        }
        if cfg.get_user().is_none() {
            return Err(format!(
                "{}: name the user (postgres://USER@HOST/DB)",
                redact(url)
            ));
        }
        if cfg.get_connect_timeout().is_none() {
            cfg.connect_timeout(Duration::from_secs(5));
        }
        if cfg.get_hosts().is_empty() {
            cfg.host("localhost");
        }
        cfg.application_name("streamgauge-manager");
        // Notices ("relation … already exists, skipping") are not news.
        cfg.notice_callback(|n| tracing::debug!(notice = %n.message(), "PostgreSQL notice"));
        Ok(cfg)
    }
}

impl std::fmt::Debug for DbTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DbTarget::Sqlite(p) => f.debug_tuple("Sqlite").field(p).finish(),
            DbTarget::Postgres { password, .. } => f
                .debug_struct("Postgres")
                .field("url", &self.describe())
                .field("password", &password.as_ref().map(|_| "<redacted>"))
                .finish(),
        }
    }
}

impl std::fmt::Display for DbTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// A connection string without its password (`user:secret@` → `user:***@`,
/// `password=secret` → `password=***`).
pub fn redact(url: &str) -> String {
    let mut out = url.to_owned();
    if let Some(scheme_end) = out.find("://") {
        let rest = &out[scheme_end + 3..];
        let auth_end = rest.find(['/', '?']).unwrap_or(rest.len());
        if let Some(at) = rest[..auth_end].rfind('@') {
            if let Some(colon) = rest[..at].find(':') {
                let (a, b) = (scheme_end + 3 + colon + 1, scheme_end + 3 + at);
                out.replace_range(a..b, "***");
            }
        }
    }
    // key=value strings and URL query parameters.
    let mut result = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(i) = rest.find("password=") {
        result.push_str(&rest[..i + "password=".len()]);
        rest = &rest[i + "password=".len()..];
        let end = rest.find([' ', '&']).unwrap_or(rest.len());
        result.push_str("***");
        rest = &rest[end..];
    }
    result.push_str(rest);
    result
}

/// Why the database could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The database refused to open or migrate.
    #[error("database {path}: {source}")]
    Open {
        /// The file, or the URL without its password.
        path: String,
        /// The error.
        source: Error,
    },
    /// The location is unusable.
    #[error("database: {0}")]
    Target(String),
}

enum Handle {
    Sqlite(rusqlite::Connection),
    // Boxed: the client's settings and statement cache are large.
    Postgres(Box<PgHandle>),
}

struct PgHandle {
    config: postgres::Config,
    /// `None` after a failed reconnection.
    session: Option<PgSession>,
}

impl PgHandle {
    /// A usable session: the current one, or a new connection when it
    /// broke; an open transaction a panic left is rolled back.
    fn ready(&mut self) -> Result<&mut PgSession> {
        let broken = self.session.as_ref().is_none_or(|s| s.client.is_closed());
        if broken {
            if let Some(old) = self.session.take() {
                drop_pg(old);
            }
            tracing::info!("connecting to PostgreSQL again");
            self.session = Some(PgSession::new(self.config.connect(postgres::NoTls)?));
        }
        let Some(s) = self.session.as_mut() else {
            unreachable!("connected just above")
        };
        if s.in_tx {
            s.in_tx = false;
            s.batch("ROLLBACK")?;
        }
        Ok(s)
    }
}

impl Drop for PgHandle {
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            drop_pg(s);
        }
    }
}

/// Closes a PostgreSQL connection on a thread of its own: the client
/// blocks on its private runtime, which must not happen (nor be dropped)
/// on an async worker thread.
fn drop_pg(s: PgSession) {
    let _ = std::thread::Builder::new()
        .name("manager-pg-close".into())
        .spawn(move || drop(s));
}

/// Runs blocking database work from anywhere: directly outside a tokio
/// runtime (and on its blocking threads), through `block_in_place` on a
/// multi-threaded runtime's worker, and on a scoped thread on a
/// current-thread runtime (where `block_in_place` is not allowed).
fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    match tokio::runtime::Handle::try_current() {
        Err(_) => f(),
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        Ok(_) => std::thread::scope(|s| {
            s.spawn(f)
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        }),
    }
}

/// The database handle shared by handlers, runs and the monitor.
pub struct Db {
    /// One connection.
    conn: Mutex<Handle>,
    backend: Dialect,
    describe: String,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Db({:?}, {})", self.backend, self.describe)
    }
}

impl Db {
    /// Opens (creating if needed) the SQLite file `path`, switches to WAL
    /// and applies the migrations.
    pub fn open(path: &Path) -> std::result::Result<Db, DbError> {
        let err = |source| DbError::Open {
            path: path.display().to_string(),
            source,
        };
        let conn = rusqlite::Connection::open(path).map_err(|e| err(e.into()))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| err(e.into()))?;
        Self::sqlite(conn, path.display().to_string()).map_err(err)
    }

    /// An in-memory SQLite database (unit tests).
    pub fn memory() -> std::result::Result<Db, DbError> {
        let conn = rusqlite::Connection::open_in_memory().map_err(|e| DbError::Open {
            path: ":memory:".into(),
            source: e.into(),
        })?;
        Self::sqlite(conn, ":memory:".into()).map_err(|source| DbError::Open {
            path: ":memory:".into(),
            source,
        })
    }

    fn sqlite(conn: rusqlite::Connection, describe: String) -> Result<Db> {
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.set_prepared_statement_cache_capacity(64);
        migrations::apply(&Conn::sqlite(&conn))?;
        Ok(Db {
            conn: Mutex::new(Handle::Sqlite(conn)),
            backend: Dialect::Sqlite,
            describe,
        })
    }

    /// Opens the database at `target` and applies the migrations.
    pub fn connect(target: &DbTarget) -> std::result::Result<Db, DbError> {
        match target {
            DbTarget::Sqlite(p) => Db::open(p),
            DbTarget::Postgres { .. } => {
                let describe = target.describe();
                let config = target.pg_config().map_err(DbError::Target)?;
                let err = |source| DbError::Open {
                    path: describe.clone(),
                    source,
                };
                let handle = off_runtime(|| -> Result<Box<PgHandle>> {
                    let client = config.connect(postgres::NoTls)?;
                    let mut s = PgSession::new(client);
                    migrations::apply(&Conn::postgres(&mut s))?;
                    Ok(Box::new(PgHandle {
                        config,
                        session: Some(s),
                    }))
                })
                .map_err(err)?;
                tracing::info!(database = %describe, "manager database on PostgreSQL");
                Ok(Db {
                    conn: Mutex::new(Handle::Postgres(handle)),
                    backend: Dialect::Postgres,
                    describe,
                })
            }
        }
    }

    /// The backend.
    pub fn backend(&self) -> Dialect {
        self.backend
    }

    /// The file, or the URL without its password.
    pub fn describe(&self) -> &str {
        &self.describe
    }

    fn lock(&self) -> MutexGuard<'_, Handle> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` with the connection (statements outside a transaction
    /// commit one by one); errors become API errors.
    pub fn with<T: Send>(
        &self,
        f: impl FnOnce(&Conn<'_>) -> Result<T> + Send,
    ) -> std::result::Result<T, ApiError> {
        self.run(f).map_err(api_error)
    }

    /// Runs `f` in one transaction (committed when it returns `Ok`).
    pub fn tx<T: Send>(
        &self,
        f: impl FnOnce(&Conn<'_>) -> Result<T> + Send,
    ) -> std::result::Result<T, ApiError> {
        self.run(|c| c.transaction(f)).map_err(api_error)
    }

    /// [`Db::with`] keeping the database's own error (tools, tests).
    pub fn run<T: Send>(&self, f: impl FnOnce(&Conn<'_>) -> Result<T> + Send) -> Result<T> {
        match self.backend {
            Dialect::Sqlite => {
                let mut h = self.lock();
                let Handle::Sqlite(c) = &mut *h else {
                    unreachable!("a SQLite Db holds a SQLite connection")
                };
                if !c.is_autocommit() {
                    // A transaction a panic left open.
                    c.execute_batch("ROLLBACK")?;
                }
                f(&Conn::sqlite(c))
            }
            Dialect::Postgres => off_runtime(|| {
                let mut h = self.lock();
                let Handle::Postgres(p) = &mut *h else {
                    unreachable!("a PostgreSQL Db holds a PostgreSQL connection")
                };
                f(&Conn::postgres(p.ready()?))
            }),
        }
    }
}

/// Database error → API error, the same for both backends: constraint
/// violations are the caller's (409), an unreachable or busy database is
/// 503, the rest ours (500, logged).
pub fn api_error(e: Error) -> ApiError {
    use axum::http::StatusCode;
    match e.violation() {
        Some(Violation::Unique(what)) => {
            return ApiError::new(
                StatusCode::CONFLICT,
                "conflict",
                format!("the name is taken ({what}): choose another"),
            )
        }
        Some(Violation::Other(what)) => {
            return ApiError::new(
                StatusCode::CONFLICT,
                "conflict",
                format!(
                "the request refers to something that does not exist or is still in use ({what})"
            ),
            )
        }
        None => {}
    }
    if matches!(e, Error::NoRows) {
        return ApiError::not_found("not_found", "it no longer exists (deleted meanwhile?)");
    }
    tracing::error!(error = %e, "database error");
    if e.unavailable() {
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "database_unavailable",
            format!("the manager's database cannot be used now: {e}"),
        );
    }
    ApiError::internal(format!("database error: {e}"))
}

/// A JSON column: text in the database, a value in the API (`null` when
/// the stored text is unreadable, which only a hand-edited database has).
pub fn json_col(text: Option<String>) -> serde_json::Value {
    text.and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_and_redaction() {
        assert_eq!(
            DbTarget::parse("/var/lib/m/manager.db").unwrap(),
            DbTarget::Sqlite("/var/lib/m/manager.db".into())
        );
        assert_eq!(
            DbTarget::parse("sqlite:m.db").unwrap(),
            DbTarget::Sqlite("m.db".into())
        );
        let t = DbTarget::parse("postgres://mgr:s3cret@db.example:5433/manager").unwrap();
        assert_eq!(t.backend(), Dialect::Postgres);
        assert_eq!(t.describe(), "postgres://mgr:***@db.example:5433/manager");
        assert!(!format!("{t:?}").contains("s3cret"));
        let t =
            DbTarget::parse("host=/run/postgresql user=mgr dbname=m password=x sslmode=disable")
                .unwrap();
        assert_eq!(
            t.describe(),
            "host=/run/postgresql user=mgr dbname=m password=*** sslmode=disable"
        );
        let t = t.with_password(Some("hidden".into()));
        assert!(!format!("{t:?}").contains("hidden"));
        assert!(DbTarget::parse("mysql://x/y").is_err());
        assert!(
            DbTarget::parse("postgres://db.example/m").is_err(),
            "no user"
        );
        assert_eq!(
            redact("postgresql://u@h/d?password=p&sslmode=disable"),
            "postgresql://u@h/d?password=***&sslmode=disable"
        );
    }
}
