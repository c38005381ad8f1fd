//! The UDP workload: a sender paced at a set rate, reporting every packet
//! through our Rust client, through liboml2 from the C sender
//! (`c_sender`), or not, and an uninstrumented receiver whose
//! count is the independent response; over loopback, or from the sender's
//! namespace to the receiver's over the veth pair, where the receiving
//! interface's kernel counter is sampled too.

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use client::{Client, Mp};
use omsp::{OmlType, ValueRef};

use crate::c_sender::{self, Programs};
use crate::interrupt;
use crate::plan::{Sender, Settings};
use crate::veth::{self, Netns, Pair};

/// A sample: seconds since the run started, and the counters then.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Seconds since the senders started.
    pub t: f64,
    /// Datagrams the receiver socket got.
    pub received: u64,
    /// Datagrams the senders sent.
    pub sent: u64,
    /// The receiving interface's rx_packets since the run started (veth only, else 0).
    pub if_rx: u64,
}

/// What one run measured.
#[derive(Debug)]
pub struct Outcome {
    /// Every `interval`, from 0 to the run's length.
    pub samples: Vec<Sample>,
    /// Datagrams sent in the whole run.
    pub sent: u64,
    /// Datagrams received in the whole run (after a drain).
    pub received: u64,
    /// Reports the instrumented C sender made (its injects that succeeded).
    pub reported: Option<u64>,
    /// iperf3's own figures (iperf3 flavours).
    pub iperf3: Option<crate::iperf3::Figures>,
}

/// How long the receiver may still drain its socket after the senders stop.
const DRAIN: Duration = Duration::from_millis(100);

/// Where a run's instrumented sender reports, and what the C and iperf3
/// flavours need.
pub struct Env<'a> {
    /// `--oml-collect` of the Rust flavours: a file of the run's own.
    pub file: String,
    /// The plan's collection server (`tcp:127.0.0.1:PORT`, in the sender's
    /// namespace on veth), for the C and iperf3 flavours.
    pub collector: Option<String>,
    /// The run's domain on that server.
    pub domain: String,
    /// The C sender, compiled for the plan.
    pub programs: &'a Programs,
    /// The `streamgauge` executable (`wrap iperf3`).
    pub streamgauge: &'a Path,
    /// The run's scratch directory.
    pub work: &'a Path,
}

impl Env<'_> {
    /// The collector URI, which the plan started when a flavour needs it.
    pub fn collector(&self) -> Result<&str> {
        self.collector
            .as_deref()
            .context("no collection server was started for this plan")
    }
}

/// Sends for `seconds` at `s.rate`, sampling the counters every
/// `interval`; `env` says where an instrumented flavour reports; `net` is
/// the veth pair, or loopback when None.
pub fn run(
    s: &Settings,
    seconds: f64,
    interval: f64,
    env: &Env,
    net: Option<&Pair>,
) -> Result<Outcome> {
    let c_flavour = match s.sender() {
        Sender::Iperf3 { wrapped } => {
            let net = net.context("the iperf3 flavours need network = \"veth\"")?;
            return crate::iperf3::run(s, seconds, interval, env, net, wrapped);
        }
        Sender::C(f) => Some(f),
        Sender::Rust => None,
    };
    let rx_ns = net.map(|p| p.rx.try_clone()).transpose()?;
    let (rx, addr) = receiver_socket(rx_ns.as_ref())?;
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
    // Stops the receiver whatever happens below.
    let _receiver = StopOnDrop(Arc::clone(&stop));
    let instrument = match s.flavour.as_str() {
        "per-packet" => Some(start_client(&env.file, None)?),
        "filtered" => Some(start_client(&env.file, Some(100))?),
        _ => None,
    };
    // The C sender is started (its library connected, its sockets made)
    // before the clock starts.
    let mut process = match c_flavour {
        Some(f) => {
            let collect = if f.instrumented { env.collector()? } else { "" };
            Some(c_sender::start(
                env.programs,
                f,
                s,
                addr,
                seconds,
                collect,
                &env.domain,
                env.work,
                |cmd| match net {
                    Some(p) => p.tx.spawn(cmd),
                    None => cmd.spawn(),
                },
            )?)
        }
        None => None,
    };
    // The interface counter is read from a thread inside the receiver's
    // namespace: the sampler.
    let if_rx0 = rx_ns.as_ref().map(interface_count).transpose()?;
    let halt = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    // `threads` senders, each with its own socket and an even share of
    // the set rate; instrumented ones share one measurement point (the
    // client gives each injecting thread a queue of its own).
    let mut senders = Vec::new();
    if let Some(p) = &mut process {
        p.go()?;
    } else {
        for _ in 0..s.threads {
            let (settings, count, halt) = (s.clone(), Arc::clone(&sent), Arc::clone(&halt));
            let mp = instrument.as_ref().map(|(_, mp)| mp.clone());
            let ns = net.map(|p| p.tx.try_clone()).transpose()?;
            senders.push(
                std::thread::Builder::new()
                    .name("sg-observe-tx".into())
                    .spawn(move || {
                        if let Some(ns) = ns {
                            ns.enter()?;
                        }
                        send(&settings, addr, seconds, mp.as_ref(), &count, &halt)
                    })?,
            );
        }
    }
    let count_sent = || match &process {
        Some(p) => p.sent(),
        None => sent.load(Ordering::Relaxed),
    };
    let count_received = || received.load(Ordering::SeqCst);
    let samples = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                if let Some(ns) = &rx_ns {
                    ns.enter()?;
                }
                let counters = Counters {
                    received: &count_received,
                    sent: &count_sent,
                    if_rx: &|| match if_rx0 {
                        Some(base) => Ok(veth::rx_packets(veth::RX_IF)? - base),
                        None => Ok(0),
                    },
                };
                sample(t0, seconds, interval, &counters, &halt)
            })
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    });
    halt.store(true, Ordering::Relaxed);
    let result: Result<Vec<()>> = senders
        .into_iter()
        .map(|h| {
            h.join()
                .map_err(|_| anyhow::anyhow!("a sender thread panicked"))?
        })
        .collect();
    // The C sender ends by itself when its time is up (after the last
    // sample), once its library has sent every report; after a signal it
    // is killed (by its drop) instead of waited for.
    if interrupt::interrupted() {
        process = None;
    }
    let ended = process.map(c_sender::Running::finish).transpose();
    // Let the receiver drain what is still in its socket buffer.
    std::thread::sleep(DRAIN);
    stop.store(true, Ordering::Relaxed);
    let _ = receiver.join();
    if let Some((client, _)) = instrument {
        client
            .close()
            .context("closing the instrumented sender's client")?;
    }
    result?;
    let ended = ended?;
    let samples = samples?;
    if interrupt::interrupted() {
        bail!("interrupted");
    }
    let (sent, reported) = match &ended {
        Some(e) => (
            e.sent,
            c_flavour.filter(|f| f.instrumented).map(|_| e.reported),
        ),
        None => (sent.load(Ordering::Relaxed), None),
    };
    Ok(Outcome {
        samples,
        sent,
        received: received.load(Ordering::Relaxed),
        reported,
        iperf3: None,
    })
}

/// Sets the flag when dropped (the receiver thread's stop, also on an early return).
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// How the sampler reads each counter.
pub struct Counters<'a> {
    /// Datagrams the receiver got.
    pub received: &'a (dyn Fn() -> u64 + Sync),
    /// Datagrams the sender sent.
    pub sent: &'a (dyn Fn() -> u64 + Sync),
    /// The receiving interface's packets since the start (called in the sampler's namespace).
    pub if_rx: &'a (dyn Fn() -> Result<u64> + Sync),
}

/// The receiver's socket (bound inside the receiver's namespace on veth)
/// and the address the senders send to.
fn receiver_socket(ns: Option<&Netns>) -> Result<(UdpSocket, SocketAddr)> {
    let bind = |at: SocketAddr| -> Result<(UdpSocket, SocketAddr)> {
        let rx = UdpSocket::bind(at).with_context(|| format!("binding the receiver on {at}"))?;
        rx.set_read_timeout(Some(Duration::from_millis(20)))?;
        let addr = rx.local_addr()?;
        Ok((rx, addr))
    };
    match ns {
        None => bind(SocketAddr::from(([127, 0, 0, 1], 0))),
        // A socket stays in the namespace it was made in, whichever
        // thread uses it later.
        Some(ns) => std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    ns.enter()?;
                    bind(veth::rx_socket(0))
                })
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        }),
    }
}

/// The receiving interface's rx_packets, read in its namespace.
fn interface_count(ns: &Netns) -> Result<u64> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                ns.enter()?;
                veth::rx_packets(veth::RX_IF)
            })
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// Samples the counters every `interval` until `seconds` (or an interrupt).
pub fn sample(
    t0: Instant,
    seconds: f64,
    interval: f64,
    counters: &Counters,
    halt: &AtomicBool,
) -> Result<Vec<Sample>> {
    let mut samples = Vec::new();
    let mut next = 0.0;
    while next <= seconds + 1e-9 && !interrupt::interrupted() {
        let wait = Duration::from_secs_f64(next).saturating_sub(t0.elapsed());
        std::thread::sleep(wait);
        // The socket's count is read before the interface's: a datagram
        // the receiver counted had crossed the interface already, so
        // every sample holds received <= if_rx.
        let (t, received, sent) = (
            t0.elapsed().as_secs_f64(),
            (counters.received)(),
            (counters.sent)(),
        );
        let if_rx = (counters.if_rx)()?;
        samples.push(Sample {
            t,
            received,
            sent,
            if_rx,
        });
        next += interval;
    }
    halt.store(true, Ordering::Relaxed);
    Ok(samples)
}

fn send(
    s: &Settings,
    to: SocketAddr,
    seconds: f64,
    mp: Option<&Mp>,
    count: &AtomicU64,
    halt: &AtomicBool,
) -> Result<()> {
    let any = if to.is_ipv6() {
        SocketAddr::from(([0u16; 8], 0))
    } else {
        SocketAddr::from(([127, 0, 0, 1], 0))
    };
    let sock = UdpSocket::bind(any).context("binding the sender")?;
    sock.connect(to)?;
    let mut payload = vec![0u8; s.size];
    let size = s.size as u32;
    let length = Duration::from_secs_f64(seconds);
    let t0 = Instant::now();
    let mut seq = 0u64;
    loop {
        // Clock, pacing and the stop flag are checked every 16 packets in every flavour.
        if seq.is_multiple_of(16) {
            let now = t0.elapsed();
            if now >= length || halt.load(Ordering::Relaxed) {
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
