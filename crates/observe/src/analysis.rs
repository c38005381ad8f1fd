//! The steps after `observe run`: `analyze` and `report` are the Python
//! package `streamgauge.observe` (scipy, statsmodels, matplotlib), run as
//! `python -m streamgauge.observe` once it is known to import; and the
//! listing of a plan's runs that `observe run --check` prints.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::Plan;

/// `observe analyze`'s settings.
#[derive(Debug, Clone)]
pub struct Analyze {
    /// runs.csv written by `observe run`.
    pub runs: PathBuf,
    /// The analysis (JSON) to write.
    pub out: PathBuf,
    /// The factor whose effect is tested (default: the plan's first).
    pub treatment: Option<String>,
    /// Its reference level (default: its first level).
    pub baseline: Option<String>,
    /// Permutations of the permutation ANOVA.
    pub permutations: u32,
    /// Bootstrap resamples.
    pub resamples: u32,
    /// Seed of the permutations and resamples.
    pub seed: u64,
}

impl Analyze {
    /// The Python module's arguments.
    pub fn argv(&self) -> Vec<String> {
        let mut argv = vec![
            "analyze".into(),
            self.runs.display().to_string(),
            "--out".into(),
            self.out.display().to_string(),
            format!("--permutations={}", self.permutations),
            format!("--resamples={}", self.resamples),
            format!("--seed={}", self.seed),
        ];
        if let Some(t) = &self.treatment {
            argv.push(format!("--treatment={t}"));
        }
        if let Some(b) = &self.baseline {
            argv.push(format!("--baseline={b}"));
        }
        argv
    }
}

/// The Python module's arguments for `observe report`: the analysis and
/// at least one of the HTML and Markdown outputs.
pub fn report_argv(analysis: &Path, html: Option<&Path>, md: Option<&Path>) -> Result<Vec<String>> {
    if html.is_none() && md.is_none() {
        bail!("give --html FILE and/or --md FILE");
    }
    let mut argv = vec!["report".into(), analysis.display().to_string()];
    for (flag, p) in [("--html", html), ("--md", md)] {
        if let Some(p) = p {
            argv.extend([flag.to_owned(), p.display().to_string()]);
        }
    }
    Ok(argv)
}

/// The plan's runs in execution order, as runs.csv lines marked
/// `planned` under its header (`observe run --check`).
pub fn planned(plan: &Plan) -> String {
    let runs = plan.runs();
    let mut out = crate::header(plan);
    out.push('\n');
    for (pos, id) in plan.order().into_iter().enumerate() {
        let r = &runs[id];
        out.push_str(&format!(
            "{id},{pos},{},planned,,{}\n",
            r.replication,
            r.levels.join(",")
        ));
    }
    out
}

/// Runs `py -m streamgauge.observe ARGV`, after checking that the package
/// and its statistics libraries import. `Ok(false)`: the output was
/// written, but a response could not be analysed (said on stderr).
pub fn python(py: &str, argv: &[String]) -> Result<bool> {
    let probe = Command::new(py)
        .args([
            "-c",
            "import streamgauge.observe, scipy, statsmodels, pandas, matplotlib",
        ])
        .output()
        .with_context(|| format!("starting {py}: install Python 3 or give --python PATH"))?;
    if !probe.status.success() {
        let err = String::from_utf8_lossy(&probe.stderr);
        let last = err.lines().last().unwrap_or("").trim();
        bail!(
            "{py} cannot import the analysis ({last}): install it with \
             `{py} -m pip install ./python scipy statsmodels pandas matplotlib` \
             from the repository (scripts/setup.sh does), or give --python PATH"
        );
    }
    let status = Command::new(py)
        .args(["-m", "streamgauge.observe"])
        .args(argv)
        .status()
        .with_context(|| format!("running {py} -m streamgauge.observe"))?;
    match status.code() {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        _ => bail!("{py} -m streamgauge.observe {} failed ({status})", argv[0]),
    }
}
