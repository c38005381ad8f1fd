//! `streamgauge wrap`: legacy tools as injection points.
//!
//! Each wrapper runs the tool with its own arguments, copies its output
//! through unchanged, turns what it prints into measurement streams, records
//! the tool's version and command line as experiment metadata, and exits
//! with the tool's exit status. The destination comes from the `--oml-*`
//! options (anywhere in the tool's arguments for `ping` and `iperf3`;
//! before `--` for `run`), the `OML_*` variables or `--oml-config`, exactly
//! as for an instrumented application. Reference: docs/wrap.md. The
//! wrappers themselves are the `wrap` library; this is their clap glue.

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
    Ping(PingArgs),
    /// Run iperf3 (client or server, TCP or UDP): its JSON intervals into `iperf3_interval`, its totals into `iperf3_summary`.
    Iperf3(Iperf3Args),
    /// Run any command and record its output lines through a regular expression, CSV or JSON lines.
    Run(RunArgs),
}

/// Arguments of `wrap ping`.
#[derive(Debug, Args)]
#[command(disable_help_flag = true, disable_version_flag = true)]
pub struct PingArgs {
    /// ping's own arguments, passed through, with any `--oml-*` options
    /// (removed before ping sees them).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PING_ARGS"
    )]
    args: Vec<String>,
}

/// Arguments of `wrap iperf3`.
#[derive(Debug, Args)]
#[command(disable_help_flag = true, disable_version_flag = true)]
pub struct Iperf3Args {
    /// iperf3's own arguments, passed through (`--json` is added unless
    /// `--json`, `-J` or `--json-stream` is given), with any `--oml-*`
    /// options (removed before iperf3 sees them).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "IPERF3_ARGS"
    )]
    args: Vec<String>,
}

/// Arguments of `wrap run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The stream's fields: `"name:type name:type ..."` (OML types: int32,
    /// uint32, int64, uint64, double, string, bool, blob, guid, [double]...).
    #[arg(long, value_name = "SCHEMA")]
    schema: String,
    /// A regular expression whose named groups `(?P<field>...)` give the
    /// fields; lines that do not match are skipped. Fields without a group
    /// of their name are left at their zero value.
    #[arg(long, value_name = "REGEX", conflicts_with_all = ["csv", "jsonl"])]
    regex: Option<String>,
    /// Read comma-separated values: columns map to the fields by a header
    /// line naming them, else in schema order. No quoting.
    #[arg(long)]
    csv: bool,
    /// The CSV separator.
    #[arg(long, value_name = "CHAR", default_value = ",", requires = "csv")]
    delimiter: char,
    /// Read one JSON object per line: keys name the fields.
    #[arg(long, conflicts_with = "csv")]
    jsonl: bool,
    /// Measurement point name (the table is `<app>_<mp>`).
    #[arg(long, value_name = "NAME", default_value = "line")]
    mp: String,
    /// Application name; default: the command's name with characters that
    /// are not `[A-Za-z0-9_]` replaced by `_`.
    #[arg(long, value_name = "NAME")]
    app: Option<String>,
    /// Read the command's standard error instead of its standard output.
    #[arg(long)]
    stderr: bool,
    /// The flag printing the command's version, recorded as metadata
    /// (`tool_version`); `none` to skip.
    #[arg(long, value_name = "FLAG", default_value = "--version")]
    version_flag: String,
    /// `--oml-*` options (after the options above), then `--`, then the
    /// command and its arguments.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        required = true,
        value_name = "[--oml-* ...] -- COMMAND ARGS"
    )]
    rest: Vec<String>,
}

impl RunArgs {
    fn options(&self) -> ::wrap::run::Options {
        ::wrap::run::Options {
            schema: self.schema.clone(),
            regex: self.regex.clone(),
            csv: self.csv,
            delimiter: self.delimiter,
            jsonl: self.jsonl,
            mp: self.mp.clone(),
            app: self.app.clone(),
            stderr: self.stderr,
            version_flag: self.version_flag.clone(),
            rest: self.rest.clone(),
        }
    }
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
        Tool::Ping(x) => ::wrap::ping::run(&x.args)?,
        Tool::Iperf3(x) => ::wrap::iperf3::run(&x.args)?,
        Tool::Run(x) => ::wrap::run::run(&x.options())?,
    };
    std::process::exit(code);
}
