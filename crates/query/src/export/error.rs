//! Why reading or writing a stream failed.

/// Errors of the export readers and writers.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The SQLite file does not exist.
    #[error(
        "{path}: no such database file (give an experiment's <domain>.sq3, or a postgresql:// URI)"
    )]
    NoFile {
        /// What was given.
        path: String,
    },
    /// SQLite refused a statement (or the query was interrupted).
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// PostgreSQL refused a statement or the connection failed.
    #[error("PostgreSQL: {0}")]
    Postgres(#[from] postgres::Error),
    /// The store could not connect.
    #[error("{0}")]
    Store(#[from] store::StoreError),
    /// The output could not be written (for HTTP: the client went away).
    #[error("writing the output: {0}")]
    Io(#[from] std::io::Error),
    /// The Parquet writer failed.
    #[error("Parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// The Arrow writer failed.
    #[error("Arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// The database is not an experiment database.
    #[error("reading _experiment_metadata (is this an experiment database?): {0}")]
    NotExperiment(Box<ExportError>),
    /// An output file or directory could not be created or written.
    #[error("{action} {}: {source}", path.display())]
    File {
        /// What was being done (`creating`).
        action: &'static str,
        /// The file or directory.
        path: std::path::PathBuf,
        /// The system error.
        source: std::io::Error,
    },
    /// The writer was handed something it cannot represent.
    #[error("{0}")]
    Invalid(String),
}
