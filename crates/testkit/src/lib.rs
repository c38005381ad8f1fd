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

/// A loopback port nothing listens on (TCP or UDP), for a server a test
/// starts or restarts on a port it chooses (a child process, or one that
/// must come back on the same address). Taken from below the kernel's
/// ephemeral range: in that range a port released after a probe may be
/// handed at once to another test's `bind(0)` or outgoing connection (in
/// this process or in a test binary running beside it), or sit in
/// TIME-WAIT after a burst of closed connections, which a program binding
/// without SO_REUSEADDR (the reference oml2-server) is refused. Below it,
/// only tests choosing ports this way compete: the search starts at a
/// random place, and one process is never given the same port twice.
pub fn free_port() -> u16 {
    use std::collections::hash_map::RandomState;
    use std::hash::BuildHasher;
    use std::sync::Mutex;
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let span = ephemeral_low() - FREE_PORT_LOW;
    // RandomState's keys are random per process (and per call).
    let start = (RandomState::new().hash_one(std::process::id()) % u64::from(span)) as u32;
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    let port = (0..span)
        .map(|i| (FREE_PORT_LOW + (start + i) % span) as u16)
        .find(|&p| {
            !given.contains(&p)
                && std::net::TcpListener::bind(("127.0.0.1", p)).is_ok()
                && std::net::UdpSocket::bind(("127.0.0.1", p)).is_ok()
        })
        .expect("a free loopback port below the ephemeral range");
    given.push(port);
    port
}

/// The lowest port [`free_port`] gives.
const FREE_PORT_LOW: u32 = 10_000;

/// The first port of the kernel's ephemeral range (32768 unless
/// configured otherwise), at least `FREE_PORT_LOW + 1`.
fn ephemeral_low() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768)
        .max(FREE_PORT_LOW + 1)
}

/// [`free_port`] on 127.0.0.1.
pub fn free_addr() -> std::net::SocketAddr {
    std::net::SocketAddr::from(([127, 0, 0, 1], free_port()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_below_the_ephemeral_range_and_never_repeat() {
        let ports: Vec<u16> = (0..50).map(|_| free_port()).collect();
        let mut unique = ports.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), ports.len(), "{ports:?}");
        let range = FREE_PORT_LOW..ephemeral_low();
        assert!(
            ports.iter().all(|&p| range.contains(&u32::from(p))),
            "{ports:?}"
        );
    }

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
