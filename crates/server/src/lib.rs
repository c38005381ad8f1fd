//! # server — the collection point
//!
//! An oml2-server replacement: accepts OMSP v1–v5 streams (text and binary)
//! from many concurrent clients over TCP and stores them with the
//! [`store`] crate, in the reference's database layout: SQLite files by
//! default, or PostgreSQL databases ([`Backend::Postgres`]).
//!
//! - one tokio task per connection decodes with [`omsp::Decoder`], rejects
//!   bad lines and packets with a logged reason (client address and stream
//!   offset) and closes the connection only on fatal errors;
//! - one writer thread per open database, fed by a bounded
//!   queue: a full queue stops the connections' reads, so clients feel TCP
//!   backpressure instead of the server buffering without bound;
//! - writers commit whenever they run out of work and at least every
//!   100 ms under load, so rows are visible to readers (SQLite in WAL mode,
//!   PostgreSQL) well within a second;
//! - optional TLS on the same port as plain OMSP ([`tls`]) and token
//!   authentication per domain ([`auth`]), both off by default;
//! - [`Server::shutdown`] drains connections, commits and closes every
//!   database, and tells the event hook (`EXIT`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use server::{Server, ServerConfig};
//!
//! let mut config = ServerConfig::new("/var/lib/streamgauge");
//! config.listen = vec!["127.0.0.1:0".parse()?];
//! let server = Server::start(config).await?;
//! println!("listening on {:?}", server.local_addrs());
//! tokio::signal::ctrl_c().await?;
//! server.shutdown().await; // every accepted row is committed here
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod admission;
pub mod auth;
mod clock;
pub mod commits;
pub mod config;
mod connection;
pub mod feedback;
pub mod hook;
pub mod http;
pub mod http_runtime;
pub mod metrics;
mod read_buffer;
mod registry;
pub mod run;
mod server;
pub mod session;
mod shutdown;
mod socket;
pub mod tls;
mod transport;
pub mod trim;
mod writer;

pub use config::{AuthSettings, Backend, PgOptions, ServerConfig, TlsSettings, DEFAULT_PORT};
pub use server::{Server, ServerError};
