//! What readers of the query API cost the collection server, and how far a
//! live tail lags behind (`streamgauge bench readers`).

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ::server::{Server, ServerConfig};
use anyhow::{Context, Result};
use omsp::Content;

use crate::pg::PgTarget;
use crate::replay::Replay;
use crate::server::{PgServer, Watch};
use crate::workload::{self, Preset};

/// What to measure: the flags of `streamgauge bench readers`.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Tuples per ingestion round.
    #[arg(short = 'n', long, value_name = "N", default_value_t = 300_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub tuples: u64,
    /// Pairs of rounds (alone, with readers).
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub rounds: u64,
    /// Live-tail subscribers during the loaded rounds.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub subscribers: usize,
    /// Rows per second of the latency phase.
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub latency_rate: u64,
    /// Length of the latency phase.
    #[arg(long, value_name = "SECONDS", default_value_t = 5)]
    pub latency_seconds: u64,
    /// Nice value of the server's HTTP threads (0 to 19), as `streamgauge
    /// server --http-nice`.
    #[arg(long, value_name = "N", default_value_t = 19,
          value_parser = clap::value_parser!(i32).range(0..=19))]
    pub http_nice: i32,
    /// Store into a throwaway PostgreSQL cluster (started for the run, as
    /// user postgres when run as root) instead of SQLite.
    #[arg(long)]
    pub pg: bool,
    /// The events the subscribers ask for: batch (one `rows` event per
    /// batch the server reads, `batch=true`, as the manager's live plots)
    /// or row (one `row` event per row, the default of the tail API).
    #[arg(long, value_enum, value_name = "KIND", default_value_t = TailEvents::Batch)]
    pub tail_events: TailEvents,
    /// Pace of the query loop: 0 (a new query as soon as the last is
    /// answered), a number of milliseconds (at most one query per that
    /// long), or off (no query loop).
    #[arg(long, value_name = "MS|off", default_value = "0", value_parser = parse_every)]
    pub query_every: Pace,
    /// Threads at idle priority (SCHED_IDLE) that only spin during the
    /// loaded rounds, beside the readers: what taking the server's idle
    /// CPU costs ingestion by itself (shared caches, the clock of a busy
    /// processor), with no request served. A baseline: with
    /// --subscribers 0 --query-every off, the ratio no reader of idle
    /// time can beat.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub idle_spinners: usize,
}

/// The pace of the query loop (`--query-every`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// No query loop.
    Off,
    /// At most one query per this many milliseconds (0: no pause).
    Every(u64),
}

impl Pace {
    /// The pause between queries; `None`: no query loop.
    fn pause(self) -> Option<Duration> {
        match self {
            Pace::Off => None,
            Pace::Every(ms) => Some(Duration::from_millis(ms)),
        }
    }
}

/// `--query-every`: milliseconds, or `off`.
fn parse_every(s: &str) -> std::result::Result<Pace, String> {
    if s == "off" {
        return Ok(Pace::Off);
    }
    s.parse()
        .map(Pace::Every)
        .map_err(|_| format!("{s:?}: give milliseconds (0: no pause) or off"))
}

/// Events a tail subscriber asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TailEvents {
    /// One event per batch of rows (`batch=true`).
    Batch,
    /// One event per row.
    Row,
}

const DOMAIN: &str = "readers";

/// Nice value of the threads that play the readers' clients (browsers,
/// notebooks). In a deployment they run on other machines; here they share
/// the two cores with the server, and at the lowest priority they take
/// (almost) only what the server leaves idle, so the ratio measures what
/// serving them costs the server, not what parsing their events costs them.
const CLIENT_NICE: i32 = 19;

/// Runs the benchmark, printing the results as they come.
pub fn run(args: &Options) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let tmp = tempfile::tempdir().context("creating a temporary directory")?;
    let target = if args.pg {
        let pg = PgServer {
            temp: true,
            ..PgServer::default()
        };
        Some(PgTarget::open(&pg)?)
    } else {
        None
    };
    let mut config = ServerConfig::new(tmp.path());
    if let Some(pg) = &target {
        config.backend = ::server::Backend::Postgres(pg.opts.clone());
    }
    config.listen = vec![SocketAddr::from(([127, 0, 0, 1], 0))];
    config.http_listen = Some(SocketAddr::from(([127, 0, 0, 1], 0)));
    config.http_nice = args.http_nice;
    let server = runtime.block_on(Server::start(config))?;
    let addr = server.local_addrs()[0];
    let http = server.http_addr().context("no HTTP address")?;
    let result = measure(args, addr, http, tmp.path(), target.as_ref());
    runtime.block_on(server.shutdown());
    result
}

fn measure(
    args: &Options,
    addr: SocketAddr,
    http: SocketAddr,
    dir: &std::path::Path,
    pg: Option<&PgTarget>,
) -> Result<()> {
    let schema = Preset::Basic.schema();
    let start = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
    // Prime the stream so that tails have something to follow.
    let prime = workload::encode_session(&schema, Content::Binary, DOMAIN, 999, 10, start)?;
    let replay = Replay::connect(addr, vec![prime])?;
    replay.start();
    replay.join()?;
    let mut watcher = Watch::open(pg, dir, DOMAIN, &schema)?;
    let hidden = indicatif::ProgressBar::hidden();
    let mut total = 10;
    watcher.wait_for(total, Duration::from_secs(30), &hidden)?;
    let stream_path = format!("/api/v1/domains/{DOMAIN}/streams/{}", schema.name);
    println!(
        "ingestion into {}: {} tuples per round, {} pairs, {} subscribers ({} events) + {}, HTTP threads at nice {}",
        if pg.is_some() { "PostgreSQL" } else { "SQLite" },
        args.tuples, args.rounds, args.subscribers,
        if args.tail_events == TailEvents::Batch { "batched" } else { "per-row" },
        match args.query_every.pause() {
            None => "no query loop".to_owned(),
            Some(d) if d.is_zero() => "a points=2000 query loop".to_owned(),
            Some(d) => format!("a points=2000 query every {} ms", d.as_millis()),
        },
        args.http_nice
    );
    if args.idle_spinners > 0 {
        println!(
            "and {} threads spinning at idle priority (SCHED_IDLE) in the loaded rounds",
            args.idle_spinners
        );
    }
    println!(
        "{:>5} {:>14} {:>14} {:>7} {:>9} {:>8} {:>11} {:>11}",
        "pair",
        "alone rows/s",
        "loaded rows/s",
        "ratio",
        "events",
        "queries",
        "tail taken",
        "tail read"
    );
    let mut ratios = Vec::new();
    let mut client = 0;
    // Rates climb over the first rounds (caches, the database file
    // growing): one unmeasured round first, and the order within a pair
    // alternates (alone first, then loaded first), so a trend favours
    // neither side.
    let warm_up = [None, Some(false)];
    for pair in 0..=args.rounds {
        let mut rates = [0.0; 2];
        let mut events = 0;
        let mut queries = 0;
        // Rows the tails took from the writer's commits, and read back from
        // the table (PostgreSQL; a shared reader's and each lagging
        // subscriber's own), during the loaded round.
        let mut tail_rows = (0, 0);
        let order = match pair {
            0 => &warm_up,
            p if p % 2 == 1 => &[Some(false), Some(true)],
            _ => &[Some(true), Some(false)],
        };
        for loaded in order.iter().flatten().copied() {
            let i = usize::from(loaded);
            client += 1;
            let session = workload::encode_session(
                &schema,
                Content::Binary,
                DOMAIN,
                client,
                args.tuples,
                start,
            )?;
            let counted = (query::rows_from_commits(), query::rows_read_back());
            let readers = loaded.then(|| Readers::start(http, &stream_path, total, args));
            let replay = Replay::connect(addr, vec![session])?;
            let t0 = replay.start();
            replay.join()?;
            total += args.tuples;
            let done = watcher.wait_for(total, Duration::from_secs(60), &hidden)?;
            rates[i] = args.tuples as f64 / done.duration_since(t0).as_secs_f64();
            if let Some(r) = readers {
                (events, queries) = r.stop(args.tuples);
                tail_rows = (
                    query::rows_from_commits() - counted.0,
                    query::rows_read_back() - counted.1,
                );
            }
        }
        if pair == 0 {
            // The first downsampled query of a stream builds its tiles
            // from every row stored (once; later ones only add new rows).
            // A plot opened before the experiment's busy phase has paid
            // that already: so does the bench, here, outside the pairs.
            let built = agent()
                .get(&format!("http://{http}{stream_path}/rows?points=2000"))
                .call()
                .map(|mut r| r.body_mut().read_to_string().map(|_| ()));
            anyhow::ensure!(
                matches!(built, Ok(Ok(()))),
                "the first downsampled query failed: {built:?}"
            );
            println!("{:>5} {:>14.0} (warm-up, not counted)", "-", rates[0]);
            continue;
        }
        let ratio = rates[1] / rates[0];
        ratios.push(ratio);
        println!(
            "{:>5} {:>14.0} {:>14.0} {:>7.3} {:>9} {:>8} {:>11} {:>11}",
            pair, rates[0], rates[1], ratio, events, queries, tail_rows.0, tail_rows.1
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!("median ratio loaded/alone: {:.3}", ratios[ratios.len() / 2]);
    latency(args, addr, http)
}

/// How long a round waits for its subscribers' tails to open.
const OPEN_WAIT: Duration = Duration::from_secs(10);

/// Tail subscribers and a query loop, running until stopped.
struct Readers {
    /// Set to end the query loop.
    stop: Arc<AtomicBool>,
    /// Events received by all subscribers.
    events: Arc<AtomicU64>,
    /// Downsampled queries answered.
    queries: Arc<AtomicU64>,
    /// The query loop.
    looper: std::thread::JoinHandle<()>,
    /// The subscribers.
    tails: Vec<std::thread::JoinHandle<()>>,
    /// How many subscribers.
    subscribers: u64,
}

impl Readers {
    /// Starts the readers; returns once every subscriber's tail is open
    /// (or after [`OPEN_WAIT`]), so that the round measures ingestion with
    /// the subscribers following, not their joining: rows committed before
    /// a subscriber follows are read back from the table when it catches
    /// up, which is a cost of joining, paid once in a real experiment.
    fn start(http: SocketAddr, stream: &str, after: u64, args: &Options) -> Readers {
        let (subscribers, batched) = (args.subscribers, args.tail_events == TailEvents::Batch);
        let stop = Arc::new(AtomicBool::new(false));
        let opened = Arc::new(AtomicU64::new(0));
        let events = Arc::new(AtomicU64::new(0));
        let queries = Arc::new(AtomicU64::new(0));
        let mut tails = Vec::new();
        for _ in 0..subscribers {
            let base = format!("{stream}/tail");
            let events = Arc::clone(&events);
            let opened = Arc::clone(&opened);
            let stop = Arc::clone(&stop);
            // Each ends (and closes its connection) within a read timeout
            // of the loop being stopped, so no tail of this round is still
            // served during the next one. A subscriber closed as `lagged`
            // resumes where it was told, as a browser would, so the readers
            // keep loading the server for the whole round.
            tails.push(std::thread::spawn(move || {
                ::server::http_runtime::set_thread_nice(CLIENT_NICE);
                let mut after = after;
                while !stop.load(Ordering::Relaxed) {
                    let path = format!("{base}?after={after}&batch={batched}");
                    let mut resumed = None;
                    // Rows are counted, not parsed: the consumers stand for
                    // browsers on other machines, whose parsing costs this
                    // server nothing.
                    // A batched event hands each row's line on its own.
                    let r = follow(http, &path, &stop, |event, data| {
                        if event == b"row" || event == b"rows" {
                            events.fetch_add(1, Ordering::Relaxed);
                        } else if event == b"open" {
                            opened.fetch_add(1, Ordering::Relaxed);
                        } else if event == b"lagged" {
                            resumed = serde_json::from_slice::<serde_json::Value>(data)
                                .ok()
                                .and_then(|v| v["resume_after"].as_u64());
                        }
                        !stop.load(Ordering::Relaxed)
                    });
                    match (r, resumed) {
                        (Ok(()), Some(next)) => after = next,
                        _ => return,
                    }
                }
            }));
        }
        let url = format!("http://{http}{stream}/rows?points=2000");
        let (stop2, queries2) = (Arc::clone(&stop), Arc::clone(&queries));
        let every = args.query_every.pause();
        let looper = std::thread::spawn(move || {
            let Some(every) = every else { return };
            ::server::http_runtime::set_thread_nice(CLIENT_NICE);
            let agent = agent();
            while !stop2.load(Ordering::Relaxed) {
                let next = Instant::now() + every;
                if let Ok(mut r) = agent.get(&url).call() {
                    let _ = r.body_mut().read_to_string();
                    queries2.fetch_add(1, Ordering::Relaxed);
                }
                // Paced: wait for the next tick, watching for the stop.
                while Instant::now() < next && !stop2.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(10).min(every));
                }
            }
        });
        for _ in 0..args.idle_spinners {
            let stop = Arc::clone(&stop);
            tails.push(std::thread::spawn(move || {
                ::server::http_runtime::set_thread_nice(19);
                let mut x = 1u64;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..10_000 {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                }
            }));
        }
        let deadline = Instant::now() + OPEN_WAIT;
        while opened.load(Ordering::Relaxed) < subscribers as u64 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        Readers {
            stop,
            events,
            queries,
            looper,
            tails,
            subscribers: subscribers as u64,
        }
    }

    /// Waits (briefly) until the subscribers have seen the round's rows,
    /// stops the loop; returns events per subscriber and queries answered.
    fn stop(self, rows: u64) -> (u64, u64) {
        let want = rows * self.subscribers;
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.events.load(Ordering::Relaxed) < want && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.looper.join();
        for t in self.tails {
            let _ = t.join();
        }
        (
            self.events.load(Ordering::Relaxed) / self.subscribers.max(1),
            self.queries.load(Ordering::Relaxed),
        )
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into()
}

/// Reads the tail at `path` and hands each event's type and `data:` line to
/// `each` until it says stop, the server ends the stream, or `stop` is set
/// (checked every [`POLL`] while no data arrives). `each` is first handed
/// the type `open` (and no data) when the server has answered 200: the
/// tail is being followed.
///
/// A plain HTTP/1.0 request on a socket with a read timeout rather than an
/// HTTP client: the response is then the bare event stream (no chunked
/// framing), and the subscriber can notice `stop` and close its connection
/// while the server has nothing to send. Lines are found in the socket's
/// bytes where they lie, without a copy per line: the subscribers stand
/// for browsers on other machines, and on this one every cycle they spend
/// is a cycle the measured server loses.
fn follow(
    http: SocketAddr,
    path: &str,
    stop: &AtomicBool,
    mut each: impl FnMut(&[u8], &[u8]) -> bool,
) -> Result<()> {
    const POLL: Duration = Duration::from_millis(100);
    let mut sock = TcpStream::connect(http)?;
    write!(sock, "GET {path} HTTP/1.0\r\nHost: {http}\r\n\r\n")?;
    sock.set_read_timeout(Some(POLL))?;
    let mut buf = vec![0u8; 256 * 1024];
    let (mut start, mut end) = (0, 0);
    let mut event = Vec::new();
    let mut in_body = false;
    loop {
        while let Some(n) = memchr::memchr(b'\n', &buf[start..end]) {
            let line = &buf[start..start + n];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            start += n + 1;
            if !in_body {
                if let Some(status) = line.strip_prefix(b"HTTP/") {
                    let status = String::from_utf8_lossy(status);
                    anyhow::ensure!(
                        status.split_whitespace().nth(1) == Some("200"),
                        "GET {path}: HTTP/{status}"
                    );
                    if !each(b"open", b"") {
                        return Ok(());
                    }
                }
                in_body = line.is_empty();
            } else if let Some(name) = line.strip_prefix(b"event:") {
                event.clear();
                event.extend_from_slice(name.trim_ascii());
            } else if let Some(data) = line.strip_prefix(b"data:") {
                if !each(&event, data.trim_ascii()) {
                    return Ok(());
                }
            }
        }
        // Keep the partial line; make room for more.
        buf.copy_within(start..end, 0);
        end -= start;
        start = 0;
        if end == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match std::io::Read::read(&mut sock, &mut buf[end..]) {
            Ok(0) => return Ok(()),
            Ok(n) => end += n,
            Err(e) if is_timeout(&e) => {
                if stop.load(Ordering::Relaxed) {
                    return Ok(());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The tail latency phase.
fn latency(args: &Options, addr: SocketAddr, http: SocketAddr) -> Result<()> {
    let domain = "readers_latency";
    let mut sock = TcpStream::connect(addr)?;
    sock.set_nodelay(true)?;
    let start = now_secs() as i64;
    write!(
        sock,
        "protocol: 5\ndomain: {domain}\nstart-time: {start}\nsender-id: lat\napp-name: bench\n\
         schema: 1 lat_m sent:double\ncontent: text\n\n0\t1\t0\t{}\n",
        now_secs()
    )?;
    // Wait until the stream exists, then subscribe after its first row.
    let info = format!("http://{http}/api/v1/domains/{domain}/streams/lat_m");
    let deadline = Instant::now() + Duration::from_secs(10);
    while agent().get(&info).call().is_err() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the latency stream never appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let total = args.latency_rate * args.latency_seconds;
    let path = format!("/api/v1/domains/{domain}/streams/lat_m/tail?after=1");
    let collector = std::thread::spawn(move || {
        let mut lags = Vec::with_capacity(total as usize);
        let never = AtomicBool::new(false);
        let _ = follow(http, &path, &never, |_, data| {
            let arrived = now_secs();
            if let Some(sent) = serde_json::from_slice::<serde_json::Value>(data)
                .ok()
                .and_then(|v| v["sent"].as_f64())
            {
                lags.push(arrived - sent);
            }
            (lags.len() as u64) < total
        });
        lags
    });
    std::thread::sleep(Duration::from_millis(300));
    let period = Duration::from_secs_f64(1.0 / args.latency_rate.max(1) as f64);
    let t0 = Instant::now();
    for seq in 1..=total {
        let due = t0 + period * seq as u32;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        writeln!(
            sock,
            "{}\t1\t{seq}\t{}",
            t0.elapsed().as_secs_f64(),
            now_secs()
        )?;
    }
    let mut lags = collector
        .join()
        .map_err(|_| anyhow::anyhow!("tail thread panicked"))?;
    drop(sock);
    anyhow::ensure!(!lags.is_empty(), "the tail delivered no rows");
    lags.sort_by(f64::total_cmp);
    let pick = |q: f64| lags[((lags.len() - 1) as f64 * q).round() as usize] * 1e3;
    println!(
        "tail latency (send to event), {} of {} rows: median {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        lags.len(),
        total,
        pick(0.5),
        pick(0.99),
        pick(1.0)
    );
    Ok(())
}
