//! Collection under hostile load (`bench-hostile`): a legitimate sender
//! streams into the server while, in turn, slowloris clients hold `--http`
//! connections, live tails are opened and abandoned, OMSP headers as large
//! as the limits allow are sent, and malformed OMSP connections pour in.
//!
//! For each attack: the sender's rate and its ratio to the same sender on
//! an unloaded server measured in the same run (the faster of two unloaded
//! runs, so noise cannot flatter a ratio), every row counted and checked in
//! the database, the server's peak resident memory and its memory and
//! descriptors a settling time after the attack, and the log lines the
//! attack made the server write. The server runs with its default limits
//! in a process of its own ([`child`]); the attackers run at nice 19 on one
//! thread, as clients on other machines would take none of its CPU.

mod attacks;
pub mod child;
mod memory;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use omsp::Content;

use crate::progress;
use crate::replay::Replay;
use crate::verify::Watcher;
use crate::workload::{self, Preset};
use attacks::{Kind, Plan, Progress};
use child::ServerProcess;

pub use attacks::Kind as Attack;
pub use child::{serve, SERVE_FLAG};

/// Sizes of one run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Rows the legitimate sender sends in each phase.
    pub rows: u64,
    /// Connections held to measure what one costs, then closed.
    pub memory_connections: u64,
    /// Slowloris connections held at once.
    pub slowloris: usize,
    /// Live tails opened and abandoned.
    pub tails: u64,
    /// Live tails in flight at once.
    pub tail_tasks: usize,
    /// Connections sending a maximal header.
    pub headers: u64,
    /// Maximal headers in flight at once.
    pub header_tasks: usize,
    /// Malformed OMSP connections.
    pub malformed: u64,
    /// Malformed connections in flight at once.
    pub malformed_tasks: usize,
    /// How long memory and descriptors are watched after each attack.
    pub settle: Duration,
    /// Copy of the server's log.
    pub log: Option<PathBuf>,
    /// The server's `header_nice` (its default if `None`): 0 serves
    /// connections whole on the collection runtime, for comparison.
    pub header_nice: Option<i32>,
    /// Only this attack (and no per-connection memory measurement), to
    /// look at one attack's figures quickly.
    pub only: Option<Attack>,
}

impl Options {
    /// The full run: thousands of each attack.
    pub fn full() -> Options {
        Options {
            rows: 1_000_000,
            memory_connections: 10_000,
            slowloris: 3000,
            tails: 10_000,
            tail_tasks: 1000,
            headers: 256,
            header_tasks: 64,
            malformed: 10_000,
            malformed_tasks: 200,
            settle: Duration::from_secs(30),
            log: None,
            header_nice: None,
            only: None,
        }
    }

    /// A quick run (about a fifth of everything, 10 s of settling).
    pub fn quick() -> Options {
        Options {
            rows: 200_000,
            memory_connections: 2000,
            slowloris: 1000,
            tails: 2000,
            tail_tasks: 250,
            headers: 64,
            header_tasks: 16,
            malformed: 2000,
            malformed_tasks: 100,
            settle: Duration::from_secs(10),
            log: None,
            header_nice: None,
            only: None,
        }
    }
}

/// Ratio to the unloaded rate the sender should keep under every attack.
pub const WANTED_RATIO: f64 = 0.8;

/// How close to its level before the attack resident memory must come
/// to count as returned: this much or 10 %, whichever is more.
const RSS_SLACK: u64 = 8 << 20;

/// What one phase measured.
#[derive(Debug, Clone)]
pub struct Phase {
    /// The attack.
    pub attack: &'static str,
    /// Attack connections made.
    pub connections: u64,
    /// The sender's rows per second.
    pub rate: f64,
    /// Rows found in the database (all sent, or the phase failed).
    pub stored: u64,
    /// Resident memory before, at its peak, and a settling time after.
    pub rss: [u64; 3],
    /// Seconds until memory was back within the slack, if it was.
    pub rss_back: Option<f64>,
    /// Descriptors before and after.
    pub fds: [u64; 2],
    /// Seconds until descriptors were back, if they were.
    pub fds_back: Option<f64>,
    /// Log lines during the attack, and while settling.
    pub log_lines: [u64; 2],
    /// The server's threads before, as the attack ended, and a settling
    /// time after (idle blocking threads end after tokio's keep-alive).
    pub threads: [u64; 3],
}

/// Runs every phase against a fresh server; returns whether every attack
/// kept the sender at [`WANTED_RATIO`] with all rows stored and memory and
/// descriptors returned.
pub fn run(opts: &Options) -> Result<bool> {
    if let Some(n) = opts.header_nice {
        // Read by the server processes this one starts (`child::serve`).
        std::env::set_var(child::HEADER_NICE_ENV, n.to_string());
    }
    let memory_ok = opts.only.is_some() || connection_costs(opts)?;
    let dir = tempfile::tempdir().context("creating a data directory")?;
    let srv = ServerProcess::start(dir.path(), opts.log.clone(), None)?;
    let attackers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .on_thread_start(|| ::server::http_runtime::set_thread_nice(19))
        .enable_all()
        .build()
        .context("starting the attackers' runtime")?;
    println!(
        "hostile load: server pid {} (OMSP {}, --http {}), default limits; {} rows per phase",
        srv.pid(),
        srv.omsp,
        srv.http,
        opts.rows
    );
    let mut phases = Vec::new();
    let unloaded = [0, 1]
        .iter()
        .map(|i| legit(&srv, dir.path(), &format!("unloaded{i}"), opts.rows))
        .collect::<Result<Vec<_>>>()?;
    let base = unloaded.iter().copied().fold(0.0, f64::max);
    println!(
        "unloaded: {:.0} and {:.0} rows/s; the faster is the reference",
        unloaded[0], unloaded[1]
    );
    let tail_path = format!(
        "/api/v1/domains/unloaded0/streams/{}/tail",
        Preset::Basic.schema().name
    );
    let attacks = [
        (Kind::Slowloris, opts.slowloris, opts.slowloris as u64),
        (Kind::Tails, opts.tail_tasks, opts.tails),
        (Kind::Headers, opts.header_tasks, opts.headers),
        (Kind::Malformed, opts.malformed_tasks, opts.malformed),
    ];
    for (i, (kind, tasks, total)) in attacks.into_iter().enumerate() {
        if opts.only.is_some_and(|only| only != kind) {
            continue;
        }
        let plan = Plan {
            kind,
            tasks,
            total,
            omsp: srv.omsp,
            http: srv.http,
            tail_path: tail_path.clone(),
        };
        let phase = attack(&srv, &attackers, dir.path(), plan, i, opts)?;
        print_phase(&phase, base);
        phases.push(phase);
    }
    let log_total = srv.log_lines();
    srv.stop()?;
    println!("\n{}", table(&phases, base, opts));
    println!("server log: {log_total} lines in all");
    Ok(memory_ok && phases.iter().all(|p| passed(p, base, opts.rows)))
}

/// What one connection costs, measured on a server of its own; whether
/// the memory came back after the connections closed.
fn connection_costs(opts: &Options) -> Result<bool> {
    let costs = memory::measure(opts.memory_connections, opts.settle, None)?;
    println!(
        "per connection ({} held, {} before): idle {:.1} KiB, stopped inside the header {:.1} KiB resident; \
         {} with them all inside their header, {} {} s after they closed ({})",
        costs.connections,
        mib(costs.rss[0]),
        costs.idle / 1024.0,
        costs.mid_header / 1024.0,
        mib(costs.rss[1]),
        mib(costs.rss[2]),
        opts.settle.as_secs(),
        back(costs.back)
    );
    Ok(costs.back.is_some())
}

/// One attack with the sender streaming through it, then the settling.
fn attack(
    srv: &ServerProcess,
    rt: &tokio::runtime::Runtime,
    dir: &Path,
    plan: Plan,
    index: usize,
    opts: &Options,
) -> Result<Phase> {
    let kind = plan.kind;
    println!(
        "\n== {}: {} connections, {} at once",
        kind.name(),
        plan.total,
        plan.tasks
    );
    let (fd0, rss0, log0, threads0) = (srv.fds(), srv.rss(), srv.log_lines(), srv.threads());
    srv.reset_peak();
    let progress = Arc::new(Progress::default());
    let engaged = plan.tasks.min(plan.total as usize) as u64;
    let handle = rt.spawn(attacks::run(plan, Arc::clone(&progress)));
    // The sender starts once every attack task has opened its first
    // connection.
    let deadline = Instant::now() + Duration::from_secs(60);
    while progress.made.load(Ordering::Relaxed) < engaged && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let sent = legit(srv, dir, &format!("attack{index}"), opts.rows);
    progress.stop.store(true, Ordering::Relaxed);
    rt.block_on(handle).context("attack task")?;
    let rate = sent?;
    let ended = Instant::now();
    let peak = srv.peak();
    let threads_peak = srv.threads();
    let log_attack = srv.log_lines() - log0;
    let slack = RSS_SLACK.max(rss0 / 10);
    let (mut rss_back, mut fds_back) = (None, None);
    while ended.elapsed() < opts.settle {
        let t = ended.elapsed().as_secs_f64();
        if rss_back.is_none() && srv.rss() <= rss0 + slack {
            rss_back = Some(t);
        }
        if fds_back.is_none() && srv.fds() <= fd0 {
            fds_back = Some(t);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(Phase {
        attack: kind.name(),
        connections: progress.made.load(Ordering::Relaxed),
        rate,
        stored: opts.rows,
        rss: [rss0, peak, srv.rss()],
        rss_back,
        fds: [fd0, srv.fds()],
        fds_back,
        log_lines: [log_attack, srv.log_lines() - log0 - log_attack],
        threads: [threads0, threads_peak, srv.threads()],
    })
}

/// Sends `rows` rows into `domain` and waits until all are committed;
/// checks every row is there; returns the rate from first byte to last
/// commit.
fn legit(srv: &ServerProcess, dir: &Path, domain: &str, rows: u64) -> Result<f64> {
    let schema = Preset::Basic.schema();
    let start = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
    let bytes = workload::encode_session(&schema, Content::Binary, domain, 0, rows, start)?;
    let replay = Replay::connect(srv.omsp, vec![bytes])?;
    let t0 = replay.start();
    let watcher = Watcher::open(
        &dir.join(format!("{domain}.sq3")),
        &schema,
        Duration::from_secs(60),
    )?;
    let bar = progress::bar(
        rows,
        "{prefix} [{bar:40}] {pos}/{len} rows {per_sec}",
        domain,
    );
    let done = watcher
        .wait_for(rows, Duration::from_secs(60), &bar)
        .with_context(|| format!("server log ends: {:#?}", srv.last_lines()))?;
    bar.finish_and_clear();
    replay.join()?;
    watcher.check(&schema, 1, rows, 997)?;
    Ok(rows as f64 / done.duration_since(t0).as_secs_f64())
}

fn passed(p: &Phase, base: f64, rows: u64) -> bool {
    p.rate / base >= WANTED_RATIO
        && p.stored == rows
        && p.rss_back.is_some()
        && p.fds_back.is_some()
}

fn mib(b: u64) -> String {
    format!("{:.0} MiB", b as f64 / f64::from(1 << 20))
}

fn back(t: Option<f64>) -> String {
    t.map_or_else(|| "not back".to_owned(), |t| format!("back after {t:.1} s"))
}

fn print_phase(p: &Phase, base: f64) {
    println!(
        "sender: {:.0} rows/s, ratio {:.2} to unloaded (≥ {WANTED_RATIO} wanted); {} rows stored, every one checked",
        p.rate,
        p.rate / base,
        p.stored
    );
    println!(
        "attack: {} connections; server RSS {} before, peak {}, {} after settling ({}); descriptors {} before, {} after ({}); log lines {} during, {} after",
        p.connections,
        mib(p.rss[0]),
        mib(p.rss[1]),
        mib(p.rss[2]),
        back(p.rss_back),
        p.fds[0],
        p.fds[1],
        back(p.fds_back),
        p.log_lines[0],
        p.log_lines[1]
    );
    println!(
        "server threads: {} before, {} as the attack ended, {} after settling",
        p.threads[0], p.threads[1], p.threads[2]
    );
}

/// The summary table (Markdown, as docs/benchmarks.md quotes it).
fn table(phases: &[Phase], base: f64, opts: &Options) -> String {
    let mut out = format!(
        "| attack | connections | sender rows/s | ratio | rows stored | RSS before / peak / +{} s | RSS back | fds before / after | log lines during / after |\n|---|---|---|---|---|---|---|---|---|\n",
        opts.settle.as_secs()
    );
    for p in phases {
        out.push_str(&format!(
            "| {} | {} | {:.0} | {:.2} | {} | {} / {} / {} | {} | {} / {} | {} / {} |\n",
            p.attack,
            p.connections,
            p.rate,
            p.rate / base,
            p.stored,
            mib(p.rss[0]),
            mib(p.rss[1]),
            mib(p.rss[2]),
            p.rss_back.map_or("no".to_owned(), |t| format!("{t:.1} s")),
            p.fds[0],
            p.fds[1],
            p.log_lines[0],
            p.log_lines[1]
        ));
    }
    out
}
