//! `streamgauge inline bench`: its flags; the benchmark itself is
//! `benchmarks::inline` (built with the `bench` feature).

use anyhow::Result;
use clap::Args;

/// Arguments of `streamgauge inline bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Seconds per phase (TCP phases: whole seconds, at least 1).
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Rounds; every round runs every phase of every placement.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// UDP payload bytes.
    #[arg(long, default_value_t = 64)]
    payload: usize,
    /// Header to insert: `both` (32 bytes), `delay` (24), `loss` (8), `pdm`
    /// (16) or `compact` (8, delay only). A UDP socket leaves 10 bytes of
    /// headroom in front of the IPv6 header on Ethernet, so only `loss` and
    /// `compact` are inserted without the kernel reallocating the packet's
    /// head (docs/benchmarks.md).
    #[arg(long, default_value = "both")]
    mode: String,
    /// Also run three calibration phases per sink hook (needs tcx, Linux ≥
    /// 6.6): `empty programs`, `header only` (the floor any in-line
    /// measurement has on this machine) and `measurement floor` (a header
    /// of --mode's length plus the kernel work an exact measurement with
    /// that layout needs: flow lookup and atomic sequence number at the
    /// source for loss and PDM, a clock read for a timestamp; clock read,
    /// batched record and ring-buffer output at the sink; none of our
    /// logic); fills the "ratio to header only" and "ratio to measurement
    /// floor" columns and, for `every packet`, the BPF ns per packet above
    /// the measurement floor. After the traffic it also times each program
    /// alone (as --test-run, 25 rounds) and ends with the in-line budgets
    /// judged on this run: met, "at floor" (missed, but within the
    /// budget's allowance of the same run's calibration phase, which does
    /// only the kernel's part) or missed.
    #[arg(long)]
    calibrate: bool,
    /// Where the receive side runs: `same-core`, `split` or `both`.
    #[arg(long, default_value = "both", value_parser = ["same-core", "split", "both"])]
    placement: String,
    /// Sink hook(s) to measure: `tc`, `xdp` or `both` (XDP phases need a
    /// driver with native XDP; veth has it).
    #[arg(long, default_value = "tc", value_parser = ["tc", "xdp", "both"])]
    sink_hook: String,
    /// Also measure TCP with iperf3 (server in the receiving namespace,
    /// client in the sending one, on the veth addresses only).
    #[arg(long)]
    tcp: bool,
    /// Instead of traffic: time each program alone, loaded but not
    /// attached, with the kernel's test runs (BPF_PROG_TEST_RUN) on fresh
    /// copies of one 64-byte UDP datagram: the empty program, header only,
    /// the measurement floor of --mode's layout, the real source on the
    /// path specialised for its settings and on its general path (after a
    /// live change), and each one's sink-side counterpart on what it
    /// made. --rounds rounds of 2000 runs per program. Free of the
    /// traffic phases' noise; leaves out the head reallocation of headers
    /// over 10 bytes (test packets have room in front).
    #[arg(long, conflicts_with_all = ["tcp", "calibrate"])]
    test_run: bool,
}

impl From<&BenchArgs> for benchmarks::inline::Config {
    fn from(a: &BenchArgs) -> Self {
        benchmarks::inline::Config {
            seconds: a.seconds,
            rounds: a.rounds,
            payload: a.payload,
            mode: a.mode.clone(),
            calibrate: a.calibrate,
            placement: a.placement.clone(),
            sink_hook: a.sink_hook.clone(),
            tcp: a.tcp,
            test_run: a.test_run,
        }
    }
}

/// Runs the benchmark; `Ok(false)` when its figures say something failed.
pub fn run(a: &BenchArgs) -> Result<bool> {
    benchmarks::inline::run(&a.into())
}
