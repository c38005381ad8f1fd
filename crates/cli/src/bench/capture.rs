//! `streamgauge bench capture`: its flags and help; the benchmark is
//! `benchmarks::capture`.

use anyhow::Result;
use clap::Args;

/// Long help of `streamgauge bench capture`.
pub const LONG_ABOUT: &str = "\
Measure live capture at the packet generator's maximum against
`tcpdump -s 64 -w` on the same interface and traffic, in the same run
(needs root, trafgen from netsniff-ng, tcpdump, ip).

Two network namespaces joined by a veth pair are created and deleted at
the end. trafgen sends UDP frames as fast as it can for --seconds; in the
other namespace one AF_PACKET TPACKET_V3 ring feeds the demultiplexer and
sessions the capture daemon runs, while tcpdump reads the same interface:

  HeaderOnly          one session, header-only pcap (snap 64)
  AnonIpfixCounters   one session, header-only pcap + Crypto-PAn on both
                      addresses + IPFIX flows to a file + counters
  Sessions256         256 counters-only sessions over 16 distinct filters

each at 64, 512 and 1500-byte frames. Reported: frames offered per second
(the capture interface's receive counter), captured/offered and kernel
drops for us and for tcpdump, our own drops, and the CPU seconds of our
capture thread and of tcpdump.";

/// Arguments of `streamgauge bench capture`.
#[derive(Debug, Args)]
pub struct CaptureBenchArgs {
    /// Seconds the generator runs per case and frame size.
    #[arg(long, value_name = "SECONDS", default_value_t = 3)]
    pub seconds: u64,
}

/// Runs every case; one line is printed per run.
pub fn run(args: &CaptureBenchArgs) -> Result<bool> {
    benchmarks::capture::run(args.seconds)?;
    Ok(true)
}
