//! The UDP workload: a sender paced at a set rate over loopback, reporting
//! every packet through our Rust client or not, and an uninstrumented
//! receiver whose count is the independent response.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use client::{Client, Mp};
use omsp::{OmlType, ValueRef};

use super::plan::Settings;

/// A sample: seconds since the run started, and the two counters then.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub t: f64,
    pub received: u64,
    pub sent: u64,
}

/// What one run measured.
#[derive(Debug)]
pub struct Outcome {
    pub samples: Vec<Sample>,
    pub sent: u64,
    pub received: u64,
}

/// Sends for `seconds` at `s.rate`, sampling both counters every
/// `interval`; `report` is where an instrumented flavour reports
/// (an --oml-collect URI).
pub fn run(s: &Settings, seconds: f64, interval: f64, report: &str) -> Result<Outcome> {
    let rx = UdpSocket::bind("127.0.0.1:0").context("binding the receiver on loopback")?;
    rx.set_read_timeout(Some(Duration::from_millis(20)))?;
    let addr = rx.local_addr()?;
    let received = Arc::new(AtomicU64::new(0));
    let sent = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let receiver = {
        let (c, stop) = (Arc::clone(&received), Arc::clone(&stop));
        std::thread::Builder::new()
            .name("sg-observe-rx".into())
            .spawn(move || {
                let mut buf = vec![0u8; 65_536];
                while !stop.load(Ordering::Relaxed) {
                    if rx.recv(&mut buf).is_ok() {
                        c.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })?
    };
    let instrument = match s.flavour.as_str() {
        "uninstrumented" => None,
        "per-packet" => Some(start_client(report, None)?),
        "filtered" => Some(start_client(report, Some(100))?),
        other => bail!("unknown flavour {other}"),
    };
    let t0 = Instant::now();
    // `threads` senders, each with its own socket and an even share of
    // the set rate; instrumented ones share one measurement point (the
    // client gives each injecting thread a queue of its own).
    let mut senders = Vec::new();
    for _ in 0..s.threads {
        let (settings, count) = (s.clone(), Arc::clone(&sent));
        let mp = instrument.as_ref().map(|(_, mp)| mp.clone());
        senders.push(
            std::thread::Builder::new()
                .name("sg-observe-tx".into())
                .spawn(move || send(&settings, addr, seconds, mp.as_ref(), &count))?,
        );
    }
    let mut samples = Vec::new();
    let mut next = 0.0;
    while next <= seconds + 1e-9 {
        let wait = Duration::from_secs_f64(next).saturating_sub(t0.elapsed());
        std::thread::sleep(wait);
        samples.push(Sample {
            t: t0.elapsed().as_secs_f64(),
            received: received.load(Ordering::Relaxed),
            sent: sent.load(Ordering::Relaxed),
        });
        next += interval;
    }
    let result: Result<Vec<()>> = senders
        .into_iter()
        .map(|h| {
            h.join()
                .map_err(|_| anyhow::anyhow!("a sender thread panicked"))?
        })
        .collect();
    // Let the receiver drain what is still in its socket buffer.
    std::thread::sleep(Duration::from_millis(100));
    stop.store(true, Ordering::Relaxed);
    let _ = receiver.join();
    if let Some((client, _)) = instrument {
        client
            .close()
            .context("closing the instrumented sender's client")?;
    }
    result?;
    Ok(Outcome {
        samples,
        sent: sent.load(Ordering::Relaxed),
        received: received.load(Ordering::Relaxed),
    })
}

fn send(
    s: &Settings,
    to: SocketAddr,
    seconds: f64,
    mp: Option<&Mp>,
    count: &AtomicU64,
) -> Result<()> {
    let sock = UdpSocket::bind("127.0.0.1:0").context("binding the sender")?;
    sock.connect(to)?;
    let mut payload = vec![0u8; s.size];
    let size = s.size as u32;
    let length = Duration::from_secs_f64(seconds);
    let t0 = Instant::now();
    let mut seq = 0u64;
    loop {
        // Clock and pacing are checked every 16 packets in every flavour.
        if seq.is_multiple_of(16) {
            let now = t0.elapsed();
            if now >= length {
                return Ok(());
            }
            if let Some(total) = s.rate {
                let rate = total as f64 / s.threads as f64;
                let due = (now.as_secs_f64() * rate) as u64;
                if seq >= due {
                    let ahead = (seq - due) as f64 / rate;
                    std::thread::sleep(Duration::from_secs_f64(ahead.max(50e-6)));
                    continue;
                }
            }
        }
        payload[..8].copy_from_slice(&seq.to_be_bytes());
        match sock.send(&payload) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) if e.raw_os_error() == Some(105) => continue, // ENOBUFS: retry
            Err(e) => return Err(e).context("sending a datagram"),
        }
        seq += 1;
        count.fetch_add(1, Ordering::Relaxed);
        if let Some(mp) = mp {
            mp.inject(&[ValueRef::UInt64(seq), ValueRef::UInt32(size)])?;
        }
    }
}

/// The instrumented sender's client and its measurement point.
fn start_client(collect: &str, samples: Option<u32>) -> Result<(Client, Mp)> {
    let extra: Vec<String> = samples
        .map(|n| format!("--oml-samples={n}"))
        .into_iter()
        .collect();
    let client = new_client(collect, "sender", &extra)?;
    let mp = client.add_mp(
        "udp_tx",
        &[("seq", OmlType::UInt64), ("bytes", OmlType::UInt32)],
    )?;
    client
        .start()
        .with_context(|| format!("connecting to {collect}"))?;
    Ok((client, mp))
}

/// A client (domain `observe`) configured as an application given
/// --oml-collect and `extra` --oml-* options would be.
pub fn new_client(collect: &str, id: &str, extra: &[String]) -> Result<Client> {
    let mut argv: Vec<String> = [
        "observe",
        "--oml-collect",
        collect,
        "--oml-domain",
        "observe",
        "--oml-id",
        id,
    ]
    .map(String::from)
    .to_vec();
    argv.extend(extra.iter().cloned());
    let parsed =
        client::config::args::parse("observe", &mut argv, &|_| None, "2026-01-01t00.00.00+0000")?;
    let client::config::args::Outcome::Run(spec) = parsed.outcome else {
        bail!("unexpected client configuration outcome");
    };
    Ok(Client::new(spec)?)
}

/// Packets/s of a counter between the first sample at or after `from`
/// and the last at or before `to` (seconds since the start).
pub fn trimmed_rate(
    samples: &[Sample],
    from: f64,
    to: f64,
    pick: fn(&Sample) -> u64,
) -> Option<f64> {
    let a = samples.iter().find(|s| s.t >= from)?;
    let b = samples.iter().rev().find(|s| s.t <= to)?;
    (b.t > a.t).then(|| (pick(b) - pick(a)) as f64 / (b.t - a.t))
}
