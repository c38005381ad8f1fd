//! `streamgauge wrap`: legacy tools as injection points.
//!
//! Each wrapper runs the tool with its own arguments, copies its output
//! through unchanged, turns what it prints into measurement streams, records
//! the tool's version and command line as experiment metadata, and exits
//! with the tool's exit status. The destination comes from the `--oml-*`
//! options (anywhere in the tool's arguments for `ping` and `iperf3`;
//! before `--` for `run`), the `OML_*` variables or `--oml-config`, exactly
//! as for an instrumented application. Reference: docs/wrap.md.

mod iperf3;
mod ping;
mod run;
mod session;

use clap::{Args, Subcommand};

/// Arguments of `streamgauge wrap`.
#[derive(Debug, Args)]
pub struct WrapArgs {
    #[command(subcommand)]
    tool: Tool,
}

#[derive(Debug, Subcommand)]
enum Tool {
    /// Run iputils ping: every reply into `ping_rtt`, the summary into `ping_summary`.
    Ping(ping::PingArgs),
    /// Run iperf3 (client or server, TCP or UDP): its JSON intervals into `iperf3_interval`, its totals into `iperf3_summary`.
    Iperf3(iperf3::Iperf3Args),
    /// Run any command and record its output lines through a regular expression, CSV or JSON lines.
    Run(run::RunArgs),
}

/// Long help of `streamgauge wrap`.
pub const LONG_ABOUT: &str = "Run a legacy tool and record its output as measurement streams.\n\n\
The tool's own arguments are passed through and its output is copied unchanged; \
its version and command line are recorded as experiment metadata; the exit status \
is the tool's. `--oml-*` options (e.g. `--oml-collect tcp://host:3003`, \
`--oml-domain exp1`, `--oml-config file.xml`) choose the destination, as for any \
OML application; they are removed before the tool sees its arguments.";

/// Runs the wrapper and exits with the tool's status (or returns an error
/// before the tool was started).
pub fn run(a: &WrapArgs) -> anyhow::Result<bool> {
    let code = match &a.tool {
        Tool::Ping(x) => ping::run(x)?,
        Tool::Iperf3(x) => iperf3::run(x)?,
        Tool::Run(x) => run::run(x)?,
    };
    std::process::exit(code);
}
