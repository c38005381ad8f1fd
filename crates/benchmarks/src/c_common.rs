//! What the C benchmarks (`bench c-inject`, `bench c-observer`) share:
//! compiling a C program of `crates/client-ffi/bench` against our liboml2
//! and the reference one, a `streamgauge server` in another process, and
//! the key=value lines the programs print.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};

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

/// One liboml2 to build against.
#[derive(Debug, Clone)]
pub struct Lib {
    /// `streamgauge` or `reference`.
    pub name: &'static str,
    include: PathBuf,
    lib: PathBuf,
}

impl Libraries {
    /// Ours, then the reference unless `--no-reference`. Our library is
    /// linked through symlinks in `tmp` (programs NEED the SONAME
    /// liboml2.so.9, which cargo does not create).
    pub(crate) fn libs(&self, tmp: &Path) -> Result<Vec<Lib>> {
        let dir = match &self.lib_dir {
            Some(d) => d.clone(),
            None => std::env::current_exe()?
                .parent()
                .context("executable directory")?
                .to_path_buf(),
        };
        let so = dir.join("liboml2.so");
        ensure!(
            so.exists(),
            "{} not found: build it with `cargo build --release -p client-ffi` or give --lib-dir",
            so.display()
        );
        let link = tmp.join("ours-lib");
        std::fs::create_dir_all(&link)?;
        for name in ["liboml2.so", "liboml2.so.9"] {
            std::os::unix::fs::symlink(&so, link.join(name))?;
        }
        let mut libs = vec![Lib {
            name: "streamgauge",
            include: self.include.clone().unwrap_or_else(|| {
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../client-ffi/include")
            }),
            lib: link,
        }];
        if !self.no_reference {
            let prefix = match &self.reference {
                Some(p) => p.clone(),
                None => PathBuf::from(std::env::var("HOME").unwrap_or_default())
                    .join(".cache/oml-reference"),
            };
            ensure!(
                prefix.join("lib/liboml2.so").exists(),
                "reference liboml2 not found under {} (build it with the script in \
                 shared/reference, give --reference, or pass --no-reference)",
                prefix.display()
            );
            libs.push(Lib {
                name: "reference",
                include: prefix.join("include"),
                lib: prefix.join("lib"),
            });
        }
        Ok(libs)
    }
}

/// Writes `source` as `dir/<stem>.c` and compiles it (C99, -O2, every
/// warning an error) against `lib`; returns the executable.
pub fn compile(stem: &str, source: &str, lib: &Lib, dir: &Path) -> Result<PathBuf> {
    let src = dir.join(format!("{stem}.c"));
    std::fs::write(&src, source)?;
    let exe = dir.join(format!("{stem}-{}", lib.name));
    let out = Command::new("cc")
        .args(["-O2", "-std=c99", "-D_POSIX_C_SOURCE=200809L", "-pthread"])
        .args(["-Wall", "-Wextra", "-Werror", "-pedantic"])
        .arg("-I")
        .arg(&lib.include)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(&lib.lib)
        .arg("-loml2")
        .arg(format!("-Wl,-rpath,{}", lib.lib.display()))
        .output()
        .context("running cc (a C compiler is needed)")?;
    ensure!(
        out.status.success(),
        "compiling {stem}.c against the {} liboml2 failed:\n{}",
        lib.name,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(exe)
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
pub struct ServerProc {
    child: Child,
    /// The listening address.
    pub addr: SocketAddr,
}

impl ServerProc {
    pub fn start(data_dir: &Path) -> Result<ServerProc> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let child = Command::new(std::env::current_exe()?)
            .args(["server", "--bind", "127.0.0.1", "--timeout", "0"])
            .arg("--listen")
            .arg(port.to_string())
            .arg("--data-dir")
            .arg(data_dir)
            .args(["--debug-level", "-1", "--logfile"])
            .arg(data_dir.join("server.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .context("starting `streamgauge server`")?;
        let mut server = ServerProc {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(server.addr).is_err() {
            if let Some(status) = server.child.try_wait()? {
                bail!("`streamgauge server` exited at start ({status})");
            }
            ensure!(
                Instant::now() < deadline,
                "the server did not listen in 20 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(server)
    }

    /// CPU seconds (user + system) the server process has used so far.
    pub fn cpu_secs(&self) -> Option<f64> {
        proc_cpu_secs(&format!("/proc/{}/stat", self.child.id()))
    }

    /// `--oml-collect` for this server.
    pub fn uri(&self) -> String {
        format!("tcp://{}", self.addr)
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        // SIGTERM: the server commits and closes its databases.
        let term = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        if !term.is_ok_and(|s| s.success()) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
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
    let count = || {
        rusqlite::Connection::open(db)
            .and_then(|c| c.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0)))
            .unwrap_or(0u64)
    };
    let (mut last, mut since) = (0, Instant::now());
    loop {
        let got = count();
        if got >= want || since.elapsed() > Duration::from_secs(10) {
            return got;
        }
        if got != last {
            (last, since) = (got, Instant::now());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
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
