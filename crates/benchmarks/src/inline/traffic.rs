//! The benchmark's traffic: a UDP blast of small datagrams from one thread
//! to one receiving thread, and TCP with iperf3 (which reserves headroom in
//! front of its packets, unlike a UDP socket).

use std::net::UdpSocket;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use inline::netns;

use super::net::{pin_self, Pair, DST_ADDR, RECV_CPU, SEND_CPU, SRC_ADDR};

/// Send `payload`-byte datagrams for `secs` from the sender's CPU; returns
/// (sent, received) where received counts what had arrived when sending
/// stopped.
pub fn udp_blast(p: &Pair, payload: usize, secs: f64) -> Result<(u64, u64)> {
    let stop = Arc::new(AtomicBool::new(false));
    let received = Arc::new(AtomicU64::new(0));
    let dst = netns::open(&p.dst)?;
    let (tx, rx) = std::sync::mpsc::channel();
    let recv = {
        let (stop, received) = (stop.clone(), received.clone());
        std::thread::spawn(move || -> Result<()> {
            netns::enter_file(&dst, "dst")?;
            pin_self(RECV_CPU)?;
            let s = UdpSocket::bind(format!("[{DST_ADDR}]:9000"))?;
            s.set_read_timeout(Some(Duration::from_millis(50)))?;
            tx.send(()).ok();
            let mut buf = [0u8; 2048];
            while !stop.load(Ordering::Relaxed) {
                if s.recv(&mut buf).is_ok() {
                    received.fetch_add(1, Ordering::Relaxed);
                }
            }
            Ok(())
        })
    };
    rx.recv().context("receiver")?;
    let sent = netns::run_in(&p.src, move || -> Result<u64> {
        pin_self(SEND_CPU)?;
        let s = UdpSocket::bind(format!("[{SRC_ADDR}]:9001"))?;
        s.connect(format!("[{DST_ADDR}]:9000"))?;
        let buf = vec![0x5au8; payload];
        let end = Instant::now() + Duration::from_secs_f64(secs);
        let mut n = 0u64;
        while Instant::now() < end {
            for _ in 0..64 {
                if s.send(&buf).is_ok() {
                    n += 1;
                }
            }
        }
        Ok(n)
    })??;
    let got_at_end = received.load(Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(100));
    stop.store(true, Ordering::Relaxed);
    recv.join()
        .map_err(|_| anyhow::anyhow!("receiver panicked"))??;
    Ok((sent, got_at_end))
}

/// An iperf3 server in the receiving namespace, bound to its veth address;
/// killed on drop.
pub struct Iperf {
    server: Child,
}

impl Iperf {
    pub fn start(p: &Pair) -> Result<Iperf> {
        let server = Command::new("ip")
            .args([
                "netns", "exec", &p.dst, "iperf3", "-s", "-B", DST_ADDR, "-p", "5201",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting iperf3 (apt install iperf3)")?;
        std::thread::sleep(Duration::from_millis(300));
        Ok(Iperf { server })
    }
}

impl Drop for Iperf {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// One TCP transfer's result.
pub struct TcpRun {
    /// Received bits per second.
    pub bps: f64,
    /// Sender's CPU use as iperf3 reports it (per cent of one CPU).
    pub sender_cpu: f64,
    /// Receiver's CPU use as iperf3 reports it.
    pub receiver_cpu: f64,
}

/// Run the iperf3 client in the sending namespace for `secs` (whole
/// seconds, at least 1), client pinned to the sender's CPU and server to
/// the receiver's.
pub fn tcp_run(p: &Pair, secs: f64) -> Result<TcpRun> {
    let t = secs.ceil().max(1.0).to_string();
    let affinity = format!("{SEND_CPU},{RECV_CPU}");
    let out = Command::new("ip")
        .args([
            "netns", "exec", &p.src, "iperf3", "-c", DST_ADDR, "-B", SRC_ADDR,
        ])
        .args(["-p", "5201", "-t", &t, "-A", &affinity, "-J"])
        .output()
        .context("running iperf3")?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("iperf3 output: {}", String::from_utf8_lossy(&out.stderr)))?;
    if let Some(e) = v.get("error") {
        bail!("iperf3: {e}");
    }
    let num = |path: &[&str]| {
        path.iter()
            .try_fold(&v, |v, k| v.get(k))
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(f64::NAN)
    };
    Ok(TcpRun {
        bps: num(&["end", "sum_received", "bits_per_second"]),
        sender_cpu: num(&["end", "cpu_utilization_percent", "host_total"]),
        receiver_cpu: num(&["end", "cpu_utilization_percent", "remote_total"]),
    })
}
