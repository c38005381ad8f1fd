//! The observer-effect runner behind `streamgauge observe run`: a
//! factorial plan (TOML) validated before anything runs ([`Plan`]), its
//! runs executed in a seeded random order ([`execute`]) with a real UDP
//! workload — over loopback, or between two network namespaces joined by a
//! veth pair with our in-line agent and a capture session on the path —
//! and responses measured independently of the instrumented tool (an
//! uninstrumented receiver socket, the receiving interface's kernel
//! counter). Besides the Rust client, the sender can be a C program
//! reporting through liboml2 (ours or the reference one, built by
//! [`liboml2`]) or iperf3, plain or under `streamgauge wrap iperf3`, both
//! reporting to a collection server in the sender's namespace.
//! The statistics are the Python package `streamgauge.observe`;
//! docs/observer-effect.md describes the method and publishes our study.
//!
//! ```no_run
//! let plan = observe::Plan::load("examples/observe/client.toml".as_ref())?;
//! let failed = observe::execute(&plan, "obs".as_ref(), true)?;
//! println!("{} runs, {failed} failed: obs/runs.csv", plan.runs().len());
//! # Ok::<(), anyhow::Error>(())
//! ```
//!
//! Feature `inline` (off by default; the `streamgauge` binary's own
//! `inline` feature turns it on) builds the in-line agent's factor; without
//! it a plan naming an in-line level is refused and nothing here needs the
//! eBPF toolchain.
#![deny(missing_docs)]

pub mod analysis;
mod c_sender;
mod capture_session;
mod components;
#[cfg(feature = "inline")]
mod inline_agent;
mod interrupt;
mod iperf3;
pub mod liboml2;
pub mod plan;
mod run;
mod udp;
mod veth;

pub use plan::{Plan, RunSpec, Settings};
pub use run::{execute, execute_with, header, Tools};
