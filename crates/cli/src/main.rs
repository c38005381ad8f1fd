//! The `streamgauge` command: one binary, one subcommand per component.
//!
//! Exit codes: 0 success; 1 the input had errors (what could be processed
//! was); 2 usage or I/O error (nothing useful was done).

#[cfg(feature = "bench")]
mod bench;
#[cfg(not(feature = "bench"))]
#[path = "bench_absent.rs"]
mod bench;
mod capture;
mod control;
mod decode;
mod docs;
mod export;
#[cfg(feature = "inline")]
mod inline;
#[cfg(not(feature = "inline"))]
#[path = "inline_absent.rs"]
mod inline;
mod logging;
mod manager;
mod observe;
mod progress;
mod proxy;
mod scaffold;
mod server;
mod wrap;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc frees memory allocated by another thread without taking that
/// thread's arena lock, which glibc's allocator does: the server decodes
/// tuples on its network threads and drops them on its database threads.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Measurement streams for network experiments, compatible with OML.
#[derive(Debug, Parser)]
#[command(name = "streamgauge", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Decode an OMSP stream (capture, file: output) to JSON lines, or convert it between text and binary.
    #[command(long_about = decode::LONG_ABOUT)]
    Decode(decode::DecodeArgs),
    /// Collect OMSP streams over TCP into SQLite (an oml2-server replacement).
    #[command(long_about = server::LONG_ABOUT)]
    Server(Box<server::ServerArgs>),
    /// Buffer OMSP streams in a durable journal and forward them upstream (an oml2-proxy-server replacement).
    #[command(long_about = proxy::LONG_ABOUT)]
    Proxy(proxy::ProxyArgs),
    /// Benchmark a component against the physical limit, measured in the same run.
    Bench(bench::BenchArgs),
    /// In-line IPv6 measurement: eBPF source/sink programs on tc hooks and their agent.
    Inline(inline::InlineArgs),
    /// Run a legacy tool (ping, iperf3, any command) and record its output as measurement streams.
    #[command(long_about = wrap::LONG_ABOUT)]
    Wrap(wrap::WrapArgs),
    /// Steer senders by hand: list those that accept control messages, send one (feedback).
    #[command(long_about = control::LONG_ABOUT)]
    Control(control::ControlArgs),
    /// Export measurement streams from an experiment's database to CSV, JSON lines or Parquet.
    #[command(long_about = export::LONG_ABOUT)]
    Export(export::ExportArgs),
    /// Passive packet capture: the daemon (sessions over an HTTP API), offline mode over a file, ctl.
    #[command(long_about = capture::LONG_ABOUT)]
    Capture(capture::CaptureArgs),
    /// Anonymise IP addresses with Crypto-PAn (prefix-preserving), as capture sessions do.
    #[command(long_about = capture::anonymize::LONG_ABOUT)]
    Anonymize(capture::anonymize::AnonymizeArgs),
    /// The management plane: REST API and web front end for experiments, devices, runs and live results.
    #[command(long_about = manager::LONG_ABOUT)]
    Manager(manager::ManagerArgs),
    /// Generate C (oml2-scaffold compatible), Python and Rust instrumentation from an application description.
    #[command(long_about = scaffold::LONG_ABOUT)]
    Scaffold(scaffold::ScaffoldArgs),
    /// The observer-effect toolkit: factorial experiments, their statistics and a report.
    #[command(long_about = observe::LONG_ABOUT)]
    Observe(observe::ObserveArgs),
    /// Render a plot definition to PNG, SVG or PDF, with the CSV of the plotted points beside it.
    #[command(long_about = plot::LONG_ABOUT)]
    Plot(plot::PlotArgs),
    /// Write the Markdown command reference (docs/cli) from these definitions.
    #[command(hide = true)]
    GenDocs {
        /// Folder to write one Markdown file per subcommand into.
        dir: std::path::PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Decode(args) => decode::run(&args),
        Command::Server(args) => server::run(&args),
        Command::Proxy(args) => proxy::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Inline(args) => inline::run(&args),
        Command::Wrap(args) => wrap::run(&args),
        Command::Export(args) => export::run(&args),
        Command::Control(args) => control::run(&args),
        Command::Capture(args) => capture::run(&args),
        Command::Anonymize(args) => capture::anonymize::run(&args),
        Command::Manager(args) => manager::run(&args),
        Command::Scaffold(args) => scaffold::run(&args),
        Command::Observe(args) => observe::run(&args),
        Command::Plot(args) => plot::run(&args),
        Command::GenDocs { dir } => docs::write_all(&dir).map(|()| true),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("streamgauge: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
