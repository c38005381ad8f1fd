//! Legacy measurement tools as injection points (`streamgauge wrap`).
//!
//! Each wrapper runs the tool with its own arguments, copies its output
//! through unchanged, turns what it prints into measurement streams, records
//! the tool's version and command line as experiment metadata, and returns
//! the tool's exit status for the caller to exit with. The destination comes
//! from the `--oml-*` options (anywhere in the tool's arguments for [`ping`]
//! and [`iperf3`]; before `--` for [`run`]), the `OML_*` variables or
//! `--oml-config`, exactly as for an instrumented application. Reference:
//! docs/wrap.md.
//!
//! ```no_run
//! // `streamgauge wrap ping -c 3 ::1 --oml-collect file:-`
//! let args: Vec<String> = ["-c", "3", "::1", "--oml-collect", "file:-"]
//!     .map(String::from)
//!     .to_vec();
//! let status = wrap::ping::run(&args)?;
//! std::process::exit(status);
//! # Ok::<(), anyhow::Error>(())
//! ```

#![deny(missing_docs)]

pub mod iperf3;
pub mod ping;
pub mod run;
mod session;
