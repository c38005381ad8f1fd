//! Storage errors.

use std::path::PathBuf;

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The domain cannot name a database: it could escape the data
    /// directory or break a file name (see [`omsp::names::is_valid_domain`]).
    #[error("invalid domain {0:?} (want 1-63 bytes of [A-Za-z0-9_.-], not starting with '.')")]
    InvalidDomain(String),
    /// The data directory does not exist or is not a directory.
    #[error("data directory {path} is not usable: {reason}")]
    DataDir {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A stream's name is taken by tables of other definitions up to `_9`.
    #[error("stream {name:?}: table name and its _2.._9 variants all hold other schemas")]
    SchemaConflict {
        /// The stream name the client asked for.
        name: String,
    },
    /// A row does not fit its table (wrong number of values).
    #[error("table {table}: row has {found} values, the table has {expected} fields")]
    RowShape {
        /// Table name.
        table: String,
        /// Fields of the table.
        expected: usize,
        /// Values in the row.
        found: usize,
    },
    /// The database holds something this layout cannot make sense of.
    #[error("database {path}: {reason}")]
    Layout {
        /// Database file.
        path: PathBuf,
        /// What is inconsistent.
        reason: String,
    },
    /// SQLite reported an error.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A name PostgreSQL would silently truncate (identifiers are at most
    /// 63 bytes), which would make two streams share a table.
    #[error("name {name:?} is longer than {max} bytes")]
    NameTooLong {
        /// The stream, field or table name.
        name: String,
        /// The longest allowed.
        max: usize,
    },
    /// A value the database cannot hold (a string with a NUL byte in
    /// PostgreSQL); the row is not stored.
    #[error("table {table}: {reason}")]
    Unstorable {
        /// Table name.
        table: String,
        /// What cannot be stored.
        reason: String,
    },
    /// The PostgreSQL role may not create the per-domain databases.
    #[error("postgresql role {role:?} may not create databases (grant it CREATEDB)")]
    CannotCreateDatabases {
        /// The role the server logs in as.
        role: String,
    },
    /// Partitioning with pg_partman (`--pg-partition`) cannot work: the
    /// extension is missing or the role may not use it.
    #[error("partitioning: {0}")]
    Partitioning(String),
    /// A COPY stream to PostgreSQL could not be written.
    #[error("postgresql copy: {0}")]
    Io(#[from] std::io::Error),
    /// PostgreSQL reported an error (shown with its SQLSTATE, message,
    /// detail and hint when the server sent them).
    #[error("postgresql: {}", describe_pg(.0))]
    Postgres(#[from] ::postgres::Error),
    /// The database cannot store anything now: a full disk or quota, a
    /// read-only file system, an I/O error. The store has rolled its open
    /// transaction back, so nothing written since the last commit is
    /// stored; it all has to be written again once the cause is gone.
    #[error(
        "database {db} cannot store data now ({source}): free disk space or make \
         the file system writable again; the data since the last commit is kept \
         and written again"
    )]
    Unavailable {
        /// The database (file path or URI).
        db: String,
        /// What failed.
        source: Box<StoreError>,
    },
}

/// `SQLSTATE 42P07: relation "x" already exists (detail: …; hint: …)` for
/// errors the server reported, else the client library's text with its
/// cause (`connection closed`, `error connecting to server: …`).
pub fn describe_pg(e: &::postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut s = format!("SQLSTATE {}: {}", db.code().code(), db.message());
        if let Some(d) = db.detail() {
            s.push_str(&format!(" (detail: {d})"));
        }
        if let Some(h) = db.hint() {
            s.push_str(&format!(" (hint: {h})"));
        }
        return s;
    }
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

impl StoreError {
    /// True if the database could not store anything (see
    /// [`StoreError::Unavailable`]): the open transaction is gone and its
    /// work must be done again, as opposed to one row or record refused.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, StoreError::Unavailable { .. })
    }

    /// The SQLSTATE of a PostgreSQL error, if the server sent one (also when
    /// it came through a COPY stream's I/O error).
    pub fn sqlstate(&self) -> Option<&str> {
        match self {
            StoreError::Postgres(e) => e.code().map(|c| c.code()),
            StoreError::Io(io) => io
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<::postgres::Error>())
                .and_then(|e| e.code())
                .map(|c| c.code()),
            _ => None,
        }
    }
}
