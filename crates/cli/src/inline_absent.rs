//! `streamgauge inline` in a build without the `inline` feature: the
//! in-line eBPF programs need clang and the libbpf headers to build, so a
//! user who wants only the server, proxy or exports can leave them out
//! (`cargo build -p streamgauge --no-default-features`). The subcommand
//! stays, to say why it cannot run and how to get it.

use anyhow::{bail, Result};
use clap::Args;

/// Arguments of `streamgauge inline` (accepted and ignored in this build).
#[derive(Debug, Args)]
pub struct InlineArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    rest: Vec<String>,
}

/// Explains that this build has no in-line measurement.
pub fn run(_: &InlineArgs) -> Result<bool> {
    bail!(
        "this streamgauge was built without in-line measurement (the `inline` \
         feature, which needs clang and the libbpf headers); rebuild with \
         `cargo build --release -p streamgauge --features inline`, or use a \
         default build"
    )
}
