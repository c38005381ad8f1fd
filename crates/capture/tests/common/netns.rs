//! Network namespaces and veth pairs for the live tests: created by the
//! test, deleted by a drop guard even when the test fails, so traffic stays
//! inside namespaces the test owns.
#![allow(unsafe_code)] // geteuid(2) and setns(2) for the test's own threads

use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::{Duration, Instant};

/// True when running as root; otherwise a recorded skip (a failure under
/// CI, see `testkit`).
pub fn root_or_skip(what: &str) -> bool {
    testkit::have_root(&format!("{what}: AF_PACKET, network namespaces"))
}

/// Runs `ip ARGS`, panicking when it fails.
pub fn ip(args: &[&str]) {
    let s = Command::new("ip").args(args).status().unwrap();
    assert!(s.success(), "ip {args:?}");
}

/// Runs `cmd ARGS` inside namespace `ns` (`ip netns exec`), panicking
/// when it fails.
pub fn netns_run(ns: &str, args: &[&str]) {
    let s = Command::new("ip")
        .args(["netns", "exec", ns])
        .args(args)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(s.success(), "in {ns}: {args:?}");
}

/// Network namespaces deleted on drop.
pub struct Netns(pub Vec<String>);

impl Netns {
    /// Creates the namespaces (`ip netns add`), each owned by the guard.
    pub fn add(names: &[&str]) -> Netns {
        let mut g = Netns(Vec::new());
        for n in names {
            ip(&["netns", "add", n]);
            g.0.push(n.to_string());
        }
        g
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

/// A veth pair `x` (in `a`, address `{net}.1/24`) – `y` (in `b`, `{net}.2/24`), both up.
pub fn veth(a: &str, b: &str, x: &str, y: &str, net: &str) {
    ip(&[
        "-n", a, "link", "add", x, "type", "veth", "peer", "name", y, "netns", b,
    ]);
    ip(&["-n", a, "addr", "add", &format!("{net}.1/24"), "dev", x]);
    ip(&["-n", b, "addr", "add", &format!("{net}.2/24"), "dev", y]);
    ip(&["-n", a, "link", "set", x, "up"]);
    ip(&["-n", b, "link", "set", y, "up"]);
}

/// Two namespaces `<prefix>A<pid>`, `<prefix>B<pid>` joined by veth pairs
/// (`(x, y, "10.N.M")` each), returned with their guard.
pub fn pair(prefix: &str, links: &[(&str, &str, &str)]) -> (String, String, Netns) {
    let pid = std::process::id();
    let (a, b) = (format!("{prefix}A{pid}"), format!("{prefix}B{pid}"));
    let guard = Netns::add(&[&a, &b]);
    for (x, y, net) in links {
        veth(&a, &b, x, y, net);
    }
    (a, b, guard)
}

/// Runs `f` on a new thread inside namespace `ns` and returns its result.
pub fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = format!("/var/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(path).unwrap();
        // SAFETY: moves only this thread into the namespace.
        assert_eq!(
            unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) },
            0
        );
        f()
    })
    .join()
    .unwrap()
}

/// Pings `to` from namespace `ns` until it answers (ARP resolved, link up).
pub fn wait_reachable(ns: &str, to: &str) {
    let t0 = Instant::now();
    loop {
        let ok = Command::new("ip")
            .args(["netns", "exec", ns, "ping", "-c", "1", "-W", "1", to])
            .output()
            .unwrap()
            .status
            .success();
        if ok {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "{to} never answered from {ns}"
        );
    }
}
