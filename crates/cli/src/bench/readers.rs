//! `streamgauge bench readers`: its flags and help; the benchmark is
//! `benchmarks::readers`.

use anyhow::Result;
use benchmarks::readers::Options;
use clap::Args;

/// Long help of `streamgauge bench readers`.
pub const LONG_ABOUT: &str = "\
Measure what readers of the query API cost ingestion, and the latency of a
live tail, with a collection server started in this process (SQLite, on
127.0.0.1, --http on a free port).

Ingestion: --rounds pairs of rounds, alternating, each storing --tuples
tuples from one client into the same stream: once alone, once while
--subscribers live tails (Server-Sent Events) follow that stream and a
loop of downsampled queries (points=2000) runs against it. A round's rate
is tuples over the time from the first byte sent to the moment all rows
are committed (seen by a separate connection). The ratio with/alone is
reported per pair, with the median. The subscribers and the query loop
stand for browsers on other machines: their threads run at nice 19, so
they take what the server leaves idle and the ratio measures what serving
them costs the server (whose HTTP threads run at --http-nice 10).

Tail latency: one client sends --latency-rate rows per second for
--latency-seconds, each row carrying its wall-clock send time; one tail
subscriber records, for every event, the time it arrived minus the time
the row was sent (an upper bound of commit-to-event: it includes the send
and the writer's commit interval). Median, p99 and maximum are reported.";

/// Arguments of `streamgauge bench readers`.
#[derive(Debug, Args)]
pub struct ReadersArgs {
    /// Tuples per ingestion round.
    #[arg(short = 'n', long, value_name = "N", default_value_t = 300_000)]
    pub tuples: u64,
    /// Pairs of rounds (alone, with readers).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub rounds: usize,
    /// Live-tail subscribers during the loaded rounds.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub subscribers: usize,
    /// Rows per second of the latency phase.
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub latency_rate: u64,
    /// Length of the latency phase.
    #[arg(long, value_name = "SECONDS", default_value_t = 5)]
    pub latency_seconds: u64,
}

/// Runs the benchmark; it prints the results as they come.
pub fn run(a: &ReadersArgs) -> Result<bool> {
    benchmarks::readers::run(&Options {
        tuples: a.tuples,
        rounds: a.rounds,
        subscribers: a.subscribers,
        latency_rate: a.latency_rate,
        latency_seconds: a.latency_seconds,
    })?;
    Ok(true)
}
