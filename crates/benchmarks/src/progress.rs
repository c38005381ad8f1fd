//! Progress bars on standard error while a benchmark runs. indicatif draws
//! nothing when standard error is not a terminal, so scripts, pipes and CI
//! logs get the results alone.

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `len` steps drawn with `template` (indicatif's syntax;
/// `{prefix}` shows `prefix`).
pub fn bar(len: u64, template: &str, prefix: &str) -> ProgressBar {
    let style = ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    ProgressBar::new(len)
        .with_style(style)
        .with_prefix(prefix.to_owned())
}
