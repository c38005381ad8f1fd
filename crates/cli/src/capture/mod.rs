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

pub const LONG_ABOUT: &str = "\
Passive packet capture for many experiments at once (GIMS-like).

Daemon (--config FILE): reads each tapped interface once through an
AF_PACKET TPACKET_V3 ring and hands every packet to the sessions on it. Each
session has its own libpcap filter, sampling, snap length or header-only
cut, field selection, Crypto-PAn anonymisation, outputs (rolling
pcap/pcapng files with .json/.xml metadata, IPFIX), quota and counters.
Sessions are created, started, paused, resumed, stopped and deleted at run
time through the HTTP/JSON control API (see spec/capture-api.md and
`streamgauge capture ctl`). A token may see and control only the sessions
of the experiments its token-file line grants it 'read' on. The daemon's
configuration (TOML; unknown keys are errors) is validated before anything
starts:

    interfaces = [\"eth1\"]
    data_dir = \"/var/lib/streamgauge/capture\"
    listen = \"127.0.0.1:7300\"
    token_file = \"/etc/streamgauge/capture.tokens\"
    allowed_hosts = [\"capture1.testbed\"]  # names besides localhost, IPs
    collect = \"collector:3003\"   # counters -> table capture_counters
    [keys]
    site-2026 = \"/etc/streamgauge/site-2026.key\"
    [policy]
    header_only_forced = true
    max_snaplen = 256
    [archive]                      # optional, see docs/archive.md
    state_dir = \"/var/lib/streamgauge/archive\"
    [archive.targets.lab]
    kind = \"sftp\"                  # host, user, keys, remote_dir ...

Sessions created with ?archive=lab (ctl create --archive lab) have every
closed file and its metadata uploaded as <experiment>/<session>/<file>.

With collect, counters go to the table capture_counters and the flow
records of IPFIX outputs to capture_flow, in the session's experiment.

SIGTERM or SIGINT stop every session: buffered records are written, files
closed with valid trailers and their metadata, final counters sent.
SIGHUP re-reads the token file (a file that does not parse is refused and
the tokens in force stay). Sessions are saved in <data_dir>/.sessions/ and
restored at the next start: those that were running or paused start again
into new files, and after a crash (SIGKILL) the files left open are
truncated to their last complete record and get their metadata; the
archive queue resumes without uploading anything twice.
Needs CAP_NET_RAW.

Offline (--read FILE --session S.json ...): runs the sessions over a pcap
or pcapng file (the same pipeline, reproducibly), writes their outputs
under --out and prints a summary.

Exit codes: 0 success; 2 configuration, usage or I/O error.";

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
