//! `streamgauge bench readers`: its flags and help; the benchmark is
//! `benchmarks::readers`.

use anyhow::Result;
use benchmarks::readers::Options;
use clap::{Args, ValueEnum};

/// Long help of `streamgauge bench readers`.
pub const LONG_ABOUT: &str = include_str!("../../help/bench-readers.txt");

/// Arguments of `streamgauge bench readers`.
#[derive(Debug, Args)]
pub struct ReadersArgs {
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

/// `--query-every`: milliseconds, or `off`.
fn parse_every(s: &str) -> Result<Pace, String> {
    if s == "off" {
        return Ok(Pace::Off);
    }
    s.parse()
        .map(Pace::Every)
        .map_err(|_| format!("{s:?}: give milliseconds (0: no pause) or off"))
}

/// Events a tail subscriber asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TailEvents {
    /// One event per batch of rows (`batch=true`).
    Batch,
    /// One event per row.
    Row,
}

/// Runs the benchmark; it prints the results as they come.
pub fn run(a: &ReadersArgs) -> Result<bool> {
    benchmarks::readers::run(&Options {
        tuples: a.tuples,
        rounds: a.rounds as usize,
        subscribers: a.subscribers,
        latency_rate: a.latency_rate,
        latency_seconds: a.latency_seconds,
        http_nice: a.http_nice,
        pg: a.pg,
        batched: a.tail_events == TailEvents::Batch,
        query_every: match a.query_every {
            Pace::Off => None,
            Pace::Every(ms) => Some(std::time::Duration::from_millis(ms)),
        },
        idle_spinners: a.idle_spinners,
    })?;
    Ok(true)
}
