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
    /// Analyse runs.csv: ANOVA, assumption checks, permutation ANOVA, Tukey HSD, bootstrap effects.
    Analyze(AnalyzeArgs),
    /// Write the HTML and/or Markdown report of an analysis.
    Report(ReportArgs),
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
            };
            analysis::python(&a.python.python, &analyze.argv())
        }
        ObserveCommand::Report(a) => {
            let argv = analysis::report_argv(&a.analysis, a.html.as_deref(), a.md.as_deref())?;
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
    let failed = ::observe::execute(&plan, &dir, true)?;
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
