//! `streamgauge observe`: the observer-effect toolkit. `run` executes a
//! factorial plan (the `observe` library crate); `analyze` and `report`
//! hand the runs to the Python package (streamgauge.observe), where scipy
//! and statsmodels do the statistics.

use std::path::PathBuf;

use ::observe::analysis::{self, Analyze};
use anyhow::Result;
use clap::{Args, Subcommand};

pub const LONG_ABOUT: &str = include_str!("../../help/observe.txt");

#[derive(Debug, Args)]
pub struct ObserveArgs {
    #[command(subcommand)]
    command: ObserveCommand,
}

#[derive(Debug, Subcommand)]
enum ObserveCommand {
    /// Execute a plan's runs (resumes an interrupted plan).
    Run(RunArgs),
    /// Analyse runs.csv: ANOVA, assumption checks, permutation ANOVA within
    /// strata, Tukey HSD or Games-Howell, effect intervals with adjusted verdicts.
    Analyze(AnalyzeArgs),
    /// Write the HTML and/or Markdown report of an analysis.
    Report(ReportArgs),
    /// Runs per cell needed to detect an effect of a given size with a
    /// wanted power (before writing a plan's `replications`).
    Plan(PowerArgs),
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The plan (TOML).
    plan: PathBuf,
    /// Folder for runs.csv and samples.csv (default: observe-<plan name>).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Validate the plan and print the run order; run nothing.
    #[arg(long)]
    check: bool,
    /// Directory holding our liboml2.so for the c-* flavours [default:
    /// this executable's directory, or $STREAMGAUGE_LIBOML2_DIR].
    #[arg(long, value_name = "DIR")]
    lib_dir: Option<PathBuf>,
    /// Prefix of the reference OML suite for the *-reference flavours
    /// [default: ~/.cache/oml-reference, or $STREAMGAUGE_OML_REFERENCE].
    #[arg(long, value_name = "DIR")]
    reference: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct AnalyzeArgs {
    /// runs.csv written by `observe run`.
    runs: PathBuf,
    /// The analysis (JSON) to write.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// The factor whose effect is tested (default: the plan's first).
    #[arg(long, value_name = "FACTOR")]
    treatment: Option<String>,
    /// Its reference level (default: its first level).
    #[arg(long, value_name = "LEVEL")]
    baseline: Option<String>,
    /// Permutations of the permutation ANOVA.
    #[arg(long, value_name = "N", default_value_t = 9999)]
    permutations: u32,
    /// Bootstrap resamples.
    #[arg(long, value_name = "N", default_value_t = 9999)]
    resamples: u32,
    /// Seed of the permutations and resamples.
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// Factors within whose level combinations the permutation ANOVA
    /// permutes, comma-separated, or `none` (default: every factor but the
    /// treatment, so that noise differing between levels of, say, the
    /// rate does not inflate the test's size).
    #[arg(long, value_name = "FACTOR,...|none")]
    strata: Option<String>,
    /// Multiplicity adjustment of the per-cell verdicts across the cells of
    /// a response: holm (family-wise error) or fdr_bh (false discovery rate).
    #[arg(long, value_name = "METHOD", default_value = "holm",
          value_parser = ["holm", "fdr_bh"])]
    adjust: String,
    #[command(flatten)]
    python: PythonArg,
}

#[derive(Debug, Args)]
struct PowerArgs {
    /// Smallest relative difference to detect (0.05 = 5 %).
    #[arg(long, value_name = "FRACTION")]
    effect: f64,
    /// Within-cell standard deviation as a fraction of the mean (the
    /// coefficient of variation a pilot run's report gives).
    #[arg(long, value_name = "FRACTION")]
    cv: f64,
    /// Wanted power.
    #[arg(long, value_name = "P", default_value_t = 0.8)]
    power: f64,
    /// Significance level, before the multiplicity adjustment.
    #[arg(long, value_name = "ALPHA", default_value_t = 0.05)]
    alpha: f64,
    /// Cells compared to the baseline per response (instrumented levels
    /// times the other factors' combinations); the level is Holm-adjusted
    /// for them.
    #[arg(long, value_name = "N", default_value_t = 1)]
    cells: u32,
    #[command(flatten)]
    python: PythonArg,
}

#[derive(Debug, Args)]
struct ReportArgs {
    /// The analysis JSON written by `observe analyze`.
    analysis: PathBuf,
    /// Write a self-contained HTML report here.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Write a Markdown report here.
    #[arg(long, value_name = "FILE")]
    md: Option<PathBuf>,
    #[command(flatten)]
    python: PythonArg,
}

#[derive(Debug, Args)]
struct PythonArg {
    /// The Python interpreter with the streamgauge package installed.
    #[arg(
        long,
        value_name = "PATH",
        env = "STREAMGAUGE_PYTHON",
        default_value = "python3"
    )]
    python: String,
}

pub fn run(args: &ObserveArgs) -> Result<bool> {
    match &args.command {
        ObserveCommand::Run(a) => run_plan(a),
        ObserveCommand::Analyze(a) => {
            let analyze = Analyze {
                runs: a.runs.clone(),
                out: a.out.clone(),
                treatment: a.treatment.clone(),
                baseline: a.baseline.clone(),
                permutations: a.permutations,
                resamples: a.resamples,
                seed: a.seed,
                strata: a.strata.as_deref().map(|s| match s {
                    "none" => Vec::new(),
                    s => s.split(',').map(|f| f.trim().to_owned()).collect(),
                }),
                adjust: a.adjust.clone(),
            };
            analysis::python(&a.python.python, &analyze.argv())
        }
        ObserveCommand::Report(a) => {
            let argv = analysis::report_argv(&a.analysis, a.html.as_deref(), a.md.as_deref())?;
            analysis::python(&a.python.python, &argv)
        }
        ObserveCommand::Plan(a) => {
            let argv = [
                "plan".to_owned(),
                format!("--effect={}", a.effect),
                format!("--cv={}", a.cv),
                format!("--power={}", a.power),
                format!("--alpha={}", a.alpha),
                format!("--cells={}", a.cells),
            ];
            analysis::python(&a.python.python, &argv)
        }
    }
}

fn run_plan(a: &RunArgs) -> Result<bool> {
    let plan = ::observe::Plan::load(&a.plan)?;
    if a.check {
        print!("{}", analysis::planned(&plan));
        return Ok(true);
    }
    let dir = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("observe-{}", plan.name)));
    let mut tools = ::observe::Tools::from_env()?;
    if let Some(d) = &a.lib_dir {
        tools.lib_dir = d.clone();
    }
    if let Some(r) = &a.reference {
        tools.reference = r.clone();
    }
    let failed = ::observe::execute_with(&plan, &dir, true, &tools)?;
    let csv = dir.join("runs.csv");
    eprintln!(
        "observe: {} runs in {} ({failed} failed); next: streamgauge observe analyze {} --out {}",
        plan.runs().len(),
        csv.display(),
        csv.display(),
        dir.join("analysis.json").display()
    );
    Ok(failed == 0)
}
