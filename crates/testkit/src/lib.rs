//! Test support shared by the workspace's test suites.
//!
//! A test that needs a tool the machine lacks (ping, tshark, a reference
//! build, root) must never pass by returning early without a trace:
//!
//! - under `CI` (set by the CI runner; `scripts/setup.sh` installs every
//!   tool there) a missing tool is a broken set-up, and the test fails;
//! - elsewhere the test is skipped, says so on standard error, and appends
//!   one line to the file named by `STREAMGAUGE_SKIP_LOG`, which
//!   `scripts/test.sh` sets and lists in its summary.
//!
//! ```no_run
//! if !testkit::have_tool("tshark", &["--version"], "apt install tshark") {
//!     return;
//! }
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Environment variable naming the file that collects skipped tests.
pub const SKIP_LOG: &str = "STREAMGAUGE_SKIP_LOG";

/// True when running under CI (`CI` set to anything but empty or `false`).
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Records that the current test is skipped because of `reason`; panics
/// (fails the test) under CI. The caller returns right after.
pub fn skip(reason: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("<unnamed test>")
        .to_owned();
    if in_ci() {
        panic!("{test}: {reason} (CI is set: scripts/setup.sh installs what tests need, so this is a broken set-up)");
    }
    eprintln!("SKIPPED {test}: {reason}");
    if let Some(path) = std::env::var_os(SKIP_LOG) {
        let crate_name = std::env::var("CARGO_CRATE_NAME").unwrap_or_default();
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{crate_name} {test}: {reason}");
        }
    }
}

/// True if `tool args…` runs and exits successfully; otherwise records a
/// skip (see [`skip`]) naming `install` as the remedy, and returns false.
pub fn have_tool(tool: &str, args: &[&str], install: &str) -> bool {
    let ok = Command::new(tool)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        skip(&format!("{tool} is not installed ({install})"));
    }
    ok
}

/// True if this process runs as root; otherwise records a skip.
pub fn have_root(why: &str) -> bool {
    // /proc/self/status: `Uid: real effective saved fs`.
    let root = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|v| v.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false);
    if !root {
        skip(&format!("needs root ({why})"));
    }
    root
}

/// The reference OML suite's install prefix (stock liboml2, oml2-server,
/// oml2-proxy-server, oml2-scaffold), built once per test process by
/// `../shared/reference/build-oml.sh` (which builds only when needed and
/// prints the prefix). `None` is a recorded skip (a failure under CI) when
/// the fixture is absent; a build failure fails the test.
pub fn oml_reference() -> Option<&'static Path> {
    static PREFIX: OnceLock<Option<PathBuf>> = OnceLock::new();
    let prefix = PREFIX
        .get_or_init(|| {
            let script = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../../shared/reference/build-oml.sh");
            if !script.exists() {
                return None;
            }
            let out = Command::new("bash")
                .arg(&script)
                .output()
                .expect("run bash");
            assert!(
                out.status.success(),
                "{} failed:\n{}",
                script.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            let text = String::from_utf8_lossy(&out.stdout);
            text.lines().last().map(|l| PathBuf::from(l.trim()))
        })
        .as_deref();
    if prefix.is_none() {
        skip("the reference OML suite (../shared/reference/build-oml.sh) is missing");
    }
    prefix
}

/// A free loopback port for a program that binds without SO_REUSEADDR
/// (the reference oml2-server and oml2-proxy-server), below the kernel's
/// ephemeral range. In that range any port may sit in TIME-WAIT after a
/// burst of closed outgoing connections (other tests open tens of
/// thousands), which such a program is refused while a probe with std's
/// listener, which sets SO_REUSEADDR, calls it free. Below it no outgoing
/// connection takes a local port. Starts at an offset from the process id
/// so that parallel test processes rarely probe the same ports.
pub fn stock_port() -> u16 {
    const LOW: u32 = 10_000;
    let high = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768)
        .max(LOW + 1);
    let span = high - LOW;
    let start = std::process::id().wrapping_mul(7919) % span;
    (0..span)
        .map(|i| (LOW + (start + i) % span) as u16)
        .find(|&p| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok())
        .expect("a free loopback port below the ephemeral range")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_present_tool_is_found_and_nothing_is_logged() {
        assert!(have_tool("true", &[], "coreutils"));
    }

    #[test]
    fn a_missing_tool_skips_or_fails_under_ci() {
        let r = std::panic::catch_unwind(|| have_tool("no-such-tool-streamgauge", &[], "nowhere"));
        match r {
            Ok(found) => {
                assert!(!in_ci(), "must fail under CI");
                assert!(!found);
            }
            Err(_) => assert!(in_ci(), "must only fail under CI"),
        }
    }
}
