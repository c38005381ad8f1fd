//! `streamgauge bench c-inject`: its flags and help; the benchmark is
//! `benchmarks::c_inject`.

use anyhow::Result;
use benchmarks::c_inject::{Encoding, Mode, Options, Target};
use clap::{Args, ValueEnum};

use super::c_libs::LibArgs;

/// Long help of `streamgauge bench c-inject`.
pub const LONG_ABOUT: &str = "\
Measure what one omlc_inject costs a C application.

crates/client-ffi/bench/inject_bench.c, a C program written against
<oml2/omlc.h> alone, is compiled (cc -O2, -Wall -Wextra -Werror) against
our liboml2 and against the reference liboml2, and both are run in this
run. The sample is (int32, double, 16-character string). Modes:

  burst      bursts of --burst-size injects, --pause-us apart, so that the
             queue always has room: what the application pays per call.
             Each burst is timed as a whole; a run's figure is the median
             over its bursts (and threads).
  sustained  injects back to back for --millis: the end-to-end rate once
             the queue is full (encoding and I/O included).

For every target (tcp: a `streamgauge server` in another process, SQLite
in a temporary directory; file: a file in a temporary directory), encoding
(binary, text), thread count (--threads) and mode, the two libraries run
alternately --rounds times each, and so does the same loop written in Rust
against the Rust core (Mp::inject, in this process, same client options).
Printed per configuration: the median of the runs' figures in ns per
inject, their range, ours / Rust core and reference / ours.

Budget: burst, 1 thread, median <= 50 ns for binary and text.
The machine's other load moves every figure; compare ratios of one run.";

/// Where the samples go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TargetArg {
    /// A `streamgauge server` in another process.
    Tcp,
    /// A file.
    File,
}

/// The sample encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EncodingArg {
    Binary,
    Text,
}

/// How the program injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    Burst,
    Sustained,
}

/// Arguments of `streamgauge bench c-inject`.
#[derive(Debug, Args)]
pub struct CInjectArgs {
    /// Runs of each library per configuration, alternating.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub rounds: usize,
    /// Injecting threads (comma-separated list).
    #[arg(
        long,
        value_name = "N,..",
        value_delimiter = ',',
        default_value = "1,2,4"
    )]
    pub threads: Vec<u32>,
    /// Targets (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "tcp,file")]
    pub targets: Vec<TargetArg>,
    /// Encodings (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "binary,text")]
    pub encodings: Vec<EncodingArg>,
    /// Modes (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "burst,sustained")]
    pub modes: Vec<ModeArg>,
    /// Bursts per thread and run.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub bursts: u32,
    /// Injects per burst.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub burst_size: u32,
    /// Microseconds between bursts.
    #[arg(long, value_name = "US", default_value_t = 5000)]
    pub pause_us: u32,
    /// Milliseconds of a sustained run.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub millis: u32,
    #[command(flatten)]
    pub libs: LibArgs,
}

impl CInjectArgs {
    fn options(&self) -> Options {
        Options {
            rounds: self.rounds,
            threads: self.threads.clone(),
            targets: self
                .targets
                .iter()
                .map(|t| match t {
                    TargetArg::Tcp => Target::Tcp,
                    TargetArg::File => Target::File,
                })
                .collect(),
            encodings: self
                .encodings
                .iter()
                .map(|e| match e {
                    EncodingArg::Binary => Encoding::Binary,
                    EncodingArg::Text => Encoding::Text,
                })
                .collect(),
            modes: self
                .modes
                .iter()
                .map(|m| match m {
                    ModeArg::Burst => Mode::Burst,
                    ModeArg::Sustained => Mode::Sustained,
                })
                .collect(),
            bursts: self.bursts,
            burst_size: self.burst_size,
            pause_us: self.pause_us,
            millis: self.millis,
            libs: self.libs.libraries(),
        }
    }
}

/// Runs the benchmark; it prints one line per configuration.
pub fn run(args: &CInjectArgs) -> Result<bool> {
    benchmarks::c_inject::run(&args.options())
}
