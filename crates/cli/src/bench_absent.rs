//! `streamgauge bench` in a build without the `bench` feature: the
//! benchmark harnesses (the `benchmarks` library) start throwaway
//! PostgreSQL clusters and reference servers, test infrastructure that a
//! production or packaged binary (`cargo build -p streamgauge
//! --no-default-features`) leaves out. The subcommand stays, to say why it
//! cannot run and how to get it.

use anyhow::{bail, Result};
use clap::Args;

/// Arguments of `streamgauge bench` (accepted and ignored in this build).
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    rest: Vec<String>,
}

/// Explains that this build has no benchmarks.
pub fn run(_: &BenchArgs) -> Result<bool> {
    bail!(
        "this streamgauge was built without the benchmarks (the `bench` \
         feature); rebuild with `cargo build --release -p streamgauge \
         --features bench`, or use a default build"
    )
}
