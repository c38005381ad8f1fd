//! The reference oml2-server, measured in the same run as ours: the same
//! workload (re-encoded for its own domain) sent by the same replay to a
//! stock `oml2-server` child process, timed from the first byte to the
//! moment a separate connection sees every row. Only the count is checked:
//! the reference stores some values differently by design (its binary
//! doubles keep about 31 bits, spec §11), which is not what is measured.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use omsp::{Content, Schema};

use crate::pg::PgTarget;
use crate::replay::Replay;
use crate::workload;

/// Tuples the reference gets on PostgreSQL when not told: it stores one
/// synchronous INSERT per row (thousands of rows/s), so a full scenario
/// would take minutes and say nothing more.
pub const PG_DEFAULT_TUPLES: u64 = 20_000;

/// Where the reference `oml2-server` is, from `--reference` or the
/// default prefix that `scripts/setup.sh` builds into.
pub fn locate(prefix: Option<&Path>) -> Result<PathBuf> {
    let prefix = match prefix {
        Some(p) => p.to_owned(),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()))
            .join(".cache/oml-reference"),
    };
    let bin = prefix.join("bin/oml2-server");
    ensure!(
        bin.is_file(),
        "the reference oml2-server is not at {} (build it with \
         ../shared/reference/build-oml.sh, give --reference PREFIX, or pass --no-reference)",
        bin.display()
    );
    Ok(bin)
}

/// `(rows, rows/s)` of the reference server for one scenario.
pub fn measure(
    bin: &Path,
    pg: Option<&PgTarget>,
    schema: &Schema,
    content: Content,
    clients: usize,
    tuples: u64,
    watch: impl FnOnce(&str, &Path) -> Result<crate::server::Watch>,
) -> Result<(u64, f64)> {
    let dir = tempfile::tempdir().context("creating a temporary directory")?;
    let port = free_port()?;
    let mut server = Running::start(bin, dir.path(), port, pg)?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    server.wait_listening(addr)?;
    let start = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
    let domain = format!(
        "ref_{}_{clients}_{}_{}",
        content.name(),
        std::process::id(),
        start.subsec_nanos()
    );
    let sessions = (0..clients)
        .map(|c| {
            let n = workload::share(tuples, clients, c);
            workload::encode_session(schema, content, &domain, c, n, start.as_secs() as i64)
        })
        .collect::<Result<Vec<_>>>()?;
    let replay = Replay::connect(addr, sessions)?;
    let t0 = replay.start();
    let mut w = watch(&domain, dir.path())?;
    let waited = w.wait_for(
        tuples,
        Duration::from_secs(60),
        &indicatif::ProgressBar::hidden(),
    );
    // The reference may keep idle connections open: stop it, then collect
    // the senders (a reset after the stop is expected).
    server.stop();
    let _ = replay.join();
    drop(w);
    if let Some(pg) = pg {
        pg.drop_database(&domain);
    }
    let t1 = waited.with_context(|| {
        format!(
            "the reference oml2-server did not store all {tuples} rows (its log: {})",
            server.log_tail()
        )
    })?;
    Ok((tuples, tuples as f64 / t1.duration_since(t0).as_secs_f64()))
}

/// `<prefix>/lib` of the reference binary `<prefix>/bin/oml2-server`.
fn reference_lib(bin: &Path) -> PathBuf {
    bin.parent()
        .and_then(Path::parent)
        .map_or_else(|| PathBuf::from("/nonexistent"), |p| p.join("lib"))
}

/// The reference binds without SO_REUSEADDR: its port comes from below
/// the ephemeral range (see `testkit::free_port`).
fn free_port() -> Result<u16> {
    Ok(testkit::free_port())
}

/// The child process, killed when dropped.
struct Running {
    child: Child,
    log: PathBuf,
}

impl Running {
    fn start(bin: &Path, dir: &Path, port: u16, pg: Option<&PgTarget>) -> Result<Running> {
        let log = dir.join("oml2-server.log");
        let mut cmd = Command::new(bin);
        cmd.arg(format!("--listen={port}"))
            .arg(format!("--data-dir={}", dir.display()))
            .arg(format!("--logfile={}", log.display()))
            // Its own instrumentation writes a file into the working directory.
            .current_dir(dir)
            // Its own liboml2, never ours: `cargo test` puts the directory
            // holding our liboml2.so on LD_LIBRARY_PATH, which would win
            // over the reference binary's run path.
            .env("LD_LIBRARY_PATH", reference_lib(bin))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(pg) = pg {
            cmd.arg("--backend=postgresql")
                .arg(format!("--pg-host={}", pg.opts.host))
                .arg(format!("--pg-port={}", pg.opts.port))
                .arg(format!("--pg-user={}", pg.opts.user));
            if !pg.opts.password.is_empty() {
                cmd.arg(format!("--pg-pass={}", pg.opts.password));
            }
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        Ok(Running { child, log })
    }

    fn wait_listening(&mut self, addr: SocketAddr) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "the reference oml2-server exited ({status}) before listening: {}",
                    self.log_tail()
                );
            }
            ensure!(
                Instant::now() < deadline,
                "the reference oml2-server is not listening on {addr} after 10 s: {}",
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(5)..].join(" | ")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}
