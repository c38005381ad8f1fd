//! System benchmarks of streamgauge's components, each compared with the
//! physical limit or the reference implementation measured **in the same
//! run** (`streamgauge bench`; docs/cli/bench.md describes every option):
//!
//! - [`server`]: collection-server ingest into SQLite or PostgreSQL against
//!   raw inserts / binary COPY of the same rows and the reference
//!   oml2-server;
//! - [`observer`]: what reporting every packet costs a UDP sender;
//! - [`readers`]: what live tails and downsampled queries cost ingestion,
//!   and the tail's latency;
//! - [`capture`]: live capture against tcpdump on the same traffic;
//! - [`hostile`]: a sender's rate, rows, and the server's memory and
//!   descriptors under slowloris, abandoned tails, maximal headers and
//!   malformed connections (binary `bench-hostile`);
//! - [`query`]: the query API's downsampling and exports against the
//!   databases' own dumps;
//! - [`c_inject`], [`c_observer`]: liboml2 from C, ours against the
//!   reference library;
//! - `inline` (feature `inline`): packet and bit rates through the in-line
//!   eBPF programs against the same run's uninstrumented and calibration
//!   phases, and each program's cost timed alone.
//!
//! Each benchmark takes a plain options struct; the `streamgauge` binary's
//! clap glue fills it in and prints what comes back. Test infrastructure
//! (`pgtemp`, a throwaway PostgreSQL cluster) is a dependency of this crate
//! only, so a binary built without its `bench` feature does not carry it.
//!
//! ```no_run
//! let report = benchmarks::observer::run(&benchmarks::observer::Options {
//!     seconds: 1.0,
//!     rounds: 3,
//!     size: 64,
//!     target: benchmarks::observer::Target::File,
//! })?;
//! print!("{}", report.table());
//! # Ok::<(), anyhow::Error>(())
//! ```

#![deny(missing_docs)]

mod c_common;
mod c_core;
pub mod c_inject;
pub mod c_observer;
pub mod capture;
pub mod hostile;
#[cfg(feature = "inline")]
pub mod inline;
pub mod observer;
mod pg;
mod pg_raw;
mod pg_verify;
mod progress;
pub mod query;
mod raw;
pub mod readers;
mod reference_server;
mod replay;
pub mod report;
pub mod server;
mod verify;
mod workload;

pub use c_common::Libraries;
pub use workload::Preset;
