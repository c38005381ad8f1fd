//! The observer effect of the client library on a packet sender, measured
//! against the same sender uninstrumented in the same run (`streamgauge
//! bench observer`).

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::server::{Server, ServerConfig};
use anyhow::{bail, ensure, Context, Result};
use client::{Client, Mp};
use indicatif::ProgressBar;
use omsp::{OmlType, ValueRef};

/// Where the instrumented sender reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A streamgauge server in this process (SQLite).
    Server,
    /// A binary file in a temporary directory.
    File,
}

/// What to measure (`streamgauge bench observer --help` describes each).
#[derive(Debug, Clone)]
pub struct Options {
    /// Seconds per round.
    pub seconds: f64,
    /// Rounds of each kind (uninstrumented, instrumented), alternating.
    pub rounds: usize,
    /// UDP payload bytes.
    pub size: usize,
    /// Where the instrumented sender reports.
    pub target: Target,
}

/// One round's result.
#[derive(Debug, Clone)]
struct Round {
    instrumented: bool,
    sent: u64,
    received: u64,
    secs: f64,
}

impl Round {
    fn rate(&self) -> f64 {
        self.sent as f64 / self.secs
    }
}

/// Runs the benchmark; the report prints as a table or as JSON.
pub fn run(args: &Options) -> Result<Report> {
    ensure!(args.seconds > 0.0, "--seconds must be positive");
    ensure!(args.rounds > 0, "--rounds must be at least 1");
    ensure!(
        (8..=65_000).contains(&args.size),
        "--size must be 8 to 65000 bytes"
    );
    let tmp = tempfile::tempdir().context("creating a temporary directory")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let (server, collect) = match args.target {
        Target::Server => {
            let mut config = ServerConfig::new(tmp.path());
            config.listen = vec![SocketAddr::from(([127, 0, 0, 1], 0))];
            config.idle_timeout = None;
            let server = runtime.block_on(Server::start(config))?;
            let uri = format!("tcp://{}", server.local_addrs()[0]);
            (Some(server), uri)
        }
        Target::File => (
            None,
            format!("file:{}", tmp.path().join("observer.omsp").display()),
        ),
    };
    let (client, mp) = start_client(&collect)?;

    let receiver = Receiver::start()?;
    let progress = progress_bar(args);
    let mut rounds = Vec::new();
    let mut seq = 0u64;
    for r in 0..2 * args.rounds {
        let instrumented = r % 2 == 1;
        let round = send_round(args, &receiver, instrumented.then_some(&mp), &mut seq)?;
        progress.inc(1);
        progress.set_message(format!(
            "{} {:.0} packets/s",
            if instrumented {
                "instrumented"
            } else {
                "plain"
            },
            round.rate()
        ));
        rounds.push(round);
    }
    progress.finish_and_clear();
    receiver.stop();
    client.close().context("closing the client")?;
    let stats = client.stats();
    let reported: u64 = rounds
        .iter()
        .filter(|r| r.instrumented)
        .map(|r| r.sent)
        .sum();
    // What arrived, read back from where it went (the client's own
    // counters would only say what it handed over).
    let stored = match args.target {
        Target::Server => wait_rows(tmp.path(), reported)?,
        Target::File => file_rows(&tmp.path().join("observer.omsp"), "observer_udp_tx")?,
    };
    if let Some(s) = server {
        runtime.block_on(s.shutdown());
    }
    let dropped = stats.destinations[0].dropped + stats.dropped_at_inject;
    Ok(Report {
        options: args.clone(),
        summary: Summary::new(&rounds, reported, stored, dropped),
        rounds,
    })
}

fn start_client(collect: &str) -> Result<(Client, Mp)> {
    // The client's defaults, as an application given only --oml-collect.
    let mut argv = vec![
        "observer".to_owned(),
        "--oml-collect".to_owned(),
        collect.to_owned(),
        "--oml-domain".to_owned(),
        "observer".to_owned(),
        "--oml-id".to_owned(),
        "sender".to_owned(),
    ];
    let parsed =
        client::config::args::parse("observer", &mut argv, &|_| None, "2026-01-01t00.00.00+0000")?;
    let client::config::args::Outcome::Run(spec) = parsed.outcome else {
        bail!("unexpected client configuration outcome");
    };
    let client = Client::new(spec)?;
    let mp = client.add_mp(
        "udp_tx",
        &[("seq", OmlType::UInt64), ("bytes", OmlType::UInt32)],
    )?;
    client.start()?;
    Ok((client, mp))
}

/// The receiving end: counts datagrams until stopped.
struct Receiver {
    addr: SocketAddr,
    count: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<()>,
}

impl Receiver {
    fn start() -> Result<Receiver> {
        let sock = UdpSocket::bind("127.0.0.1:0").context("binding the receiver")?;
        sock.set_read_timeout(Some(Duration::from_millis(50)))?;
        let addr = sock.local_addr()?;
        let count = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (Arc::clone(&count), Arc::clone(&stop));
        let handle = std::thread::Builder::new()
            .name("sg-observer-rx".into())
            .spawn(move || {
                let mut buf = vec![0u8; 65_536];
                while !s.load(Ordering::Relaxed) {
                    if sock.recv(&mut buf).is_ok() {
                        c.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })?;
        Ok(Receiver {
            addr,
            count,
            stop,
            handle,
        })
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.handle.join();
    }
}

/// One round: sends for `args.seconds`, injecting per packet if `mp`.
fn send_round(args: &Options, rx: &Receiver, mp: Option<&Mp>, seq: &mut u64) -> Result<Round> {
    let sock = UdpSocket::bind("127.0.0.1:0").context("binding the sender")?;
    sock.connect(rx.addr)?;
    let mut payload = vec![0u8; args.size];
    let size = args.size as u32;
    let before = rx.count.load(Ordering::Relaxed);
    let length = Duration::from_secs_f64(args.seconds);
    let t0 = Instant::now();
    let mut sent = 0u64;
    loop {
        // The clock is read every 256 packets in both variants alike.
        if sent.is_multiple_of(256) && t0.elapsed() >= length {
            break;
        }
        *seq += 1;
        payload[..8].copy_from_slice(&seq.to_be_bytes());
        match sock.send(&payload) {
            Ok(_) => {}
            // A full socket buffer: the packet is not sent, try again.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) if e.raw_os_error() == Some(105) => continue, // ENOBUFS
            Err(e) => return Err(e).context("sending a datagram"),
        }
        sent += 1;
        if let Some(mp) = mp {
            mp.inject(&[ValueRef::UInt64(*seq), ValueRef::UInt32(size)])?;
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    // Let the receiver catch up before reading its count.
    std::thread::sleep(Duration::from_millis(100));
    let received = rx.count.load(Ordering::Relaxed) - before;
    Ok(Round {
        instrumented: mp.is_some(),
        sent,
        received,
        secs,
    })
}

/// Polls the server's database until `want` rows are visible (or 60 s).
fn wait_rows(dir: &std::path::Path, want: u64) -> Result<u64> {
    let path = dir.join("observer.sq3");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = rusqlite::Connection::open(&path)
            .and_then(|c| c.query_row("SELECT count(*) FROM observer_udp_tx", [], |r| r.get(0)))
            .unwrap_or(0u64);
        if got >= want || Instant::now() > deadline {
            return Ok(got);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Rows of `stream` in an OMSP file, decoded as the server would.
fn file_rows(path: &std::path::Path, stream: &str) -> Result<u64> {
    use std::io::Read;
    let mut file =
        std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut decoder = omsp::Decoder::new();
    let mut index = None;
    let mut rows = 0u64;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file
            .read(&mut buf)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            decoder.finish();
        } else {
            decoder.feed(&buf[..n]);
        }
        while let Some(ev) = decoder.next_event() {
            match ev.with_context(|| format!("decoding {}", path.display()))? {
                omsp::Event::Header(h) => {
                    index = h.schemas.iter().find(|s| s.name == stream).map(|s| s.index);
                }
                omsp::Event::Schema(s) if s.name == stream => index = Some(s.index),
                omsp::Event::Sample(s) if Some(s.stream) == index => rows += 1,
                _ => {}
            }
        }
        if n == 0 {
            return Ok(rows);
        }
    }
}

fn progress_bar(args: &Options) -> ProgressBar {
    crate::progress::bar(
        2 * args.rounds as u64,
        "{prefix} [{bar:30}] {pos}/{len} rounds  {msg}",
        "observer",
    )
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct Report {
    /// What was asked (the table's title and the JSON repeat it).
    options: Options,
    /// Every round, in the order they ran.
    rounds: Vec<Round>,
    /// Medians, ratio and the zero-loss check.
    summary: Summary,
}

impl Report {
    /// Whether every reported packet was stored and none was dropped.
    pub fn lossless(&self) -> bool {
        self.summary.lossless()
    }

    /// The human-readable table.
    pub fn table(&self) -> String {
        self.summary.table(&self.options, &self.rounds)
    }

    /// Machine-readable results.
    pub fn json(&self) -> serde_json::Value {
        self.summary.json(&self.options, &self.rounds)
    }
}

/// What the run shows.
#[derive(Debug, Clone)]
struct Summary {
    plain: f64,
    instrumented: f64,
    reported: u64,
    stored: u64,
    dropped: u64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

impl Summary {
    fn new(rounds: &[Round], reported: u64, stored: u64, dropped: u64) -> Summary {
        let rates = |instr: bool| {
            rounds
                .iter()
                .filter(|r| r.instrumented == instr)
                .map(Round::rate)
                .collect::<Vec<_>>()
        };
        Summary {
            plain: median(rates(false)),
            instrumented: median(rates(true)),
            reported,
            stored,
            dropped,
        }
    }

    fn ratio(&self) -> f64 {
        self.instrumented / self.plain
    }

    fn lossless(&self) -> bool {
        self.stored == self.reported && self.dropped == 0
    }

    fn table(&self, args: &Options, rounds: &[Round]) -> String {
        let mut out = format!(
            "observer effect: UDP sender, {} B payload over loopback, {} s rounds, reporting every packet to {:?}\n\n",
            args.size, args.seconds, args.target
        );
        out.push_str("round  kind          packets/s   received\n");
        for (i, r) in rounds.iter().enumerate() {
            out.push_str(&format!(
                "{:>5}  {:<12} {:>10.0}   {:>7.1} %\n",
                i + 1,
                if r.instrumented {
                    "instrumented"
                } else {
                    "plain"
                },
                r.rate(),
                100.0 * r.received as f64 / r.sent.max(1) as f64
            ));
        }
        out.push_str(&format!(
            "\nmedian plain        {:>10.0} packets/s\nmedian instrumented {:>10.0} packets/s\nratio               {:>10.3}   (>= 0.95 wanted)\n",
            self.plain,
            self.instrumented,
            self.ratio()
        ));
        out.push_str(&format!(
            "reported {} packets, stored {}, dropped {}: {}\n",
            self.reported,
            self.stored,
            self.dropped,
            if self.lossless() { "zero loss" } else { "LOSS" }
        ));
        out
    }

    fn json(&self, args: &Options, rounds: &[Round]) -> serde_json::Value {
        serde_json::json!({
            "size": args.size,
            "seconds": args.seconds,
            "target": format!("{:?}", args.target).to_lowercase(),
            "rounds": rounds.iter().map(|r| serde_json::json!({
                "instrumented": r.instrumented,
                "packets_per_s": r.rate(),
                "sent": r.sent,
                "received": r.received,
            })).collect::<Vec<_>>(),
            "median_plain": self.plain,
            "median_instrumented": self.instrumented,
            "ratio": self.ratio(),
            "reported": self.reported,
            "stored": self.stored,
            "dropped": self.dropped,
            "lossless": self.lossless(),
        })
    }
}
