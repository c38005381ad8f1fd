//! `bench-hostile`: collection under hostile load (see
//! `benchmarks::hostile`). Exit code 0 when every attack left the sender
//! at the wanted ratio with all rows stored and the server's memory and
//! descriptors returned; 1 when one did not; 2 on a usage or run error.
//!
//! ```text
//! bench-hostile [--quick] [--rows N] [--log FILE] [--header-nice N] [--only ATTACK]
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use benchmarks::hostile;

/// The server under test runs in a child process of this binary, with the
/// allocator of the `streamgauge` binary, so that its memory behaves as in
/// a deployment (mimalloc returns freed pages after its purge delay).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const USAGE: &str =
    "usage: bench-hostile [--quick] [--rows N] [--log FILE] [--header-nice N] [--only ATTACK]
  --quick          about a fifth of every attack, 10 s of settling (default: the full run)
  --rows N         rows the legitimate sender sends in each phase
  --log FILE       copy of the server's log
  --header-nice N  the server's priority for connections still in their header
                   (0-19, default 19; 0 serves them on the collection runtime, as
                   before, for comparison)
  --only ATTACK    run one attack (slowloris, tails, headers, malformed), without
                   the per-connection memory measurement";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(hostile::SERVE_FLAG) {
        let dir = args.get(1).map(PathBuf::from).unwrap_or_default();
        let max = args.get(2).and_then(|n| n.parse().ok());
        return match hostile::serve(&dir, max) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("server: {e:#}");
                ExitCode::from(2)
            }
        };
    }
    let mut opts = hostile::Options::full();
    let mut rows = None;
    let mut header_nice = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => opts = hostile::Options::quick(),
            "--rows" => match it.next().and_then(|n| n.parse().ok()) {
                Some(n) => rows = Some(n),
                None => return usage("--rows needs a number"),
            },
            "--header-nice" => match it.next().and_then(|n| n.parse().ok()) {
                Some(n @ 0..=19) => header_nice = Some(n),
                _ => return usage("--header-nice needs a number from 0 to 19"),
            },
            "--only" => match it.next().and_then(|a| hostile::Attack::named(a)) {
                Some(a) => opts.only = Some(a),
                None => return usage("--only needs slowloris, tails, headers or malformed"),
            },
            "--log" => match it.next() {
                Some(f) => opts.log = Some(PathBuf::from(f)),
                None => return usage("--log needs a file"),
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => return usage(&format!("unknown argument {other:?}")),
        }
    }
    if let Some(n) = rows {
        opts.rows = n;
    }
    opts.header_nice = header_nice;
    match hostile::run(&opts) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("bench-hostile: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn usage(problem: &str) -> ExitCode {
    eprintln!("bench-hostile: {problem}\n{USAGE}");
    ExitCode::from(2)
}
