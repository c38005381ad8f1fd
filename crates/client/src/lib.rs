//! # client — the streamgauge injection point
//!
//! A Rust replacement for OML's liboml2: an application defines
//! **measurement points** (MPs, typed tuples), injects samples into them
//! from any thread, and the library turns them into OMSP measurement
//! streams (filtered, windowed, encoded in text or binary) written to
//! files or sent to collection servers, which store them in SQLite or
//! PostgreSQL.
//!
//! What a client does is described by a [`spec::ClientSpec`], plain data
//! produced by the configuration front ends in [`config`] (`--oml-*`
//! options, `OML_*` variables, XML and TOML files) or built by hand.
//!
//! ## Example
//!
//! ```
//! use client::spec::{ClientSpec, DestinationSpec, Encoding, OverloadPolicy, Uri};
//! use client::Client;
//! use omsp::{OmlType, ValueRef};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("ping.omsp");
//! let spec = ClientSpec {
//!     app: "ping".into(),
//!     domain: Some("exp1".into()),
//!     id: Some("node1".into()),
//!     destinations: vec![DestinationSpec {
//!         uri: Uri::File(path.clone()),     // or Uri::Tcp { host, port: 3003 }
//!         encoding: Encoding::Text,
//!         policy: OverloadPolicy::Block { stall_limit: None },
//!         bufsize: 1 << 20,
//!         streams: None,                    // one per-sample stream per MP
//!         instrumentation: true,
//!         backchannel: Default::default(),
//!     }],
//!     instr_interval: Some(std::time::Duration::from_secs(1)),
//!     ..ClientSpec::default()
//! };
//! let client = Client::new(spec)?;
//! let rtt = client.add_mp("rtt", &[("ms", OmlType::Double), ("host", OmlType::String)])?;
//! client.inject_metadata("version", "1.0")?;
//! client.start()?;
//!
//! // From any thread: each call copies the sample into the thread's queue.
//! rtt.inject(&[ValueRef::Double(0.25), ValueRef::String("10.0.0.2")])?;
//!
//! client.close()?; // flush, write, join
//! assert_eq!(client.stats().destinations[0].source("rtt").written, 1);
//! let text = std::fs::read_to_string(&path).unwrap();
//! assert!(text.starts_with("protocol: 5\ndomain: exp1\n"));
//! assert!(text.contains("schema: 2 ping_rtt ms:double host:string \n"));
//! # Ok::<(), client::ClientError>(())
//! ```
//!
//! ## How a sample travels
//!
//! 1. [`Mp::inject`] checks the values against the MP's types, reads the
//!    clock, and copies the sample into a lock-free ring owned by the
//!    calling thread (one per thread and client). No lock, no syscall, no
//!    allocation in the steady state.
//! 2. One **writer thread** per client drains every ring, runs each
//!    stream's window and filters, assigns sequence numbers, and encodes
//!    the rows of each destination with [`omsp::Encoder`].
//! 3. One **sender thread** per destination writes the encoded chunks to
//!    its file or TCP connection, reconnecting and resending the header
//!    and schema-0 tuples when a connection fails.
//!
//! Overload is handled per destination, by its [`spec::OverloadPolicy`] and
//! byte budget; every dropped sample or tuple is counted ([`Stats`] and the
//! `_client_instrumentation` stream). `docs/client.md` in the repository
//! explains the design, the queueing and the resend semantics.
//!
//! TCP destinations also receive `_client_clock`, the synchronisation state
//! of the host's clock ([`clocksync`]), at start and every
//! [`spec::ClientSpec::clock_interval`], so the server can tell which
//! senders' timestamps compare at fine resolution (`docs/clock.md`).
#![deny(missing_docs)]

mod client;
mod clock;
mod clock_report;
pub mod clocksync;
pub mod config;
pub mod destination;
mod error;
mod header;
mod instr_window;
mod instrumentation;
mod layout;
mod mp;
mod queue;
pub mod random;
mod record;
pub mod spec;
mod start;
mod stats;
mod stream;
mod transport;
mod writer;

pub use client::{Client, Options};
pub use clock_report::CLOCK_STREAM;
pub use error::ClientError;
pub use mp::Mp;
pub use stats::{DestinationStats, MemoryStats, MpStats, SourceStats, Stats};
