//! `streamgauge bench capture`: the capture pipeline on a live interface at
//! the generator's maximum, against `tcpdump -s 64 -w` on the same traffic
//! in the same run.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use capture::config::SessionConfig;
use capture::demux::Demux;
use capture::session::{Session, SessionEnv};
use capture::source::{AfPacket, AfPacketConfig};
use clap::Args;

pub const LONG_ABOUT: &str = "\
Measure the capture pipeline on a live interface at the packet generator's
maximum, and tcpdump on the same traffic in the same run (needs root,
trafgen from netsniff-ng, tcpdump).

Two network namespaces joined by a veth pair are created (and deleted at
the end). trafgen sends --packets UDP frames of each --sizes as fast as it
can from one end; the other end is captured by one AF_PACKET TPACKET_V3
ring feeding the same demultiplexer and sessions the capture daemon runs:

  header   one session, header-only pcap (snap 64)
  full     one session, header-only pcap + Crypto-PAn on both addresses
           + IPFIX flows to a file + counters
  many     --sessions sessions, each with its own filter matching a slice
           of the traffic (UDP source port ranges), counters only

For each configuration the baseline is `tcpdump -s 64 -w FILE` on the same
interface with the same generator run. Reported: packets offered (the
sending interface's counter), captured/offered, kernel ring drops, drops
by us, CPU time of our capture thread and of tcpdump as a share of the
run, and the generator's rate.";

/// Arguments of `streamgauge bench capture`.
#[derive(Debug, Args)]
pub struct CaptureBenchArgs {
    /// Frames per run.
    #[arg(short = 'n', long, value_name = "N", default_value_t = 2_000_000)]
    pub packets: u64,
    /// Frame sizes on the wire (with FCS), 64 to 1500.
    #[arg(long, value_name = "BYTES,...", value_delimiter = ',', default_values_t = [64u32, 512, 1500])]
    pub sizes: Vec<u32>,
    /// Configurations: header, full, many.
    #[arg(long, value_name = "NAME,...", value_delimiter = ',', default_values_t = ["header".to_string(), "full".to_string(), "many".to_string()])]
    pub configs: Vec<String>,
    /// Sessions of the `many` configuration.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub sessions: u32,
}

const NS_GEN: &str = "sgbench-gen";
const NS_CAP: &str = "sgbench-cap";

/// Two namespaces joined by veth `va` (generator) — `vb` (capture),
/// deleted on drop.
struct Link {
    /// MAC address of `vb`.
    mac_b: String,
}

impl Link {
    fn create() -> Result<Link> {
        for ns in [NS_GEN, NS_CAP] {
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stderr(Stdio::null())
                .status();
        }
        ip(&["netns", "add", NS_GEN])?;
        // From here on, a failure deletes what exists.
        let mut link = Link {
            mac_b: String::new(),
        };
        ip(&["netns", "add", NS_CAP])?;
        ip(&[
            "-n", NS_GEN, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns",
            NS_CAP,
        ])?;
        ip(&["-n", NS_GEN, "link", "set", "va", "up"])?;
        ip(&["-n", NS_CAP, "link", "set", "vb", "up"])?;
        let out = Command::new("ip")
            .args(["-n", NS_CAP, "-br", "link", "show", "vb"])
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        link.mac_b = text
            .split_whitespace()
            .nth(2)
            .context("no MAC address for vb")?
            .to_owned();
        Ok(link)
    }

    /// TX packets of `va` so far.
    fn sent(&self) -> Result<u64> {
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                NS_GEN,
                "cat",
                "/sys/class/net/va/statistics/tx_packets",
            ])
            .output()?;
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .context("reading va's tx_packets")
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        for ns in [NS_GEN, NS_CAP] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

fn ip(args: &[&str]) -> Result<()> {
    let st = Command::new("ip")
        .args(args)
        .status()
        .context("running ip")?;
    ensure!(st.success(), "ip {} failed", args.join(" "));
    Ok(())
}

fn need(tool: &str) -> Result<()> {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()?
        .success();
    ensure!(
        found,
        "{tool} not found: run `bash scripts/setup.sh` (installs netsniff-ng and tcpdump)"
    );
    Ok(())
}

/// Runs trafgen for `n` frames of `size` bytes; returns (offered, seconds).
fn generate(link: &Link, size: u32, n: u64) -> Result<(u64, f64)> {
    let payload = size.saturating_sub(4 + 14 + 20 + 8).max(1);
    let conf = format!(
        "{{ eth(da={}, sa=02:00:00:00:00:01), ipv4(saddr=10.78.0.1, daddr=10.78.0.2), \
         udp(sp=dinc(1024, 33791), dp=9999), fill(0x00, {payload}) }}",
        link.mac_b
    );
    let before = link.sent()?;
    let t0 = Instant::now();
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            NS_GEN,
            "trafgen",
            "--dev",
            "va",
            "--cpus",
            "1",
            "--num",
            &n.to_string(),
            "--no-sock-mem",
            "--silent",
        ])
        .arg(&conf)
        .output()
        .context("running trafgen")?;
    let secs = t0.elapsed().as_secs_f64();
    ensure!(
        out.status.success(),
        "trafgen failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((link.sent()? - before, secs))
}

/// Sessions of a configuration.
fn sessions(name: &str, many: u32) -> Result<Vec<String>> {
    Ok(match name {
        "header" => vec![r#"{"name":"hdr","filter":"udp","snaplen":64,"header_only":true,"outputs":[{"type":"pcap"}]}"#.into()],
        "full" => vec![r#"{"name":"full","filter":"udp","snaplen":64,"header_only":true,
            "anonymization":{"key":"node"},
            "outputs":[{"type":"pcap"},{"type":"ipfix","target":{"transport":"file","path":"flows.ipfix"}},{"type":"counters"}]}"#.into()],
        "many" => {
            let width = (32768 / many.max(1)).max(1);
            (0..many)
                .map(|i| {
                    let lo = 1024 + i * width;
                    format!(
                        r#"{{"name":"s{i}","filter":"udp src portrange {lo}-{}","outputs":[{{"type":"counters"}}]}}"#,
                        lo + width - 1
                    )
                })
                .collect()
        }
        other => bail!("unknown configuration {other:?}: want header, full or many"),
    })
}

/// What our side saw.
struct Ours {
    captured: u64,
    kernel_drops: u64,
    our_drops: u64,
    cpu: f64,
    wall: f64,
}

/// Captures on `vb` with the configuration's sessions while `gen` runs.
fn ours(
    link: &Link,
    dir: &Path,
    config: &str,
    many: u32,
    size: u32,
    n: u64,
) -> Result<(Ours, u64, f64)> {
    let mut demux = Demux::new();
    for json in sessions(config, many)? {
        let cfg = SessionConfig::from_json(&json).context("bench session")?;
        let env = SessionEnv {
            data_dir: dir.to_owned(),
            source: "vb".into(),
            key: Some(capture::Key::from_bytes([7u8; 32])),
            closed: None,
        };
        demux.add(Session::new(cfg, &env).context("starting a bench session")?);
    }
    let done = Arc::new(AtomicBool::new(false));
    let ready = Arc::new(AtomicBool::new(false));
    let (done2, ready2) = (Arc::clone(&done), Arc::clone(&ready));
    let capturer = std::thread::spawn(move || -> Result<Ours> {
        let netns = std::fs::File::open(format!("/var/run/netns/{NS_CAP}"))?;
        nix::sched::setns(&netns, nix::sched::CloneFlags::CLONE_NEWNET).context("setns")?;
        let mut src =
            AfPacket::open(AfPacketConfig::new("vb")).context("opening AF_PACKET on vb")?;
        let cpu0 = thread_cpu();
        let t0 = Instant::now();
        ready2.store(true, Ordering::SeqCst);
        let mut idle_since: Option<Instant> = None;
        loop {
            let before = demux.packets();
            src.next_block(20, |ts, f, len| demux.process(ts, f, len))?;
            if demux.packets() != before {
                idle_since = None;
            } else if done2.load(Ordering::SeqCst) {
                let since = *idle_since.get_or_insert_with(Instant::now);
                if since.elapsed() > Duration::from_millis(300) {
                    break;
                }
            }
        }
        let cpu = thread_cpu() - cpu0;
        let wall = t0.elapsed().as_secs_f64();
        let stats = src.stats()?;
        let captured = demux.packets();
        let our_drops = demux
            .sessions()
            .iter()
            .map(|s| s.counters().dropped_by_us)
            .sum();
        let _ = demux.stop_all(0);
        Ok(Ours {
            captured,
            kernel_drops: stats.drops,
            our_drops,
            cpu,
            wall,
        })
    });
    while !ready.load(Ordering::SeqCst) {
        ensure!(!capturer.is_finished(), "the capture thread ended early");
        std::thread::sleep(Duration::from_millis(5));
    }
    let generated = generate(link, size, n);
    done.store(true, Ordering::SeqCst);
    let ours = capturer
        .join()
        .map_err(|_| anyhow::anyhow!("capture thread panicked"))??;
    let (offered, secs) = generated?;
    Ok((ours, offered, secs))
}

/// CPU time of the calling thread, in seconds.
fn thread_cpu() -> f64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as f64 + t.tv_nsec() as f64 / 1e9)
        .unwrap_or(0.0)
}

/// tcpdump's packets captured, kernel drops and CPU seconds.
fn tcpdump(link: &Link, dir: &Path, size: u32, n: u64) -> Result<(u64, u64, f64, u64, f64)> {
    let file = dir.join("tcpdump.pcap");
    let child = Command::new("ip")
        .args([
            "netns", "exec", NS_CAP, "tcpdump", "-i", "vb", "-s", "64", "-B", "65536", "-w",
        ])
        .arg(&file)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .context("starting tcpdump")?;
    let pid = child.id();
    std::thread::sleep(Duration::from_millis(800));
    let generated = generate(link, size, n);
    std::thread::sleep(Duration::from_millis(300));
    let cpu = proc_cpu(pid).unwrap_or(0.0);
    let _ = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status();
    let out = child.wait_with_output()?;
    let (offered, secs) = generated?;
    let env = SessionEnv {
        data_dir: dir.to_owned(),
        source: "tcpdump".into(),
        key: None,
        closed: None,
    };
    let captured = capture::run_file(&file, vec![], &env)
        .map(|s| s.packets)
        .unwrap_or(0);
    let drops = String::from_utf8_lossy(&out.stderr)
        .lines()
        .find(|l| l.contains("dropped by kernel"))
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    Ok((captured, drops, cpu, offered, secs))
}

/// utime + stime of a process, in seconds.
fn proc_cpu(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// Runs every size × configuration and prints one line each.
pub fn run(args: &CaptureBenchArgs) -> Result<bool> {
    ensure!(
        nix::unistd::geteuid().is_root(),
        "bench capture needs root (namespaces, AF_PACKET)"
    );
    need("trafgen")?;
    need("tcpdump")?;
    for &s in &args.sizes {
        ensure!(
            (64..=1500).contains(&s),
            "--sizes {s}: want 64 to 1500 bytes"
        );
    }
    let link = Link::create()?;
    println!(
        "{:>5} {:>7} {:>10} {:>9} {:>8} {:>7} {:>6} {:>6} | {:>9} {:>8} {:>6}",
        "bytes",
        "config",
        "offered",
        "gen pps",
        "captured",
        "kdrops",
        "ours",
        "cpu%",
        "tcpdump",
        "kdrops",
        "cpu%"
    );
    for &size in &args.sizes {
        for config in &args.configs {
            let dir = tempfile::tempdir()?;
            let (o, offered, secs) =
                ours(&link, dir.path(), config, args.sessions, size, args.packets)?;
            let tdir = tempfile::tempdir()?;
            let (t_cap, t_drops, t_cpu, t_offered, t_secs) =
                tcpdump(&link, tdir.path(), size, args.packets)?;
            println!(
                "{:>5} {:>7} {:>10} {:>9.0} {:>7.2}% {:>7} {:>6} {:>5.1}% | {:>8.2}% {:>8} {:>5.1}%",
                size,
                config,
                offered,
                offered as f64 / secs,
                100.0 * o.captured as f64 / offered.max(1) as f64,
                o.kernel_drops,
                o.our_drops,
                100.0 * o.cpu / o.wall.max(1e-9),
                100.0 * t_cap as f64 / t_offered.max(1) as f64,
                t_drops,
                100.0 * t_cpu / (t_secs + 1.1),
            );
        }
    }
    Ok(true)
}
