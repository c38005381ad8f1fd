//! The manager's database: one SQLite file (`manager.db` in the data
//! directory, WAL journal), schema migrations applied on open, and one
//! module of queries per resource.
//!
//! Every query runs through [`Db::with`], which holds the connection for
//! the closure only and turns SQLite errors into API errors (a unique
//! constraint becomes 409 `conflict`, anything else 500), so handlers stay
//! thin. Queries are short; the manager's load is people and a monitor.
//!
//! PostgreSQL is not implemented: the queries are plain SQL over
//! `rusqlite`, and a second backend would sit behind this type.

pub mod audit;
pub mod configs;
pub mod devices;
pub mod experiments;
pub mod migrations;
pub mod monitor;
pub mod runs;
pub mod users;

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use httpkit::ApiError;
use rusqlite::Connection;

/// Why the database could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// SQLite refused to open or migrate the file.
    #[error("database {path}: {source}")]
    Open {
        /// The file.
        path: String,
        /// SQLite's error.
        source: rusqlite::Error,
    },
}

/// The database handle shared by handlers, runs and the monitor.
pub struct Db {
    /// One connection; SQLite serialises writers anyway.
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Db")
    }
}

impl Db {
    /// Opens (creating if needed) `path`, switches to WAL and applies the
    /// migrations.
    pub fn open(path: &Path) -> Result<Db, DbError> {
        let err = |source| DbError::Open {
            path: path.display().to_string(),
            source,
        };
        let mut conn = Connection::open(path).map_err(err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(err)?;
        Self::prepare(&mut conn).map_err(err)?;
        Ok(Db {
            conn: Mutex::new(conn),
        })
    }

    /// An in-memory database (unit tests).
    pub fn memory() -> Result<Db, DbError> {
        let err = |source| DbError::Open {
            path: ":memory:".into(),
            source,
        };
        let mut conn = Connection::open_in_memory().map_err(err)?;
        Self::prepare(&mut conn).map_err(err)?;
        Ok(Db {
            conn: Mutex::new(conn),
        })
    }

    fn prepare(conn: &mut Connection) -> rusqlite::Result<()> {
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        migrations::apply(conn)?;
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` with the connection; SQLite errors become API errors.
    pub fn with<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, ApiError> {
        f(&self.lock()).map_err(api_error)
    }

    /// Runs `f` in one transaction (committed when it returns `Ok`).
    pub fn tx<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T, ApiError> {
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(api_error)?;
        let v = f(&tx).map_err(api_error)?;
        tx.commit().map_err(api_error)?;
        Ok(v)
    }
}

/// SQLite error → API error: constraint violations are the caller's
/// (409), the rest ours (500, logged).
pub fn api_error(e: rusqlite::Error) -> ApiError {
    if let rusqlite::Error::SqliteFailure(f, msg) = &e {
        if f.code == rusqlite::ErrorCode::ConstraintViolation {
            let what = msg.clone().unwrap_or_default();
            let message = if what.contains("UNIQUE") {
                format!("the name is taken ({what}): choose another")
            } else {
                format!("the request refers to something that does not exist or is still in use ({what})")
            };
            return ApiError::new(axum::http::StatusCode::CONFLICT, "conflict", message);
        }
    }
    tracing::error!(error = %e, "database error");
    ApiError::internal(format!("database error: {e}"))
}

/// A JSON column: text in SQLite, a value in the API (`null` when the
/// stored text is unreadable, which only a hand-edited database has).
pub fn json_col(text: Option<String>) -> serde_json::Value {
    text.and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null)
}
