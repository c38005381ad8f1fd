//! The collection server under test, in a process of its own, so that its
//! resident memory, descriptors and log lines are its own and not the
//! attackers'. The benchmark binary starts itself again with `--serve`.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};

/// The argument that makes the benchmark binary serve instead of measure.
pub const SERVE_FLAG: &str = "--serve";

/// Environment variable through which the parent sets the served server's
/// `header_nice` (`--header-nice`).
pub const HEADER_NICE_ENV: &str = "BENCH_HOSTILE_HEADER_NICE";

/// How often the server's resident memory is sampled.
const RSS_EVERY: Duration = Duration::from_millis(50);

/// Runs the collection server with its default limits (but
/// `max_connections`, if given) on loopback (OMSP
/// and `--http`), storing into `dir`, until standard input closes. Prints
/// `omsp=ADDR http=ADDR` on standard output once listening; logs to
/// standard error as `streamgauge server` does.
pub fn serve(dir: &Path, max_connections: Option<usize>) -> Result<()> {
    tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    // As `streamgauge server` builds it: an idle thread hands back what
    // it freed (`server::trim`).
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    let idle = ::server::trim::IdleCollect::install(&mut builder);
    let runtime = builder.build().context("starting the async runtime")?;
    idle.start(&runtime);
    let mut config = ::server::ServerConfig::new(dir);
    config.listen = vec![SocketAddr::from(([127, 0, 0, 1], 0))];
    config.http_listen = Some(SocketAddr::from(([127, 0, 0, 1], 0)));
    if let Some(n) = max_connections {
        config.max_connections = n;
    }
    if let Some(n) = std::env::var(HEADER_NICE_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
    {
        config.header_nice = n;
    }
    let server = runtime.block_on(::server::Server::start(config))?;
    let http = server.http_addr().context("no HTTP address")?;
    println!("omsp={} http={http}", server.local_addrs()[0]);
    std::io::stdout().flush()?;
    // The parent closes our standard input to stop us.
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line)? > 0 {
        line.clear();
    }
    runtime.block_on(server.shutdown());
    Ok(())
}

/// The server process, watched from outside.
pub struct ServerProcess {
    /// The process.
    child: Child,
    /// Closed to stop it.
    stdin: Option<ChildStdin>,
    /// OMSP address.
    pub omsp: SocketAddr,
    /// HTTP address (`--http`).
    pub http: SocketAddr,
    /// Lines written to its log so far.
    log_lines: Arc<AtomicU64>,
    /// Largest resident memory seen since [`ServerProcess::reset_peak`].
    peak: Arc<AtomicU64>,
    /// Stops the memory sampler.
    stop: Arc<AtomicBool>,
    /// The last log lines, for errors.
    tail: Arc<Mutex<Vec<String>>>,
}

impl ServerProcess {
    /// Starts this binary with [`SERVE_FLAG`] on `dir`; its log is counted
    /// and, if `log` is given, copied there. `max_connections` replaces the
    /// server's default (4096).
    pub fn start(
        dir: &Path,
        log: Option<PathBuf>,
        max_connections: Option<usize>,
    ) -> Result<ServerProcess> {
        let exe = std::env::current_exe().context("finding this benchmark's executable")?;
        let mut command = Command::new(exe);
        command.arg(SERVE_FLAG).arg(dir);
        if let Some(n) = max_connections {
            command.arg(n.to_string());
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting the server process")?;
        let stdout = child.stdout.take().context("server stdout")?;
        let stderr = child.stderr.take().context("server stderr")?;
        let log_lines = Arc::new(AtomicU64::new(0));
        let tail = Arc::new(Mutex::new(Vec::new()));
        let (lines, last) = (Arc::clone(&log_lines), Arc::clone(&tail));
        std::thread::spawn(move || {
            let mut copy = log.and_then(|p| std::fs::File::create(p).ok());
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                lines.fetch_add(1, Ordering::Relaxed);
                if let Some(f) = &mut copy {
                    let _ = writeln!(f, "{line}");
                }
                if let Ok(mut t) = last.lock() {
                    if t.len() >= 20 {
                        t.remove(0);
                    }
                    t.push(line);
                }
            }
        });
        let mut first = String::new();
        BufReader::new(stdout).read_line(&mut first)?;
        let addr = |key: &str| -> Result<SocketAddr> {
            first
                .split_whitespace()
                .find_map(|w| w.strip_prefix(key))
                .with_context(|| format!("server did not start: {first:?}"))?
                .parse()
                .context("server address")
        };
        let (omsp, http) = match (addr("omsp="), addr("http=")) {
            (Ok(o), Ok(h)) => (o, h),
            (Err(e), _) | (_, Err(e)) => {
                let _ = child.kill();
                let _ = child.wait();
                bail!(
                    "{e:#}; log: {:?}",
                    tail.lock().map(|t| t.clone()).unwrap_or_default()
                );
            }
        };
        let peak = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (pid, peak2, stop2) = (child.id(), Arc::clone(&peak), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                if let Some(rss) = rss_of(pid) {
                    peak2.fetch_max(rss, Ordering::Relaxed);
                }
                std::thread::sleep(RSS_EVERY);
            }
        });
        let stdin = child.stdin.take();
        Ok(ServerProcess {
            child,
            stdin,
            omsp,
            http,
            log_lines,
            peak,
            stop,
            tail,
        })
    }

    /// Process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Resident memory now, in bytes.
    pub fn rss(&self) -> u64 {
        rss_of(self.child.id()).unwrap_or(0)
    }

    /// Largest resident memory since the last reset.
    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed).max(self.rss())
    }

    /// Starts a new peak from now.
    pub fn reset_peak(&self) {
        self.peak.store(self.rss(), Ordering::Relaxed);
    }

    /// Open descriptors now.
    pub fn fds(&self) -> u64 {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .map(|d| d.count() as u64)
            .unwrap_or(0)
    }

    /// Threads now.
    pub fn threads(&self) -> u64 {
        status_field(self.child.id(), "Threads:").unwrap_or(0)
    }

    /// Log lines written so far.
    pub fn log_lines(&self) -> u64 {
        self.log_lines.load(Ordering::Relaxed)
    }

    /// The last log lines (for error messages).
    pub fn last_lines(&self) -> Vec<String> {
        self.tail.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Stops the server (it commits and closes its databases) and waits.
    pub fn stop(mut self) -> Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        drop(self.stdin.take());
        let status = self.child.wait()?;
        if !status.success() {
            bail!("server exited with {status}");
        }
        Ok(())
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if self.stdin.take().is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `VmRSS` of process `pid`, in bytes.
fn rss_of(pid: u32) -> Option<u64> {
    Some(status_field(pid, "VmRSS:")? * 1024)
}

/// The number in the line of `/proc/PID/status` that starts with `key`
/// (kB for sizes).
fn status_field(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}
