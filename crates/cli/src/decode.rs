//! `streamgauge decode`: OMSP to JSON lines, or text ⇄ binary conversion.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use omsp::convert::{Converter, Output};

pub const LONG_ABOUT: &str = include_str!("../help/decode.txt");

/// Arguments of `streamgauge decode`.
#[derive(Debug, Args)]
pub struct DecodeArgs {
    /// OMSP stream to read; `-` (the default) reads standard input.
    #[arg(value_name = "FILE", default_value = "-")]
    pub input: PathBuf,
    /// Re-encode as an OMSP text stream instead of printing JSON.
    #[arg(long, conflicts_with = "binary")]
    pub text: bool,
    /// Re-encode as an OMSP binary stream instead of printing JSON.
    #[arg(long)]
    pub binary: bool,
    /// Write the output here instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Do not show a progress bar (it is shown only for files on a terminal).
    #[arg(long)]
    pub no_progress: bool,
}

fn open_input(path: &PathBuf) -> Result<(Box<dyn Read>, Option<u64>)> {
    if path.as_os_str() == "-" {
        return Ok((Box::new(io::stdin().lock()), None));
    }
    let f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let len = f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
    Ok((Box::new(f), len))
}

fn progress(len: Option<u64>, disabled: bool) -> ProgressBar {
    match len {
        Some(n) if !disabled && n > 1 << 20 => {
            let pb = ProgressBar::new(n);
            pb.set_style(
                ProgressStyle::with_template(
                    "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            pb
        }
        _ => ProgressBar::hidden(),
    }
}

/// Runs the command; `Ok(false)` when the input had errors.
pub fn run(args: &DecodeArgs) -> Result<bool> {
    let (mut input, len) = open_input(&args.input)?;
    let out: Box<dyn Write> = match &args.output {
        Some(p) => {
            Box::new(File::create(p).with_context(|| format!("cannot create {}", p.display()))?)
        }
        None => Box::new(io::stdout().lock()),
    };
    let mut out = BufWriter::with_capacity(1 << 16, out);
    let mut converter = Converter::new(match (args.text, args.binary) {
        (true, _) => Output::Text,
        (_, true) => Output::Binary,
        _ => Output::Json,
    });
    let pb = progress(len, args.no_progress);
    let report = |msg: String| pb.suspend(|| eprintln!("streamgauge decode: {msg}"));
    let (mut chunk, mut converted) = (vec![0u8; 1 << 16], Vec::new());
    loop {
        converted.clear();
        let n = match input.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("read error"),
        };
        if n == 0 {
            converter.finish(&mut converted, report);
        } else {
            converter.feed(&chunk[..n], &mut converted, report);
            pb.inc(n as u64);
        }
        out.write_all(&converted).context("write error")?;
        if n == 0 {
            break;
        }
    }
    pb.finish_and_clear();
    out.flush().context("write error")?;
    let errors = converter.errors();
    if errors > 0 {
        eprintln!("streamgauge decode: {errors} error(s) in the input");
    }
    Ok(errors == 0)
}
