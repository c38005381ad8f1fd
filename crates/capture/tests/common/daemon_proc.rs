//! The capture daemon as a separate process that can be SIGKILLed: the
//! test binary re-runs itself as `child_daemon` (each test file using this
//! declares that test and calls [`child_main`]), which runs
//! `capture::daemon::run_until_signal`, the function behind
//! `streamgauge capture --config`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// Environment variable naming the child's configuration file.
pub const CHILD_ENV: &str = "CAPTURE_DAEMON_CHILD_CONFIG";

/// Body of the `child_daemon` test: the daemon on the configuration named
/// in the environment; returns at once in a normal test run.
pub fn child_main() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let text = std::fs::read_to_string(path).unwrap();
    let cfg = capture::daemon::DaemonConfig::from_toml(&text).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(capture::daemon::run_until_signal(cfg, |addr| {
        println!("LISTENING {addr}");
    }))
    .unwrap();
}

/// A daemon process; killed on drop if still running.
pub struct DaemonProc {
    /// The process.
    pub child: Child,
    /// Kept open so the child never writes into a closed pipe.
    _out: BufReader<ChildStdout>,
    /// Control API address.
    pub addr: String,
}

impl DaemonProc {
    /// Starts the daemon on `config` and waits until it listens.
    pub fn start(config: &Path) -> DaemonProc {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_daemon", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, config)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let addr = loop {
            line.clear();
            assert!(out.read_line(&mut line).unwrap() > 0, "daemon exited early");
            // The harness prints "test child_daemon ... " on the same line.
            if let Some((_, a)) = line.trim().split_once("LISTENING ") {
                break a.to_string();
            }
        };
        DaemonProc {
            child,
            _out: out,
            addr,
        }
    }

    /// Sends a signal (`-KILL`, `-TERM`, ...).
    pub fn signal(&self, sig: &str) {
        let s = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(s.success());
    }

    /// SIGKILL and reap.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM; asserts a clean exit within `secs`.
    pub fn terminate(mut self, secs: u64) {
        self.signal("-TERM");
        let t0 = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                assert!(st.success(), "daemon exit status {st}");
                return;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(secs),
                "daemon did not exit after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for DaemonProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `ok` every 20 ms until it holds; fails after `secs`.
pub fn wait_for(what: &str, secs: u64, mut ok: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !ok() {
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
