//! `streamgauge inline source|sink`: attach, stream, detach on exit.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use inline::run::RunOptions;
use inline::{ControlConfig, LoadOptions, Role, SinkHook};

pub const SOURCE_ABOUT: &str = "Attach the source program to the egress of --dev: matching IPv6 packets get a \
Destination Options header with the delay and/or loss option (spec/inline.md). Runs until SIGINT/SIGTERM, then \
detaches (through tcx, a killed agent's program leaves with it; a clsact filter left by a killed agent is replaced on the next start). Settings come from --config (TOML), \
then --set (command line wins); change them while running with `streamgauge inline ctl`.";

pub const SINK_ABOUT: &str = "Attach the sink program to the ingress of --dev: packets carrying our header are \
recorded and the header is removed. Records go to the measurement streams inline_delay, inline_loss, inline_flow \
(per-flow summaries every --interval) and inline_counters, sent to --collect; without --collect, summaries are \
printed. Runs until SIGINT/SIGTERM, then detaches.";

/// Arguments shared by `source` and `sink`.
#[derive(Debug, Args)]
#[command(after_help = super::keys_help())]
pub struct RunArgs {
    /// Interface to attach to.
    #[arg(long, value_name = "IFACE")]
    dev: String,
    /// Network namespace (name under /run/netns or a path) holding the interface; the collector is reached from the current one.
    #[arg(long, value_name = "NAME")]
    netns: Option<String>,
    /// TOML file of settings (flat KEY = VALUE).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Setting KEY=VALUE (repeatable; overrides the config file).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Entries of the per-flow table (source; load time).
    #[arg(long, default_value_t = 1000)]
    max_flows: u32,
    /// Bytes of the record ring buffer (sink; power of two; load time).
    #[arg(long, default_value_t = 1 << 22)]
    ring_bytes: u32,
    /// Where the sink runs: `tc` (tc ingress, any interface) or `xdp` (XDP in
    /// driver mode, before an skb exists; falls back to tc where the driver
    /// has no native XDP). Load time; docs/benchmarks.md compares them.
    #[arg(long, value_name = "tc|xdp", default_value = "tc", value_parser = parse_hook)]
    sink_hook: SinkHook,
    /// Collection URI for the streams (tcp:HOST:PORT, file:PATH).
    #[arg(long, value_name = "URI")]
    collect: Option<String>,
    /// Experiment domain for the streams.
    #[arg(long, default_value = "inline")]
    domain: String,
    /// Sender id for the streams (default: ROLE-IFACE).
    #[arg(long)]
    id: Option<String>,
    /// Seconds between per-flow summaries and counter snapshots.
    #[arg(long, default_value_t = 1.0)]
    interval: f64,
    /// Do not stream one row per measured packet (summaries and counters only).
    #[arg(long)]
    no_records: bool,
    /// Serve the HTTP control API (status, counters, settings; spec/inline-control.md) on ADDR:PORT, in the namespace the agent was started in.
    #[arg(long, value_name = "ADDR:PORT")]
    control: Option<std::net::SocketAddr>,
    /// Token file of the control API (`<domain-or-glob> <token> [read,control]`, as the capture daemon's); without it the agent uses STATE_DIR/control.tokens, created on first start with one control token. Re-read on SIGHUP.
    #[arg(long, value_name = "FILE", requires = "control")]
    control_token_file: Option<PathBuf>,
    /// PEM certificate chain of the control API (with --control-tls-key); without it the agent serves HTTPS with a self-signed certificate made on first start in STATE_DIR/tls/ and prints its SHA-256 fingerprint.
    #[arg(long, value_name = "FILE", requires_all = ["control", "control_tls_key"], conflicts_with = "control_plain_http")]
    control_tls_cert: Option<PathBuf>,
    /// PEM private key of --control-tls-cert (owner-only).
    #[arg(long, value_name = "FILE", requires = "control_tls_cert")]
    control_tls_key: Option<PathBuf>,
    /// Serve the control API without TLS; refused unless --control is a loopback address.
    #[arg(long, requires = "control")]
    control_plain_http: bool,
    /// Where the agent keeps the control token file and certificate it creates.
    #[arg(long, value_name = "DIR", default_value = inline::control::DEFAULT_STATE_DIR, requires = "control")]
    control_state_dir: PathBuf,
    /// Also answer control requests addressed to this DNS name (repeatable); without it only loopback names and IP addresses are served, so web pages cannot reach the API through DNS rebinding.
    #[arg(long = "allow-host", value_name = "NAME", requires = "control")]
    allow_host: Vec<String>,
}

/// `--sink-hook` (also used by `inline bench`).
pub fn parse_hook(s: &str) -> Result<SinkHook, String> {
    SinkHook::parse(s).ok_or_else(|| format!("{s:?}: expected tc or xdp"))
}

impl From<&RunArgs> for RunOptions {
    fn from(a: &RunArgs) -> Self {
        RunOptions {
            dev: a.dev.clone(),
            netns: a.netns.clone(),
            config: a.config.clone(),
            set: a.set.clone(),
            load: LoadOptions {
                max_flows: a.max_flows,
                ring_bytes: a.ring_bytes,
                sink_hook: a.sink_hook,
            },
            collect: a.collect.clone(),
            domain: a.domain.clone(),
            id: a.id.clone(),
            interval: a.interval,
            no_records: a.no_records,
            control: a.control,
            control_config: ControlConfig {
                token_file: a.control_token_file.clone(),
                state_dir: Some(a.control_state_dir.clone()),
                tls: a.control_tls_cert.clone().zip(a.control_tls_key.clone()),
                plain_http: a.control_plain_http,
                allowed_hosts: a.allow_host.clone(),
            },
        }
    }
}

/// Runs the agent until SIGINT or SIGTERM.
pub fn run(args: &RunArgs, role: Role) -> Result<bool> {
    inline::run::run(&args.into(), role, |line| eprintln!("{line}"))?;
    Ok(true)
}
