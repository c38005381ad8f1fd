//! Live capture at the packet generator's maximum against tcpdump on the
//! same traffic in the same run (`streamgauge bench capture`; the
//! measurement itself is `capture::daemon::bench`).

use anyhow::{ensure, Context, Result};

/// Runs every case for `seconds` per case and frame size, printing one
/// line per run. Needs root (network namespaces, AF_PACKET).
pub fn run(seconds: u64) -> Result<()> {
    ensure!(
        nix::unistd::geteuid().is_root(),
        "bench capture needs root (network namespaces, AF_PACKET)"
    );
    let work = tempfile::tempdir().context("creating a temporary directory")?;
    ::capture::daemon::bench::run_all(seconds.max(1), work.path()).context("capture benchmark")?;
    Ok(())
}
