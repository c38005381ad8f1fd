//! `streamgauge inline`: in-line IPv6 measurement (source, sink, ctl, bench).

#[cfg(feature = "bench")]
mod bench;
mod ctl;
mod run;

use anyhow::Result;
use clap::{Args, Subcommand};

/// Arguments of `streamgauge inline`.
#[derive(Debug, Args)]
pub struct InlineArgs {
    #[command(subcommand)]
    which: Which,
}

#[derive(Debug, Subcommand)]
enum Which {
    /// Insert measurement headers into matching packets leaving an interface (tc egress).
    #[command(long_about = run::SOURCE_ABOUT)]
    Source(run::RunArgs),
    /// Record and remove measurement headers of packets arriving on an interface (tc ingress) and stream the records.
    #[command(long_about = run::SINK_ABOUT)]
    Sink(run::RunArgs),
    /// Show or change the settings and counters of a running source or sink.
    Ctl(ctl::CtlArgs),
    /// Small-packet UDP rate with and without instrumentation, in namespaces, in the same run.
    #[cfg(feature = "bench")]
    Bench(bench::BenchArgs),
}

/// Run `streamgauge inline ...`.
pub fn run(args: &InlineArgs) -> Result<bool> {
    match &args.which {
        Which::Source(a) => run::run(a, inline::Role::Source),
        Which::Sink(a) => run::run(a, inline::Role::Sink),
        Which::Ctl(a) => ctl::run(a),
        #[cfg(feature = "bench")]
        Which::Bench(a) => bench::run(a),
    }
}

/// Help text listing every settings key (from the one definition in the library).
pub fn keys_help() -> String {
    let mut s = String::from("Settings keys (--set KEY=VALUE, config file, ctl set):\n");
    for (k, h) in inline::settings::KEYS {
        s.push_str(&format!("  {k:<16} {h}\n"));
    }
    s
}
