//! Markdown command reference generated from the clap definitions, so that
//! every flag is described once (in the code) and the docs cannot drift.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use clap::CommandFactory;

use crate::Cli;

/// Renders one subcommand as a man-style Markdown page.
pub fn page(cmd: &clap::Command, parent: &str) -> String {
    let name = format!("{parent} {}", cmd.get_name());
    let mut md = String::new();
    let about = cmd.get_about().map(|a| a.to_string()).unwrap_or_default();
    let _ = writeln!(md, "# {name}\n\n{about}\n");
    let mut usage = cmd.clone().bin_name(&name);
    let _ = writeln!(
        md,
        "## Synopsis\n\n```\n{}\n```\n",
        usage
            .render_usage()
            .to_string()
            .trim_start_matches("Usage: ")
    );
    if let Some(long) = cmd.get_long_about() {
        let _ = writeln!(md, "## Description\n\n```text\n{long}\n```\n");
    }
    let _ = writeln!(md, "## Options\n");
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        let mut spec = Vec::new();
        if let Some(s) = arg.get_short() {
            spec.push(format!("-{s}"));
        }
        if let Some(l) = arg.get_long() {
            spec.push(format!("--{l}"));
        }
        let values = arg
            .get_value_names()
            .map(|v| v.join(" "))
            .unwrap_or_default();
        let head = if spec.is_empty() {
            values
        } else if arg.get_action().takes_values() {
            format!("{} {values}", spec.join(", "))
        } else {
            spec.join(", ")
        };
        let help = arg
            .get_long_help()
            .or(arg.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        let defaults: Vec<_> = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        let _ = write!(md, "- `{head}`: {help}");
        if !defaults.is_empty() && arg.get_action().takes_values() {
            let _ = write!(md, " (default: `{}`)", defaults.join(","));
        }
        md.push('\n');
    }
    md
}

/// All visible subcommand pages (nested ones too, e.g.
/// `streamgauge-bench-server.md`), as (file name, content).
pub fn pages() -> Vec<(String, String)> {
    let mut cli = Cli::command();
    cli.build();
    let mut out = Vec::new();
    for c in visible(&cli) {
        out.push((
            format!("streamgauge-{}.md", c.get_name()),
            page(c, "streamgauge"),
        ));
        let parent = format!("streamgauge {}", c.get_name());
        for sub in visible(c) {
            out.push((
                format!("streamgauge-{}-{}.md", c.get_name(), sub.get_name()),
                page(sub, &parent),
            ));
        }
    }
    out
}

fn visible(cmd: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    cmd.get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
}

/// Writes every page into `dir`.
pub fn write_all(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (file, text) in pages() {
        let p = dir.join(file);
        std::fs::write(&p, text).with_context(|| format!("cannot write {}", p.display()))?;
    }
    Ok(())
}

/// The committed pages describe the default build: a build without a
/// feature has other pages for its subcommand (one that says how to get it).
#[cfg(all(test, feature = "inline", feature = "bench"))]
mod tests {
    /// docs/cli must be regenerated (`streamgauge gen-docs docs/cli`) when a flag changes.
    #[test]
    fn committed_docs_match_the_flag_definitions() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/cli");
        for (file, text) in super::pages() {
            let committed = std::fs::read_to_string(dir.join(&file)).unwrap_or_else(|_| {
                panic!("docs/cli/{file} missing: run `streamgauge gen-docs docs/cli`")
            });
            assert_eq!(
                committed, text,
                "docs/cli/{file} is stale: run `streamgauge gen-docs docs/cli`"
            );
        }
    }
}
