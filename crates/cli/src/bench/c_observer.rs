//! `streamgauge bench c-observer`: its flags and help; the benchmark is
//! `benchmarks::c_observer`.

use anyhow::Result;
use benchmarks::c_observer::Options;
use clap::Args;

use super::c_libs::LibArgs;

/// Long help of `streamgauge bench c-observer`.
pub const LONG_ABOUT: &str = "\
Measure what reporting every packet through liboml2 costs a C UDP sender.

crates/client-ffi/bench/udp_observer.c, a C program written against
<oml2/omlc.h>, is compiled against our liboml2 (and the reference one) and
run with only --oml-collect (the client's default options) towards a
`streamgauge server` started as a separate process (SQLite in a temporary
directory). A receiver thread counts datagrams; the sender sends --size-byte
datagrams over loopback as fast as it can for --seconds per round, rounds
alternating uninstrumented / instrumented (one omlc_inject of (seq, bytes)
per packet), --rounds of each.

Reported per library: every round's packets/s, the median of each kind,
and the ratio instrumented / uninstrumented (target with our library: 0.95
or more); the CPU time of each thread of the C program (sender, receiver
udp-rx, the library's writer and sender threads) and of the server
process, also per reported packet, to show where the cycles go. Then the rows stored in the server's database are counted: with
our library every reported packet must be stored. The reference drops
samples when its small queue is full; its row count is shown for
information.

On a 2-core machine the client's writer, the server and the receiver
compete with the sender for CPU: the ratio includes that competition.";

/// Arguments of `streamgauge bench c-observer`.
#[derive(Debug, Args)]
pub struct CObserverArgs {
    /// Seconds per round.
    #[arg(long, value_name = "S", default_value_t = 3.0)]
    pub seconds: f64,
    /// Rounds of each kind (uninstrumented, instrumented), alternating.
    #[arg(long, value_name = "N", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,
    /// UDP payload bytes (8 to 65000).
    #[arg(long, value_name = "BYTES", default_value_t = 64,
          value_parser = clap::value_parser!(u32).range(8..=65_000))]
    pub size: u32,
    #[command(flatten)]
    pub libs: LibArgs,
}

/// Runs the benchmark; it prints each library's results.
pub fn run(a: &CObserverArgs) -> Result<bool> {
    benchmarks::c_observer::run(&Options {
        seconds: a.seconds,
        rounds: a.rounds,
        size: a.size,
        libs: a.libs.libraries(),
    })
}
