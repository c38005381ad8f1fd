//! `streamgauge anonymize --key KEYFILE [ADDR…]`: Crypto-PAn over addresses
//! given as arguments or one per line on standard input.

use std::io::BufRead;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

pub const LONG_ABOUT: &str = "\
Anonymise IPv4 and IPv6 addresses with Crypto-PAn (prefix-preserving: two
addresses sharing a k-bit prefix still share one afterwards), with the same
key and result as the capture sessions' anonymisation, so addresses noted
elsewhere can be matched to anonymised captures.

Addresses come from the arguments, or else one per line on standard input;
each result is printed on its own line (IPv6 in RFC 5952 form), blank input
lines stay blank. A line that is not an address is reported on standard
error with its line number and printed as an empty line, and the others are
still processed.

The key file holds 32 bytes, raw or as 64 hex digits (an optional newline
after them): the first 16 are the AES-128 key, the last 16 the pad.

Exit codes: 0 every line converted; 1 some lines were not addresses; 2 the
key could not be read.";

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
