//! The benchmark's two namespaces, where their work runs (placement), and
//! per-CPU busy time.

use std::process::Command;

use anyhow::{bail, Context, Result};
use nix::sched::{sched_setaffinity, CpuSet};
use nix::unistd::Pid;

/// Sender-side namespace's interface and address.
pub const SRC_IF: &str = "sg0";
/// Receiver-side namespace's interface and address.
pub const DST_IF: &str = "sg1";
pub const SRC_ADDR: &str = "fd00::1";
pub const DST_ADDR: &str = "fd00::2";
/// The CPU of the sender (and, as on its host, of the source program).
pub const SEND_CPU: usize = 0;
/// The CPU of the receiver (and, with [`Placement::Split`], of the sink
/// and the receive path).
pub const RECV_CPU: usize = 1;

/// Where the receive side's kernel work runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// The veth delivers on the sender's CPU: sender, source, sink and the
    /// receive path share CPU 0 (the receiving application is on CPU 1).
    SameCore,
    /// Receive packet steering sends the receive path (tc ingress sink
    /// included) to CPU 1, as a second host would run it. At XDP, the sink
    /// runs in the veth's NAPI poll, made a thread pinned to CPU 1.
    Split,
}

impl Placement {
    pub fn name(self) -> &'static str {
        match self {
            Placement::SameCore => "same-core",
            Placement::Split => "split",
        }
    }
}

pub fn ip(args: &[&str]) -> Result<()> {
    let st = Command::new("ip")
        .args(args)
        .status()
        .context("running ip")?;
    if !st.success() {
        bail!("ip {args:?} failed");
    }
    Ok(())
}

/// Run `sh -c script` inside namespace `ns` (its own /sys, as `ip netns
/// exec` mounts it).
fn sh_in(ns: &str, script: &str) -> Result<()> {
    let st = Command::new("ip")
        .args(["netns", "exec", ns, "sh", "-c", script])
        .status()
        .context("running ip netns exec")?;
    if !st.success() {
        bail!("in {ns}: {script} failed");
    }
    Ok(())
}

/// Two namespaces joined by a veth pair; removed on drop.
pub struct Pair {
    pub src: String,
    pub dst: String,
}

impl Pair {
    pub fn new() -> Result<Pair> {
        let id = std::process::id();
        let p = Pair {
            src: format!("sgb{id}-src"),
            dst: format!("sgb{id}-dst"),
        };
        ip(&["netns", "add", &p.src])?;
        ip(&["netns", "add", &p.dst])?;
        ip(&[
            "link", "add", SRC_IF, "netns", &p.src, "type", "veth", "peer", "name", DST_IF,
            "netns", &p.dst,
        ])?;
        for (ns, dev, addr) in [(&p.src, SRC_IF, SRC_ADDR), (&p.dst, DST_IF, DST_ADDR)] {
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            let cidr = format!("{addr}/64");
            ip(&["-n", ns, "-6", "addr", "add", &cidr, "dev", dev, "nodad"])?;
        }
        // Full-size TCP segments must still fit with our largest header
        // (32 bytes), in every phase alike.
        ip(&[
            "-n",
            &p.src,
            "-6",
            "route",
            "change",
            "fd00::/64",
            "dev",
            SRC_IF,
            "proto",
            "kernel",
            "metric",
            "256",
            "mtu",
            "1468",
        ])?;
        Ok(p)
    }

    /// Steer the receive path for `placement`.
    pub fn place(&self, placement: Placement) -> Result<()> {
        let mask = match placement {
            Placement::SameCore => 0,
            Placement::Split => 1 << RECV_CPU,
        };
        sh_in(
            &self.dst,
            &format!("echo {mask:x} > /sys/class/net/{DST_IF}/queues/rx-0/rps_cpus"),
        )?;
        if placement == Placement::SameCore {
            // Back to NAPI in softirq on the sending CPU ([`Pair::pin_napi`]
            // made it a thread); fails harmlessly while there is no NAPI.
            let _ = sh_in(
                &self.dst,
                &format!("{{ echo 0 > /sys/class/net/{DST_IF}/threaded; }} 2>/dev/null"),
            );
        }
        Ok(())
    }

    /// With an XDP program attached the veth polls with NAPI, on the CPU
    /// that sent the packet: make its NAPI a thread (possible only now that
    /// it exists) and pin the receiving veth's NAPI threads (named
    /// `napi/sg1-ID`) to the receiving CPU. Returns how many were pinned.
    /// Other namespaces' `sg1` NAPI threads would be pinned too: harmless,
    /// and there are none unless another XDP test runs at the same time.
    pub fn pin_napi(&self) -> usize {
        static NOTE: std::sync::Once = std::sync::Once::new();
        if let Err(e) = sh_in(
            &self.dst,
            &format!("{{ echo 1 > /sys/class/net/{DST_IF}/threaded; }} 2>/dev/null"),
        ) {
            NOTE.call_once(|| eprintln!("note: threaded NAPI not available ({e:#})"));
        }
        let prefix = format!("napi/{DST_IF}-");
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return 0;
        };
        let mut n = 0;
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            if comm.starts_with(&prefix) && pin(Pid::from_raw(pid), RECV_CPU).is_ok() {
                n += 1;
            }
        }
        n
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.src]);
        let _ = ip(&["netns", "del", &self.dst]);
    }
}

fn pin(pid: Pid, cpu: usize) -> Result<()> {
    let mut set = CpuSet::new();
    set.set(cpu).context("cpu index")?;
    sched_setaffinity(pid, &set).with_context(|| format!("pinning {pid} to CPU {cpu}"))
}

/// Pin the calling thread to `cpu`.
pub fn pin_self(cpu: usize) -> Result<()> {
    pin(Pid::from_raw(0), cpu)
}

/// Busy and total jiffies per CPU (`/proc/stat`), to difference over a phase.
#[derive(Debug, Clone, Default)]
pub struct CpuTimes(Vec<(u64, u64)>);

impl CpuTimes {
    pub fn now() -> CpuTimes {
        let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let cpus = text
            .lines()
            .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
            .map(|l| {
                let v: Vec<u64> = l
                    .split_whitespace()
                    .skip(1)
                    .filter_map(|x| x.parse().ok())
                    .collect();
                let total: u64 = v.iter().take(8).sum();
                // idle and iowait are the 4th and 5th fields.
                let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
                (total - idle, total)
            })
            .collect();
        CpuTimes(cpus)
    }

    /// Busy fraction of each CPU since `earlier`.
    pub fn busy_since(&self, earlier: &CpuTimes) -> Vec<f64> {
        self.0
            .iter()
            .zip(&earlier.0)
            .map(|((b1, t1), (b0, t0))| {
                let dt = t1.saturating_sub(*t0);
                if dt == 0 {
                    f64::NAN
                } else {
                    b1.saturating_sub(*b0) as f64 / dt as f64
                }
            })
            .collect()
    }
}

/// `/proc/loadavg`'s first three fields.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
