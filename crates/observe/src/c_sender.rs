//! The C flavours' sender: `c/udp_sender.c`, compiled once per plan against
//! our liboml2 and the reference one ([`Programs`]), run per run as a child
//! process in the sender's namespace ([`Running`]) that reports through
//! liboml2 to the plan's collection server.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use anyhow::{bail, ensure, Context, Result};

use crate::liboml2::{self, Lib};
use crate::plan::{CFlavour, Settings};

/// The program's source.
const SOURCE: &str = include_str!("../c/udp_sender.c");

/// The sender built against each library the plan needs.
#[derive(Debug, Default)]
pub struct Programs {
    /// Built against our liboml2 (also runs the uninstrumented level, which never calls it).
    ours: Option<PathBuf>,
    /// Built against the reference liboml2.
    reference: Option<PathBuf>,
}

impl Programs {
    /// Compiles the sender in `dir` against our library (`ours`: where
    /// liboml2.so is) and, if `reference` is given, the reference one.
    pub fn build(ours: &Path, reference: Option<&Path>, dir: &Path) -> Result<Programs> {
        let lib = Lib::ours(ours, None, dir)?;
        let mut p = Programs {
            ours: Some(liboml2::compile("udp_sender", SOURCE, &lib, dir)?),
            reference: None,
        };
        if let Some(prefix) = reference {
            let lib = Lib::reference(prefix)?;
            p.reference = Some(liboml2::compile("udp_sender", SOURCE, &lib, dir)?);
        }
        Ok(p)
    }

    fn exe(&self, f: CFlavour) -> Result<&Path> {
        let exe = if f.reference {
            &self.reference
        } else {
            &self.ours
        };
        exe.as_deref()
            .context("the C sender was not built for this flavour")
    }
}

/// A started sender, waiting for the start signal.
pub struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// The 8-byte counter the program keeps its sent count in.
    counter: File,
    /// The program's standard error (the library's log): a file, so that
    /// a chatty library can never block on a full pipe.
    log: PathBuf,
    instrumented: bool,
}

/// What the program printed when it ended.
pub struct Ended {
    /// Datagrams sent.
    pub sent: u64,
    /// Injects that returned success (0 uninstrumented).
    pub reported: u64,
}

/// Starts the sender for `s` sending to `to` for `seconds`, reporting to
/// `collect` (a `tcp:host:port` URI) as application `udp_sender` of
/// `domain`; `spawn` starts it (in the sender's namespace on veth).
/// Returns once the program printed `ready`.
#[allow(clippy::too_many_arguments)]
pub fn start(
    programs: &Programs,
    f: CFlavour,
    s: &Settings,
    to: SocketAddr,
    seconds: f64,
    collect: &str,
    domain: &str,
    work: &Path,
    spawn: impl FnOnce(&mut Command) -> std::io::Result<Child>,
) -> Result<Running> {
    let counter_path = work.join("c-sent");
    std::fs::write(&counter_path, [0u8; 8]).context("creating the sent counter")?;
    let counter = File::open(&counter_path)?;
    let mut cmd = Command::new(programs.exe(f)?);
    cmd.arg("--to")
        .arg(to.ip().to_string())
        .arg("--port")
        .arg(to.port().to_string())
        .arg("--counter")
        .arg(&counter_path)
        .arg("--size")
        .arg(s.size.to_string())
        .arg("--rate")
        .arg(s.rate.unwrap_or(0).to_string())
        .arg("--threads")
        .arg(s.threads.to_string())
        .arg("--millis")
        .arg(((seconds * 1000.0).round() as u64).max(1).to_string());
    if f.instrumented {
        cmd.args(["--oml-collect", collect, "--oml-domain", domain])
            .args(["--oml-id", "sender"]);
        if f.filtered {
            cmd.args(["--oml-samples", "100"]);
        }
    } else {
        cmd.arg("--plain");
    }
    // The library's settings come from these options alone.
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("OML_")) {
        cmd.env_remove(k);
    }
    let log = work.join("c-sender.log");
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(File::create(&log).context("creating the sender's log")?);
    let mut child = spawn(&mut cmd).context("starting the C sender")?;
    let stdin = child.stdin.take();
    let stdout = BufReader::new(child.stdout.take().context("the sender's stdout")?);
    let mut r = Running {
        child,
        stdin,
        stdout,
        counter,
        log,
        instrumented: f.instrumented,
    };
    let mut line = String::new();
    r.stdout.read_line(&mut line)?;
    if line.trim() != "ready" {
        let err = r.fail();
        bail!("the C sender did not start: {err}");
    }
    Ok(r)
}

impl Running {
    /// Lets the program send (its clock starts now).
    pub fn go(&mut self) -> Result<()> {
        let mut stdin = self.stdin.take().context("started twice")?;
        stdin.write_all(b"g").context("starting the C sender")?;
        Ok(())
    }

    /// Datagrams sent so far (the program's counter).
    pub fn sent(&self) -> u64 {
        let mut b = [0u8; 8];
        match self.counter.read_exact_at(&mut b, 0) {
            // Native byte order: the program stores a uint64_t.
            Ok(()) => u64::from_ne_bytes(b),
            Err(_) => 0,
        }
    }

    /// Waits for the program to end (the library closed: every report
    /// sent) and reads what it printed.
    pub fn finish(mut self) -> Result<Ended> {
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut rest)?;
        let status = self.child.wait()?;
        if !status.success() {
            bail!("the C sender failed ({status}): {}", self.log_tail());
        }
        let field = |key: &str| -> Result<u64> {
            rest.split_whitespace()
                .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
                .with_context(|| format!("the C sender printed no {key}= ({rest:?})"))
        };
        let ended = Ended {
            sent: field("sent")?,
            reported: field("reported")?,
        };
        ensure!(
            !self.instrumented || ended.reported == ended.sent,
            "the C sender reported {} of {} datagrams",
            ended.reported,
            ended.sent
        );
        Ok(ended)
    }

    /// Kills the program and returns its log's last lines.
    fn fail(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.log_tail()
    }

    fn log_tail(&self) -> String {
        last_lines(&std::fs::read(&self.log).unwrap_or_default())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Not finished (an error elsewhere in the run): stop it.
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn last_lines(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().rev().take(6).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}
