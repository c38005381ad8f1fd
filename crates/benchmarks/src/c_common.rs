//! What the C benchmarks (`bench c-inject`, `bench c-observer`) share:
//! compiling a C program of `crates/client-ffi/bench` against our liboml2
//! and the reference one and a `streamgauge server` in another process
//! (both from `observe::liboml2`, which the observe runner's C flavours
//! use too), and the key=value lines the programs print.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};

/// Where the two libraries are (`None`: the defaults below): the flags
/// `bench c-inject` and `bench c-observer` share.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Libraries {
    /// Directory holding our liboml2.so [default: the directory of this
    /// executable, where `cargo build --release -p client-ffi` puts it]
    #[arg(long, value_name = "DIR")]
    pub lib_dir: Option<PathBuf>,
    /// Our <oml2/omlc.h> include directory [default: crates/client-ffi/include
    /// of the source tree this executable was built from]
    #[arg(long, value_name = "DIR")]
    pub include: Option<PathBuf>,
    /// Installation prefix of the reference OML suite (include/oml2,
    /// lib/liboml2.so) [default: ~/.cache/oml-reference]
    #[arg(long, value_name = "DIR")]
    pub reference: Option<PathBuf>,
    /// Measure our library alone.
    #[arg(long)]
    pub no_reference: bool,
}

pub use observe::liboml2::{compile, Lib};

impl Libraries {
    /// Ours, then the reference unless `--no-reference`. Our library is
    /// linked through symlinks in `tmp` (see [`Lib::ours`]).
    pub(crate) fn libs(&self, tmp: &Path) -> Result<Vec<Lib>> {
        let dir = match &self.lib_dir {
            Some(d) => d.clone(),
            None => std::env::current_exe()?
                .parent()
                .context("executable directory")?
                .to_path_buf(),
        };
        let mut libs = vec![Lib::ours(&dir, self.include.as_deref(), tmp)
            .context("our liboml2 (give --lib-dir)")?];
        if !self.no_reference {
            let prefix = self
                .reference
                .clone()
                .unwrap_or_else(observe::liboml2::default_reference);
            libs.push(Lib::reference(&prefix).context("give --reference, or pass --no-reference")?);
        }
        Ok(libs)
    }
}

/// Runs a benchmark program; returns its standard output (standard error,
/// the library's log, is discarded unless it fails).
pub fn run(exe: &Path, args: &[String], cwd: &Path) -> Result<String> {
    let mut cmd = Command::new(exe);
    cmd.args(args).current_dir(cwd);
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("OML_")) {
        cmd.env_remove(k);
    }
    let out = cmd
        .output()
        .with_context(|| format!("running {}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(10).collect();
        bail!(
            "{} {} failed ({}):\n{stdout}{}",
            exe.display(),
            args.join(" "),
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    Ok(stdout)
}

/// The key=value pairs of every line starting with `tag`, in order.
pub fn fields(stdout: &str, tag: &str) -> Vec<HashMap<String, String>> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix(tag))
        .map(|rest| {
            rest.split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect()
        })
        .collect()
}

/// A number from [`fields`].
pub fn num(f: &HashMap<String, String>, key: &str) -> Result<f64> {
    f.get(key)
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("no number {key}= in the program's output"))
}

/// `streamgauge server` in a child process, SQLite in `data_dir`, on a
/// free loopback port; stopped with SIGTERM on drop. The executable is the
/// running one: these benchmarks run inside the `streamgauge` binary.
pub struct ServerProc(observe::liboml2::ServerProc);

impl ServerProc {
    pub fn start(data_dir: &Path) -> Result<ServerProc> {
        let exe = std::env::current_exe()?;
        Ok(ServerProc(observe::liboml2::ServerProc::start(
            &exe,
            data_dir,
            |cmd| cmd.spawn(),
        )?))
    }

    /// CPU seconds (user + system) the server process has used so far.
    pub fn cpu_secs(&self) -> Option<f64> {
        proc_cpu_secs(&format!("/proc/{}/stat", self.0.pid()))
    }

    /// `--oml-collect` for this server.
    pub fn uri(&self) -> String {
        format!("tcp://{}", self.0.addr)
    }
}

/// User + system seconds from a Linux `/proc/.../stat` file.
fn proc_cpu_secs(path: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(path).ok()?;
    // Fields after the parenthesised name: state is the first, utime the
    // 12th and stime the 13th. Clock ticks are 100 per second on Linux.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// Rows of `table` in `db` once they reach `want` or stop growing for 10 s.
pub fn wait_rows(db: &Path, table: &str, want: u64) -> u64 {
    observe::liboml2::wait_rows(db, table, want, Duration::from_secs(10))
}

/// Median and range of `v`.
pub fn stats(v: &[f64]) -> (f64, f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let med = if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    };
    (med, s[0], s[n - 1])
}
