//! Progress bars for long operations (export, benchmarks): on standard
//! error, and only when it is a terminal, so that scripts, pipes and CI
//! logs get the results alone.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `len` steps drawn with `template` (indicatif's syntax; `{prefix}`
/// shows `prefix`), or a hidden one when standard error is not a terminal.
pub fn bar(len: u64, template: &str, prefix: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_prefix(prefix.to_owned());
    pb
}
