//! `streamgauge capture`: the passive capture daemon, its offline mode over
//! a capture file, and `capture ctl`, the client of its control API.

pub mod anonymize;
mod ctl;
mod daemon;
mod offline;

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, Subcommand};

pub use ctl::CtlArgs;

pub const LONG_ABOUT: &str = include_str!("../../help/capture.txt");

/// Arguments of `streamgauge capture`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct CaptureArgs {
    /// Run the daemon with this configuration file (TOML, see the description).
    #[arg(short = 'c', long, value_name = "FILE", conflicts_with = "read")]
    pub config: Option<PathBuf>,
    /// Offline mode: read this pcap or pcapng file instead of an interface.
    #[arg(short = 'r', long, value_name = "FILE", requires = "session")]
    pub read: Option<PathBuf>,
    /// A session configuration (JSON, or TOML by its .toml extension) for --read; repeat for several.
    #[arg(short = 's', long, value_name = "FILE")]
    pub session: Vec<PathBuf>,
    /// Where --read writes the sessions' files (<out>/<session>/) [default: current directory].
    #[arg(short = 'o', long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Anonymisation key for --read sessions, as NAME=FILE (32 raw bytes or 64 hex digits); repeat for several.
    #[arg(short = 'k', long, value_name = "NAME=FILE")]
    pub key: Vec<String>,
    /// Log level for the daemon: error, warn, info, debug [default: info].
    #[arg(long, value_name = "LEVEL", default_value = "info")]
    pub log_level: tracing::Level,
    /// Talk to a running daemon.
    #[command(subcommand)]
    pub command: Option<CaptureCommand>,
}

/// Subcommands of `streamgauge capture`.
#[derive(Debug, Subcommand)]
pub enum CaptureCommand {
    /// Control a running capture daemon over its HTTP API.
    #[command(long_about = ctl::LONG_ABOUT)]
    Ctl(CtlArgs),
}

/// Runs the chosen mode.
pub fn run(args: &CaptureArgs) -> Result<bool> {
    match (&args.command, &args.config, &args.read) {
        (Some(CaptureCommand::Ctl(c)), _, _) => ctl::run(c),
        (None, Some(cfg), None) => daemon::run(cfg, args.log_level),
        (None, None, Some(input)) => offline::run(input, &args.session, args.out.as_deref(), &args.key),
        _ => bail!(
            "give --config FILE (daemon), --read FILE --session S.json (offline) or `ctl` (see --help)"
        ),
    }
}
