//! `streamgauge capture --read FILE --session S.json …`: sessions over a
//! capture file, with a summary.

use std::path::{Path, PathBuf};

use anyhow::Result;

/// Runs the sessions over `input` and prints one line per session.
pub fn run(
    input: &Path,
    sessions: &[PathBuf],
    out: Option<&Path>,
    keys: &[String],
) -> Result<bool> {
    let summary = ::capture::offline_files::run_files(input, sessions, out, keys)?;
    print!("{}", summary.report(input));
    Ok(true)
}
