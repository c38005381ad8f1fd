//! # query — the HTTP query API of stored measurement streams
//!
//! [`router`] answers under `/api/v1/`: discovery of domains, senders,
//! streams and fields; exact row queries with time ranges, sender and
//! field predicates and keyset pagination; M4 downsampling computed by the
//! database; live tails as Server-Sent Events; and answers as JSON, CSV,
//! JSON lines, Arrow IPC or Parquet, streamed as they are read. The same
//! readers and writers ([`export`]) serve `streamgauge export`, so both
//! give the same data. Reference: `docs/query-api.md`.
//!
//! ```no_run
//! use query::{router, Backend, QueryState};
//!
//! # async fn serve() -> std::io::Result<()> {
//! let state = QueryState::new(Backend::Sqlite { dir: "/var/lib/streamgauge".into() });
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! axum::serve(listener, router(state)).await
//! # }
//! ```
#![deny(missing_docs)]

pub mod auth;
pub mod bench;
mod body;
pub mod catalog;
pub mod derive;
mod error;
pub mod exec;
pub mod export;
pub mod format;
mod openapi;
pub mod plan;
mod priority;
pub mod request;
mod routes;
pub mod sql;
mod state;
mod tail;
pub mod tiles;

pub use error::QueryError;
pub use openapi::{document as openapi_document, ApiDoc};
pub use routes::router;
pub use state::{Backend, CommitFeed, QueryState, DEFAULT_MAX_TAILS};
pub use tail::{rows_from_commits, rows_read_back};
