//! What one `omlc_inject` costs a C program, with our liboml2 and the
//! reference liboml2 in the same run (`streamgauge bench c-inject`).

use anyhow::{ensure, Context, Result};
use std::fmt::Write as _;

use crate::c_common::{self, Lib, Libraries, ServerProc};
use crate::c_core;

/// Where the samples go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// A `streamgauge server` in another process.
    Tcp,
    /// A file.
    File,
}

/// The sample encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Encoding {
    /// `--oml-binary`.
    Binary,
    /// `--oml-text`.
    Text,
}

/// How the program injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Bursts with pauses between them: what the application pays per call.
    Burst,
    /// Back to back: the end-to-end rate once the queue is full.
    Sustained,
}

/// What to measure: the flags of `streamgauge bench c-inject`.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Runs of each library per configuration, alternating.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub rounds: usize,
    /// Injecting threads (comma-separated list).
    #[arg(
        long,
        value_name = "N,..",
        value_delimiter = ',',
        default_value = "1,2,4"
    )]
    pub threads: Vec<u32>,
    /// Targets (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "tcp,file")]
    pub targets: Vec<Target>,
    /// Encodings (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "binary,text")]
    pub encodings: Vec<Encoding>,
    /// Modes (comma-separated).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "burst,sustained"
    )]
    pub modes: Vec<Mode>,
    /// Bursts per thread and run.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub bursts: u32,
    /// Injects per burst.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub burst_size: u32,
    /// Microseconds between bursts.
    #[arg(long, value_name = "US", default_value_t = 5000)]
    pub pause_us: u32,
    /// Milliseconds of a sustained run.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub millis: u32,
    /// Where the two libraries are.
    #[command(flatten)]
    pub libs: Libraries,
}

/// One configuration's runs.
struct Row {
    label: String,
    /// Per library (in `libs` order), then the Rust core: each run's
    /// median ns per inject.
    runs: Vec<Vec<f64>>,
}

/// Runs the benchmark, printing one line per configuration; false if our
/// library reported a failed inject.
pub fn run(args: &Options) -> Result<bool> {
    ensure!(args.rounds > 0, "--rounds must be at least 1");
    ensure!(
        args.threads.iter().all(|&t| (1..=64).contains(&t)),
        "--threads: 1 to 64"
    );
    let tmp = tempfile::tempdir().context("creating a temporary directory")?;
    let libs = args.libs.libs(tmp.path())?;
    let source = include_str!("../../client-ffi/bench/inject_bench.c");
    let exes = libs
        .iter()
        .map(|l| c_common::compile("inject_bench", source, l, tmp.path()))
        .collect::<Result<Vec<_>>>()?;
    let server = if args.targets.contains(&Target::Tcp) {
        Some(ServerProc::start(tmp.path())?)
    } else {
        None
    };
    println!("{}", header(&libs));
    let mut ok = true;
    let mut n = 0;
    for &target in &args.targets {
        for &enc in &args.encodings {
            for &mode in &args.modes {
                for &threads in &args.threads {
                    let label = format!(
                        "{:<4} {:<6} {:<9} {threads}",
                        format!("{target:?}").to_lowercase(),
                        format!("{enc:?}").to_lowercase(),
                        format!("{mode:?}").to_lowercase()
                    );
                    let mut row = Row {
                        label,
                        runs: vec![Vec::new(); libs.len() + 1],
                    };
                    for _ in 0..args.rounds {
                        n += 1;
                        let dest = match &server {
                            Some(s) if target == Target::Tcp => s.uri(),
                            _ => format!("file:{}", tmp.path().join(format!("f{n}")).display()),
                        };
                        let oml = argv(args, &dest, enc, mode, threads, n);
                        // The first 7 arguments are the --oml-* options.
                        row.runs[libs.len()]
                            .push(c_core::run(&plan(args, mode, threads), &oml[..7])?);
                        let _ = std::fs::remove_file(tmp.path().join(format!("f{n}")));
                        for (i, (lib, exe)) in libs.iter().zip(&exes).enumerate() {
                            n += 1;
                            let dest = match &server {
                                Some(s) if target == Target::Tcp => s.uri(),
                                _ => format!("file:{}", tmp.path().join(format!("f{n}")).display()),
                            };
                            let argv = argv(args, &dest, enc, mode, threads, n);
                            let out = match c_common::run(exe, &argv, tmp.path()) {
                                Ok(out) => out,
                                // The reference is not thread-safe (spec §11
                                // defect 26): with several threads it can
                                // abort. Its column then shows NaN.
                                Err(e) if lib.name == "reference" => {
                                    let why = e.to_string();
                                    let last = why.lines().last().unwrap_or("");
                                    eprintln!("{}: the reference failed: {last}", row.label);
                                    continue;
                                }
                                Err(e) => return Err(e),
                            };
                            let f = c_common::fields(&out, "result ");
                            let f = f.first().context("no result line")?;
                            if lib.name == "streamgauge" && c_common::num(f, "failures")? != 0.0 {
                                eprintln!("{}: omlc_inject failed", row.label);
                                ok = false;
                            }
                            row.runs[i].push(c_common::num(f, "median")?);
                            // Runs leave files behind; keep the disk small.
                            let _ = std::fs::remove_file(tmp.path().join(format!("f{n}")));
                        }
                    }
                    println!("{}", line(&row));
                }
            }
        }
    }
    drop(server);
    println!(
        "\nns per inject: median of {} runs each [min–max of the runs]; the Rust core runs \
         the same loop in this process with Mp::inject",
        args.rounds
    );
    Ok(ok)
}

fn argv(
    args: &Options,
    dest: &str,
    enc: Encoding,
    mode: Mode,
    threads: u32,
    n: usize,
) -> Vec<String> {
    let mode = match mode {
        Mode::Burst => "burst",
        Mode::Sustained => "sustained",
    };
    let enc = match enc {
        Encoding::Binary => "--oml-binary",
        Encoding::Text => "--oml-text",
    };
    [
        "--oml-collect",
        dest,
        enc,
        "--oml-domain",
        "cinject",
        "--oml-id",
        &format!("run{n}"),
        "--threads",
        &threads.to_string(),
        "--mode",
        mode,
        "--bursts",
        &args.bursts.to_string(),
        "--burst-size",
        &args.burst_size.to_string(),
        "--pause-us",
        &args.pause_us.to_string(),
        "--millis",
        &args.millis.to_string(),
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

fn plan(args: &Options, mode: Mode, threads: u32) -> c_core::Plan {
    c_core::Plan {
        threads,
        sustained: mode == Mode::Sustained,
        bursts: args.bursts,
        burst_size: args.burst_size,
        pause: std::time::Duration::from_micros(args.pause_us.into()),
        length: std::time::Duration::from_millis(args.millis.into()),
    }
}

fn header(libs: &[Lib]) -> String {
    let mut h = "tgt  enc    mode      thr".to_owned();
    for l in libs {
        let _ = write!(h, " {:>26}", format!("C, {} liboml2", l.name));
    }
    let _ = write!(h, " {:>26}  ours/core", "Rust core (Mp::inject)");
    if libs.len() > 1 {
        h.push_str("  ref/ours");
    }
    h
}

fn line(row: &Row) -> String {
    let mut out = row.label.clone();
    let mut meds = Vec::new();
    for runs in &row.runs {
        let (med, lo, hi) = c_common::stats(runs);
        meds.push(med);
        let _ = write!(out, " {med:>9.1} [{lo:>6.1}–{hi:>7.1}]");
    }
    let core = meds[meds.len() - 1];
    let _ = write!(out, "  {:>9.2}", meds[0] / core);
    if meds.len() > 2 {
        let _ = write!(out, "  {:>8.1}", meds[1] / meds[0]);
    }
    out
}
