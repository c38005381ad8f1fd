//! `streamgauge inline source|sink`: attach, stream, detach on exit.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use client::spec::{ClientSpec, DestinationSpec, Window};
use client::Client;
use inline::{
    Agent, AgentCounters, AgentInfo, Control, ControlConfig, LoadOptions, Role, Settings, SinkHook,
    Streams, Summaries,
};

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

fn settings(args: &RunArgs) -> Result<Settings> {
    let mut s = Settings::default();
    if let Some(path) = &args.config {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        s.apply_toml(&text)
            .with_context(|| path.display().to_string())?;
    }
    s.set_all(args.set.iter().map(String::as_str))?;
    Ok(s)
}

fn client(args: &RunArgs, role: Role) -> Result<Option<(Client, Streams)>> {
    let Some(uri) = &args.collect else {
        return Ok(None);
    };
    let uri = client::config::uri::parse(uri).map_err(|e| anyhow::anyhow!("--collect: {e}"))?;
    let role_name = if role == Role::Source {
        "source"
    } else {
        "sink"
    };
    let spec = ClientSpec {
        app: "inline".into(),
        id: Some(
            args.id
                .clone()
                .unwrap_or_else(|| format!("{role_name}-{}", args.dev)),
        ),
        domain: Some(args.domain.clone()),
        destinations: vec![DestinationSpec {
            encoding: client::config::value::default_encoding(&uri),
            policy: client::config::value::default_policy(&uri),
            bufsize: client::config::value::DEFAULT_BUFSIZE,
            streams: None,
            instrumentation: true,
            backchannel: Default::default(),
            uri,
        }],
        default_window: Window::PerSample,
        ..ClientSpec::default()
    };
    let client = Client::new(spec)?;
    let streams = Streams::declare(&client)?;
    client.start()?;
    Ok(Some((client, streams)))
}

pub fn run(args: &RunArgs, role: Role) -> Result<bool> {
    let settings = settings(args)?;
    // The client's writer threads start here, in the current namespace.
    let out = client(args, role)?.map(|(c, s)| (c, Arc::new(s)));
    // Bound here, before --netns: the endpoint stays in the starting namespace.
    let listener = args
        .control
        .map(|a| std::net::TcpListener::bind(a).with_context(|| format!("--control {a}")))
        .transpose()?;
    if let Some(ns) = &args.netns {
        inline::netns::enter(ns)?;
    }
    let load = LoadOptions {
        max_flows: args.max_flows,
        ring_bytes: args.ring_bytes,
        sink_hook: args.sink_hook,
    };
    let mut agent = Agent::start(&args.dev, role, &settings, load).context("attaching")?;
    let summaries = Arc::new(Mutex::new(Summaries::default()));
    let counts = Arc::new(AgentCounters::default());
    if role == Role::Sink {
        let (streams, summaries, records, counts) = (
            out.as_ref().map(|o| o.1.clone()),
            summaries.clone(),
            !args.no_records,
            counts.clone(),
        );
        agent.read_records(move |m| {
            counts.records_read.fetch_add(1, Ordering::Relaxed);
            summaries
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .observe(&m);
            if let (Some(s), true) = (&streams, records) {
                if let Err(e) = s.record(&m) {
                    counts.inject_errors.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(error = %e, "inject failed");
                }
            }
        })?;
    }
    let control = match listener {
        Some(l) => {
            let info = AgentInfo {
                interface: args.dev.clone(),
                netns: args.netns.clone(),
                domain: args.collect.as_ref().map(|_| args.domain.clone()),
            };
            let config = ControlConfig {
                token_file: args.control_token_file.clone(),
                state_dir: Some(args.control_state_dir.clone()),
                tls: args
                    .control_tls_cert
                    .clone()
                    .zip(args.control_tls_key.clone()),
                plain_http: args.control_plain_http,
                allowed_hosts: args.allow_host.clone(),
            };
            let c = Control::start(l, &agent, info, counts, &config).context("--control")?;
            match c.fingerprint() {
                Some(f) => eprintln!(
                    "streamgauge inline {}: control API on {} (certificate SHA-256 {f})",
                    role_name(role),
                    c.url()
                ),
                None => eprintln!(
                    "streamgauge inline {}: control API on {}",
                    role_name(role),
                    c.url()
                ),
            }
            Some(c)
        }
        None => None,
    };
    eprintln!(
        "streamgauge inline {}: attached to {} (prog id {})",
        role_name(role),
        args.dev,
        agent.program().prog_id()
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let interval = Duration::from_secs_f64(args.interval.max(0.01));
    rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut hup = signal(SignalKind::hangup())?;
        let mut tick = tokio::time::interval(interval);
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => break,
                _ = term.recv() => break,
                _ = hup.recv() => match control.as_ref().map(Control::reload_tokens) {
                    Some(Err(e)) => tracing::error!(error = %e, "SIGHUP: control token file refused, the previous tokens stay in force"),
                    Some(Ok(())) => tracing::info!("SIGHUP: control token file re-read"),
                    None => {}
                },
                _ = tick.tick() => report(&agent, role, &args.dev, out.as_ref().map(|o| &*o.1), &summaries)?,
            }
        }
        anyhow::Ok(())
    })?;
    // Let the record thread drain what is queued before the last report.
    std::thread::sleep(inline::POLL_INTERVAL * 3);
    report(
        &agent,
        role,
        &args.dev,
        out.as_ref().map(|o| &*o.1),
        &summaries,
    )?;
    if let Some(c) = control {
        c.stop();
    }
    agent.stop().context("detaching")?;
    if let Some((client, _)) = out {
        client.close()?;
    }
    Ok(true)
}

fn role_name(role: Role) -> &'static str {
    if role == Role::Source {
        "source"
    } else {
        "sink"
    }
}

fn report(
    agent: &Agent,
    role: Role,
    dev: &str,
    streams: Option<&Streams>,
    summaries: &Mutex<Summaries>,
) -> Result<()> {
    let counters = agent.counters()?;
    let list = summaries.lock().unwrap_or_else(|e| e.into_inner()).take();
    match streams {
        Some(s) => {
            s.counters(dev, role, &counters)?;
            s.summaries(&list)?;
        }
        None => {
            for f in &list {
                println!(
                    "{} received={} lost={} loss_rate={:.4} delay_avg={:.6}s min={:.6}s max={:.6}s jitter={:.6}s",
                    f.flow, f.received, f.lost, f.loss_rate, f.delay_avg, f.delay_min, f.delay_max, f.jitter
                );
            }
        }
    }
    Ok(())
}
