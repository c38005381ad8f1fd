//! `streamgauge bench c-inject`: its flags and help; the benchmark is
//! `benchmarks::c_inject`.

use anyhow::Result;
use benchmarks::c_inject::{Encoding, Mode, Options, Target};
use clap::{Args, ValueEnum};

use super::c_libs::LibArgs;

/// Long help of `streamgauge bench c-inject`.
pub const LONG_ABOUT: &str = include_str!("../../help/bench-c_inject.txt");

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
