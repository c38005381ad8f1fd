//! # proxy — durable store-and-forward for measurement streams
//!
//! `streamgauge proxy` sits between OML clients and a collection server
//! (or another proxy). It accepts clients like a server, writes every
//! whole tuple of each client stream to an append-only on-disk
//! [`journal`] *before* forwarding it, and forwards each stream upstream
//! as a resumable session (spec `spec/omsp.md` §3.6): the upstream says
//! where to resume and acknowledges what it has committed, so an upstream
//! outage, a proxy crash (even SIGKILL) or a restart loses and duplicates
//! nothing. Clients that speak §3.6 themselves get the same guarantee on
//! their side of the proxy; stock clients need no change.
//!
//! - [`journal`]: segments, metadata, crash recovery (no async);
//! - `accept`: one task per client; `forward`: one task per journal;
//! - [`control`]: pause/resume (reference commands, HTTP endpoint);
//! - [`ProxyConfig`]: settings, validated before anything starts.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use proxy::{Proxy, ProxyConfig};
//!
//! let mut config = ProxyConfig::new("/var/spool/streamgauge", "collector.example:3003");
//! config.listen = vec!["127.0.0.1:3005".parse()?];
//! let proxy = Proxy::start(config).await?;
//! println!("status: {}", proxy.status());
//! tokio::signal::ctrl_c().await?;
//! proxy.shutdown().await; // journals stay; the next start resumes them
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod accept;
pub mod config;
pub mod control;
mod forward;
pub mod framer;
pub mod journal;
mod proxy;
mod registry;
pub mod run;
mod status;

pub use config::{parse_bytes, ForwardMode, FsyncPolicy, ProxyConfig, QuotaPolicy};
pub use control::Command;
pub use proxy::{Proxy, ProxyError, ProxyHandle};
pub use registry::RegistryError;
