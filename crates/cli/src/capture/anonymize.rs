//! `streamgauge anonymize --key KEYFILE [ADDR…]`: Crypto-PAn over addresses
//! given as arguments or one per line on standard input.

use std::io::BufRead;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

pub const LONG_ABOUT: &str = include_str!("../../help/capture-anonymize.txt");

/// Arguments of `streamgauge anonymize`.
#[derive(Debug, Args)]
pub struct AnonymizeArgs {
    /// The Crypto-PAn key file (32 raw bytes or 64 hex digits).
    #[arg(short = 'k', long, value_name = "KEYFILE")]
    pub key: PathBuf,
    /// Addresses to anonymise [default: one per line on standard input].
    #[arg(value_name = "ADDR")]
    pub addresses: Vec<String>,
}

/// Prints the anonymised addresses; `Ok(false)` when a line was bad.
pub fn run(args: &AnonymizeArgs) -> Result<bool> {
    let key = ::capture::Key::from_file(&args.key)
        .with_context(|| format!("key file {}", args.key.display()))?;
    let lines: Vec<String> = if args.addresses.is_empty() {
        std::io::stdin()
            .lock()
            .lines()
            .collect::<std::io::Result<_>>()
            .context("reading standard input")?
    } else {
        args.addresses.clone()
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let lines = lines.iter().map(String::as_str);
    let report = |e| eprintln!("streamgauge anonymize: {e}");
    Ok(::capture::text::anonymize_to(
        &key, lines, &mut out, report,
    )?)
}
