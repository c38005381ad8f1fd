//! # store — where measurement streams come to rest
//!
//! Storage sinks of the collection server. The [`sqlite`] module keeps each
//! experiment domain in `<data-dir>/<domain>.sq3`, the [`postgres`] module in
//! a PostgreSQL database named after the domain, both with the OML layout, so
//! scripts written for the reference server (oml2-server) read our data
//! unchanged:
//!
//! - `_senders (name TEXT PRIMARY KEY, id INTEGER UNIQUE)`, ids 1, 2, … in
//!   order of first connection;
//! - `_experiment_metadata`: bookkeeping rows `table_<name>` (each table's
//!   canonical schema, with the index the client declared) and `start_time`,
//!   then the clients' metadata tuples;
//! - one table per stream: `oml_tuple_id`, `oml_sender_id`, `oml_seq`,
//!   `oml_ts_client`, `oml_ts_server`, then the fields, with the reference's
//!   SQL type names (`INTEGER`, `UNSIGNED INTEGER`, `BIGINT`,
//!   `UNSIGNED BIGINT`, `REAL`, `TEXT`, `BLOB`).
//!
//! Unlike the reference, values are stored **exactly**: uint32 as its
//! non-negative value, uint64/guid up to 2^63−1 as INTEGER and above as an
//! 8-byte big-endian BLOB (SQLite would turn decimal text into a lossy REAL),
//! guid 0 as 0, vectors as `[ a, b, c ]` with shortest round-trip doubles and
//! `[ ]` when empty. See [`sqlite::values`] and `docs/storage.md`.
//!
//! The store does no threading: the server gives each open database one
//! writer thread that owns its store, through the [`Sink`] trait that both
//! [`SqliteStore`] and [`PgStore`] implement. PostgreSQL differs where the
//! reference loses data there: uint64/guid are `NUMERIC(20,0)`, doubles
//! travel as binary FLOAT8, rows go in by binary `COPY` (see [`postgres`]).
//!
//! ```
//! use store::{Row, SqliteOptions, SqliteStore};
//! use omsp::{Schema, Value};
//!
//! let dir = tempfile::tempdir()?;
//! let mut db = SqliteStore::open(dir.path(), "exp1", SqliteOptions::default())?;
//! let start = db.ensure_start_time(1_700_000_000)?;
//! let sender = db.sender_id("node-1")?;
//! let table = db.register_schema(&Schema::parse("1 app_mp x:uint64").unwrap())?;
//! db.insert(&Row {
//!     table,
//!     sender,
//!     seq: 1,
//!     ts_client: 0.5,
//!     ts_server: 0.6,
//!     values: vec![Value::UInt64(u64::MAX)],
//! })?;
//! db.close()?;
//! assert_eq!(start, 1_700_000_000);
//! assert!(dir.path().join("exp1.sq3").exists());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod catalog;
pub mod clock;
mod commit;
mod error;
pub mod metadata;
pub mod postgres;
mod row;
mod sink;
pub mod sql;
pub mod sqlite;

pub use self::postgres::{PgOptions, PgStore};
pub use catalog::{START_TIME_KEY, TABLE_KEY_PREFIX};
pub use clock::{ClockEstimate, ClockReport, CLOCK_TABLE};
pub use commit::CommitPolicy;
pub use error::StoreError;
pub use row::{Row, TableId};
pub use sink::Sink;
pub use sqlite::{SqliteOptions, SqliteStore, MULTI_ROWS};
