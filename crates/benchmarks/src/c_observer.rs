//! The observer effect of liboml2 on a C UDP sender reporting every packet
//! to a server in another process (`streamgauge bench c-observer`).

use anyhow::{ensure, Context, Result};

use crate::c_common::{self, Lib, Libraries, ServerProc};

/// What to measure: the flags of `streamgauge bench c-observer`.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Seconds per round.
    #[arg(long, value_name = "S", default_value_t = 3.0)]
    pub seconds: f64,
    /// Rounds of each kind (uninstrumented, instrumented), alternating.
    #[arg(long, value_name = "N", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,
    /// UDP payload bytes (8 to 65000).
    #[arg(long, value_name = "BYTES", default_value_t = 64,
          value_parser = clap::value_parser!(u32).range(8..=65_000))]
    pub size: u32,
    /// Where the two libraries are.
    #[command(flatten)]
    pub libs: Libraries,
}

/// One library's run.
struct Outcome {
    plain: Vec<f64>,
    instrumented: Vec<f64>,
    reported: u64,
    stored: u64,
    /// CPU seconds per thread of the C program, then the server process.
    cpu: Vec<(String, f64)>,
}

/// Runs the benchmark, printing each library's results; false if our
/// library lost a reported packet.
pub fn run(args: &Options) -> Result<bool> {
    ensure!(args.seconds > 0.0, "--seconds must be positive");
    let tmp = tempfile::tempdir().context("creating a temporary directory")?;
    let libs = args.libs.libs(tmp.path())?;
    let source = include_str!("../../client-ffi/bench/udp_observer.c");
    println!(
        "observer effect: C UDP sender, {} B over loopback, {} s rounds, every packet reported \
         to a streamgauge server in another process\n",
        args.size, args.seconds
    );
    let mut ok = true;
    for lib in &libs {
        let o = run_lib(args, lib, tmp.path(), source)?;
        let (plain, pl, ph) = c_common::stats(&o.plain);
        let (instr, il, ih) = c_common::stats(&o.instrumented);
        let ratio = instr / plain;
        let lossless = o.stored == o.reported;
        println!(
            "{:<11} plain {plain:>9.0} pkt/s [{pl:.0}–{ph:.0}]  instrumented {instr:>9.0} pkt/s \
             [{il:.0}–{ih:.0}]  ratio {ratio:.3}\n{:<11} reported {} stored {}{}",
            lib.name,
            "",
            o.reported,
            o.stored,
            if lossless { " (all)" } else { " (LOSS)" }
        );
        println!(
            "{:<11} CPU per reported packet (whole run, both kinds of round):",
            ""
        );
        for (name, secs) in &o.cpu {
            println!(
                "{:<13}{name:<18} {secs:>7.2} s  {:>7.0} ns",
                "",
                secs * 1e9 / o.reported.max(1) as f64
            );
        }
        if lib.name == "streamgauge" {
            ok &= lossless;
            println!("{:<11} wanted: ratio >= 0.95, every report stored", "");
        }
    }
    Ok(ok)
}

fn run_lib(args: &Options, lib: &Lib, tmp: &std::path::Path, source: &str) -> Result<Outcome> {
    let exe = c_common::compile("udp_observer", source, lib, tmp)?;
    let data = tmp.join(format!("db-{}", lib.name));
    std::fs::create_dir_all(&data)?;
    let server = ServerProc::start(&data)?;
    let argv: Vec<String> = [
        "--oml-collect",
        &server.uri(),
        "--oml-domain",
        "cobserver",
        "--oml-id",
        "sender",
        "--rounds",
        &args.rounds.to_string(),
        "--size",
        &args.size.to_string(),
        "--millis",
        &((args.seconds * 1000.0).round() as u64).to_string(),
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    eprintln!(
        "{}: {} rounds of {} s …",
        lib.name,
        2 * args.rounds,
        args.seconds
    );
    let out = c_common::run(&exe, &argv, tmp)?;
    let mut o = Outcome {
        plain: Vec::new(),
        instrumented: Vec::new(),
        reported: 0,
        stored: 0,
        cpu: Vec::new(),
    };
    for (i, r) in c_common::fields(&out, "round ").iter().enumerate() {
        let rate = c_common::num(r, "sent")? / c_common::num(r, "secs")?;
        let kind = r.get("kind").map(String::as_str).unwrap_or("");
        eprintln!("  round {:>2} {kind:<12} {rate:>9.0} packets/s", i + 1);
        if kind == "instrumented" {
            o.instrumented.push(rate);
        } else {
            o.plain.push(rate);
        }
    }
    o.reported = out
        .lines()
        .find_map(|l| l.strip_prefix("reported="))
        .and_then(|v| v.trim().parse().ok())
        .context("no reported= line")?;
    o.stored = c_common::wait_rows(&data.join("cobserver.sq3"), "observer_udp_tx", o.reported);
    for t in c_common::fields(&out, "cpu ") {
        if let (Some(name), Ok(secs)) = (t.get("thread"), c_common::num(&t, "secs")) {
            o.cpu.push((name.clone(), secs));
        }
    }
    if let Some(secs) = server.cpu_secs() {
        o.cpu.push(("server (process)".to_owned(), secs));
    }
    drop(server);
    Ok(o)
}
