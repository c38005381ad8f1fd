//! In-line IPv6 measurement agent.
//!
//! The source program (tc egress) inserts a Destination Options header with
//! a one-way-delay and/or loss option into the packets selected by a
//! five-tuple filter and sampling settings; the sink program (tc ingress,
//! or XDP with [`SinkHook::Xdp`]) records each measured packet into a ring
//! buffer and removes the header.
//! This crate loads and attaches those programs ([`Agent`]), changes their
//! settings at run time ([`ProgramMaps`], also from another process),
//! decodes their records ([`Measurement`]) and summarises them per flow
//! ([`Summaries`]). Option layouts: `spec/inline.md`.
//!
//! ```no_run
//! use inline::{Agent, LoadOptions, Role, Settings};
//! let mut settings = Settings::default();
//! settings.set_all(["dst=2001:db8::/64", "proto=udp", "sample=10"])?;
//! let mut sink = Agent::start("eth0", Role::Sink, &settings, LoadOptions::default())?;
//! sink.read_records(|m| println!("{} seq={:?} delay={:?}", m.flow, m.seq, m.delay_ns()))?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod agent;
mod calibration;
pub mod control;
mod error;
pub mod loss;
mod maps;
pub mod netns;
mod program;
mod reader;
mod record;
pub mod run;
pub mod settings;
mod streams;
mod summary;
mod tcx;
pub mod testrun;
mod xdp;

pub use agent::Agent;
pub use calibration::{Calibration, CalibrationProgram};
pub use control::{AgentCounters, AgentInfo, Control, ControlConfig};
pub use error::{ProgramError, SettingsError};
pub use inline_common::Counter;
pub use maps::{clock_offset_ns, Counters, ProgramMaps, RunStats};
pub use program::{
    detach_stale, ifindex, query, Attached, LoadOptions, Role, SinkHook, SINK_XDP_PROGRAM,
    TC_HANDLE, TC_PRIORITY,
};
pub use reader::POLL as POLL_INTERVAL;
pub use record::{Flow, Measurement, NtpTime, NTP_UNIX_OFFSET};
pub use settings::{Mode, Prefix, Sampling, Settings};
pub use streams::Streams;
pub use summary::{FlowSummary, Summaries};
