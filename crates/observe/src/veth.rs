//! The veth network of a plan: a sender namespace and a receiver namespace
//! joined by one veth pair, created for the plan under names that carry
//! this process's id and removed when the guard drops (also after an error
//! or an interrupt, see `interrupt`). Namespaces left by a process that no
//! longer exists (killed with SIGKILL) are removed before new ones are made.

use std::fs::File;
use std::net::{Ipv6Addr, SocketAddr, SocketAddrV6};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{bail, Context, Result};
use nix::sched::{setns, CloneFlags};

/// Prefix of every namespace this runner creates: `sgo<pid>-<n>-tx|rx`.
const PREFIX: &str = "sgo";
/// The sender's interface (in the sender namespace).
pub const TX_IF: &str = "sgo0";
/// The receiver's interface (in the receiver namespace).
pub const RX_IF: &str = "sgo1";
/// Sender address.
pub const TX_ADDR: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x18, 0, 0, 0, 0, 0, 1);
/// Receiver address.
pub const RX_ADDR: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x18, 0, 0, 0, 0, 0, 2);
/// Fixed MAC addresses, so both neighbour entries can be permanent and no
/// run starts with neighbour discovery.
const TX_MAC: &str = "02:00:00:00:18:01";
const RX_MAC: &str = "02:00:00:00:18:02";

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Two namespaces joined by a veth pair; deleted on drop.
#[derive(Debug)]
pub struct Pair {
    /// The sender's namespace.
    pub tx: Netns,
    /// The receiver's namespace.
    pub rx: Netns,
}

/// A named namespace, held open so threads can enter it.
#[derive(Debug)]
pub struct Netns {
    /// Its name under /run/netns.
    pub name: String,
    file: File,
}

impl Netns {
    fn open(name: &str) -> Result<Netns> {
        let file = File::open(format!("/run/netns/{name}"))
            .with_context(|| format!("opening namespace {name}"))?;
        Ok(Netns {
            name: name.to_owned(),
            file,
        })
    }

    /// Moves the calling thread (only) into this namespace. The in-line
    /// crate has the same call (`inline::netns`), but the veth network
    /// must work in builds without the in-line agent.
    pub fn enter(&self) -> Result<()> {
        setns(&self.file, CloneFlags::CLONE_NEWNET)
            .with_context(|| format!("entering namespace {}", self.name))
    }

    /// Starts `cmd` inside this namespace (from a thread that entered it:
    /// a child process starts in its parent thread's namespace).
    pub fn spawn(&self, cmd: &mut Command) -> std::io::Result<std::process::Child> {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    self.enter().map_err(std::io::Error::other)?;
                    cmd.spawn()
                })
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    }

    /// The interface table (`/proc/thread-self/net/dev`) of this
    /// namespace, opened from inside it: the open file keeps showing this
    /// namespace's counters to any thread that reads it ([`tx_packets`]).
    pub fn dev_table(&self) -> Result<File> {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    self.enter()?;
                    File::open("/proc/thread-self/net/dev")
                        .context("opening /proc/thread-self/net/dev")
                })
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    }

    /// Another handle to the same namespace (for a thread of its own).
    pub fn try_clone(&self) -> Result<Netns> {
        Ok(Netns {
            name: self.name.clone(),
            file: self.file.try_clone()?,
        })
    }
}

fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("running ip (iproute2)")?;
    if !out.status.success() {
        bail!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Deletes namespaces named by [`PREFIX`] whose process is gone.
fn remove_stale() {
    let Ok(dir) = std::fs::read_dir("/run/netns") else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix(PREFIX)
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                let _ = ip(&["netns", "del", &name]);
            }
        }
    }
}

impl Pair {
    /// Creates the namespaces, the veth pair, addresses and permanent
    /// neighbour entries.
    pub fn new() -> Result<Pair> {
        remove_stale();
        let id = format!(
            "{PREFIX}{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let (tx, rx) = (format!("{id}-tx"), format!("{id}-rx"));
        ip(&["netns", "add", &tx])?;
        // From here on the guard removes what exists.
        let mut guard = Names(vec![tx.clone()]);
        ip(&["netns", "add", &rx])?;
        guard.0.push(rx.clone());
        ip(&[
            "link", "add", TX_IF, "address", TX_MAC, "netns", &tx, "type", "veth", "peer", "name",
            RX_IF, "address", RX_MAC, "netns", &rx,
        ])?;
        for (ns, dev, addr, peer, mac) in [
            (&tx, TX_IF, TX_ADDR, RX_ADDR, RX_MAC),
            (&rx, RX_IF, RX_ADDR, TX_ADDR, TX_MAC),
        ] {
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            let a = format!("{addr}/64");
            ip(&["-n", ns, "-6", "addr", "add", &a, "dev", dev, "nodad"])?;
            let p = peer.to_string();
            ip(&[
                "-n",
                ns,
                "-6",
                "neigh",
                "replace",
                &p,
                "lladdr",
                mac,
                "dev",
                dev,
                "nud",
                "permanent",
            ])?;
        }
        let pair = Pair {
            tx: Netns::open(&tx)?,
            rx: Netns::open(&rx)?,
        };
        // The pair's own drop removes them from here on.
        guard.0.clear();
        Ok(pair)
    }
}

/// The receiver's socket address for a port.
pub fn rx_socket(port: u16) -> SocketAddr {
    SocketAddr::V6(SocketAddrV6::new(RX_ADDR, port, 0, 0))
}

/// Packets received so far by `dev` in the calling thread's namespace
/// (`/proc/thread-self/net/dev`: the kernel's rx_packets counter; sysfs
/// would show the namespace it was mounted in, not the thread's).
pub fn rx_packets(dev: &str) -> Result<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/net/dev")
        .context("reading /proc/thread-self/net/dev")?;
    parse_rx_packets(&text, dev).with_context(|| format!("no interface {dev} in this namespace"))
}

/// Packets sent so far by `dev`, from an interface table opened by
/// [`Netns::dev_table`] (read from its start each time: the kernel
/// regenerates it).
pub fn tx_packets(table: &File, dev: &str) -> Result<u64> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; 16 * 1024];
    let mut len = 0;
    loop {
        let n = table.read_at(&mut buf[len..], len as u64)?;
        if n == 0 {
            break;
        }
        len += n;
        if len == buf.len() {
            buf.resize(len * 2, 0);
        }
    }
    let text = String::from_utf8_lossy(&buf[..len]);
    parse_packets(&text, dev, 9).with_context(|| format!("no interface {dev} in the table"))
}

fn parse_rx_packets(text: &str, dev: &str) -> Option<u64> {
    parse_packets(text, dev, 1)
}

/// Column `col` of `dev`'s line after the colon (receive: bytes, packets,
/// errs, drop, fifo, frame, compressed, multicast; then transmit: bytes,
/// packets, ...): 1 is rx_packets, 9 tx_packets.
fn parse_packets(text: &str, dev: &str, col: usize) -> Option<u64> {
    text.lines().find_map(|l| {
        let (name, rest) = l.split_once(':')?;
        (name.trim() == dev).then(|| rest.split_whitespace().nth(col)?.parse().ok())?
    })
}

struct Names(Vec<String>);

impl Drop for Names {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = ip(&["netns", "del", n]);
        }
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth pair with it.
        drop(Names(vec![self.tx.name.clone(), self.rx.name.clone()]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_receive_counter_is_the_second_receive_column() {
        let text = "Inter-|   Receive                                                |  Transmit\n \
             face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
             lo:     120       2    0    0    0     0          0         0      120       2    0    0    0     0       0          0\n  \
             sgo1: 9876543  123456    0    0    0     0          0         0      0       0    0    0    0     0       0          0\n";
        assert_eq!(parse_rx_packets(text, "sgo1"), Some(123_456));
        assert_eq!(parse_rx_packets(text, "lo"), Some(2));
        assert_eq!(parse_rx_packets(text, "sgo0"), None);
        assert_eq!(parse_packets(text, "lo", 9), Some(2));
    }
}
