//! The steps after `observe run`: `analyze` and `report` are the Python
//! package `streamgauge.observe` (scipy, statsmodels, matplotlib), run as
//! `python -m streamgauge.observe` once it is known to import; the
//! listing of a plan's runs that `observe run --check` prints; and the
//! replications a plan's `[power]` goal needs.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::plan::{PowerGoal, MIN_REPLICATIONS};
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
    /// Factors within whose level combinations the permutation ANOVA
    /// permutes (`None`: every factor but the treatment; empty: none).
    pub strata: Option<Vec<String>>,
    /// Multiplicity adjustment of the per-cell verdicts: `holm` or `fdr_bh`.
    pub adjust: String,
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
        match &self.strata {
            None => {}
            Some(s) if s.is_empty() => argv.push("--strata=none".into()),
            Some(s) => argv.push(format!("--strata={}", s.join(","))),
        }
        argv.push(format!("--adjust={}", self.adjust));
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

/// Runs per treatment for which the verdict's per-cell comparison (a
/// two-sided t-test of the level against the baseline at alpha / cells,
/// the first step of Holm's procedure) detects `goal.effect` with
/// probability `goal.power` when the within-cell standard deviation is
/// `goal.cv` times the mean: Guenther's approximation of the noncentral-t
/// sample size (Guenther 1981, The American Statistician 35(4) 243),
/// n = 2 (z_a + z_b)^2 / d^2 + z_a^2 / 4 with d = effect / cv, rounded up.
/// Over effects of 2-50 %, noises of 1-30 %, 1-12 cells and powers 0.8
/// and 0.9 it equals the exact figure of `python3 -m streamgauge.observe
/// plan` in 9 cases of 10 and is one run lower in the others, so a plan
/// refused here cannot reach its goal.
pub fn replications_for(goal: &PowerGoal, cells: u32) -> u32 {
    let za = normal_quantile(1.0 - goal.alpha / (2.0 * f64::from(cells.max(1))));
    let zb = normal_quantile(goal.power);
    let d = goal.effect.abs() / goal.cv;
    let n = 2.0 * (za + zb).powi(2) / (d * d) + za * za / 4.0;
    if n >= f64::from(u32::MAX) {
        return u32::MAX;
    }
    // n is positive and below u32::MAX here.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let n = n.ceil() as u32;
    n.max(MIN_REPLICATIONS)
}

/// The standard normal distribution function, by Simpson's rule on the
/// density from 0 to |x| (error below 1e-10 for the 4000 panels used).
fn normal_cdf(x: f64) -> f64 {
    const PANELS: u32 = 4000;
    let a = x.abs().min(40.0);
    let h = a / f64::from(PANELS);
    let phi = |t: f64| (-0.5 * t * t).exp() / (2.0 * std::f64::consts::PI).sqrt();
    let mut sum = phi(0.0) + phi(a);
    for i in 1..PANELS {
        sum += phi(f64::from(i) * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    let half = sum * h / 3.0;
    if x < 0.0 {
        0.5 - half
    } else {
        0.5 + half
    }
}

/// The p-quantile of the standard normal distribution (bisection).
fn normal_quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0_f64, 40.0_f64);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if normal_cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn goal(effect: f64, cv: f64) -> PowerGoal {
        PowerGoal {
            effect,
            cv,
            power: 0.8,
            alpha: 0.05,
        }
    }

    #[test]
    fn normal_quantiles() {
        assert!((normal_quantile(0.975) - 1.959_963_985).abs() < 1e-8);
        assert!((normal_quantile(0.8) - 0.841_621_234).abs() < 1e-8);
        assert!((normal_quantile(0.5)).abs() < 1e-12);
        assert!((normal_cdf(-1.0) - 0.158_655_254).abs() < 1e-9);
    }

    #[test]
    fn replications_match_cohens_table() {
        // Cohen (1988), Table 2.4.1, two-sided alpha 0.05, power 0.8:
        // d = 0.8 -> 26, d = 0.5 -> 64 per group; d = 0.2 -> 393 in the
        // table, 394 by the exact noncentral t.
        assert_eq!(replications_for(&goal(0.8, 1.0), 1), 26);
        assert_eq!(replications_for(&goal(0.5, 1.0), 1), 64);
        assert_eq!(replications_for(&goal(-0.2, 1.0), 1), 394);
        // more cells, a stricter per-cell level, more runs; never below the minimum
        assert!(replications_for(&goal(0.5, 1.0), 6) > 64);
        assert_eq!(replications_for(&goal(0.5, 0.01), 1), MIN_REPLICATIONS);
    }
}
