//! Running an agent as a program: what `streamgauge inline source|sink`
//! does once its flags are parsed (attach, stream or print, serve the
//! control API, detach on SIGINT or SIGTERM), and what `streamgauge
//! inline ctl` does with a running one.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use client::spec::{ClientSpec, DestinationSpec, Window};
use client::Client;

use crate::{
    Agent, AgentCounters, AgentInfo, Control, ControlConfig, LoadOptions, ProgramMaps, Role,
    Settings, Streams, Summaries,
};

/// A boxed cause.
type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why an agent could not run, or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A step failed; `context` says which (`attaching`, `--control ...`).
    #[error("{context}")]
    Step {
        /// The step.
        context: String,
        /// What went wrong.
        #[source]
        source: Cause,
    },
    /// An error of one of the agent's parts, as it is.
    #[error(transparent)]
    Other(Cause),
}

fn step<E: Into<Cause>>(context: impl Into<String>) -> impl FnOnce(E) -> RunError {
    let context = context.into();
    move |e| RunError::Step {
        context,
        source: e.into(),
    }
}

fn other<E: Into<Cause>>(e: E) -> RunError {
    RunError::Other(e.into())
}

/// The flags of `streamgauge inline source|sink` (see its help).
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// `--dev`: the interface.
    pub dev: String,
    /// `--netns`: its network namespace.
    pub netns: Option<String>,
    /// `--config`: a TOML file of settings.
    pub config: Option<PathBuf>,
    /// `--set KEY=VALUE` settings, over the file's.
    pub set: Vec<String>,
    /// `--max-flows` and `--ring-bytes`, `--sink-hook`.
    pub load: LoadOptions,
    /// `--collect`: where the streams go (none: summaries printed).
    pub collect: Option<String>,
    /// `--domain` of the streams.
    pub domain: String,
    /// `--id`: sender id [default: ROLE-IFACE].
    pub id: Option<String>,
    /// `--interval`, seconds between summaries and counter snapshots.
    pub interval: f64,
    /// `--no-records`: summaries and counters only.
    pub no_records: bool,
    /// `--control`: where to serve the control API.
    pub control: Option<SocketAddr>,
    /// The control API's settings (token file, TLS, state directory, hosts).
    pub control_config: ControlConfig,
}

fn role_name(role: Role) -> &'static str {
    if role == Role::Source {
        "source"
    } else {
        "sink"
    }
}

impl RunOptions {
    fn settings(&self) -> Result<Settings, RunError> {
        let mut s = Settings::default();
        if let Some(path) = &self.config {
            let text = std::fs::read_to_string(path)
                .map_err(step(format!("reading {}", path.display())))?;
            s.apply_toml(&text)
                .map_err(step(path.display().to_string()))?;
        }
        s.set_all(self.set.iter().map(String::as_str))
            .map_err(other)?;
        Ok(s)
    }

    fn client(&self, role: Role) -> Result<Option<(Client, Streams)>, RunError> {
        let Some(uri) = &self.collect else {
            return Ok(None);
        };
        let uri = client::config::uri::parse(uri).map_err(step("--collect"))?;
        let spec = ClientSpec {
            app: "inline".into(),
            id: Some(
                self.id
                    .clone()
                    .unwrap_or_else(|| format!("{}-{}", role_name(role), self.dev)),
            ),
            domain: Some(self.domain.clone()),
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
        let client = Client::new(spec).map_err(other)?;
        let streams = Streams::declare(&client).map_err(other)?;
        client.start().map_err(other)?;
        Ok(Some((client, streams)))
    }
}

/// Runs a `role` agent until SIGINT or SIGTERM (SIGHUP re-reads the
/// control token file); `say` gets the lines for the operator (where the
/// control API is, what was attached).
pub fn run(opts: &RunOptions, role: Role, say: impl Fn(String)) -> Result<(), RunError> {
    let settings = opts.settings()?;
    // The client's writer threads start here, in the current namespace.
    let out = opts.client(role)?.map(|(c, s)| (c, Arc::new(s)));
    // Bound here, before --netns: the endpoint stays in the starting namespace.
    let listener = opts
        .control
        .map(|a| std::net::TcpListener::bind(a).map_err(step(format!("--control {a}"))))
        .transpose()?;
    if let Some(ns) = &opts.netns {
        crate::netns::enter(ns).map_err(other)?;
    }
    let mut agent =
        Agent::start(&opts.dev, role, &settings, opts.load).map_err(step("attaching"))?;
    let summaries = Arc::new(Mutex::new(Summaries::default()));
    let counts = Arc::new(AgentCounters::default());
    if role == Role::Sink {
        let (streams, summaries, records, counts) = (
            out.as_ref().map(|o| o.1.clone()),
            summaries.clone(),
            !opts.no_records,
            counts.clone(),
        );
        agent
            .read_records(move |m| {
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
            })
            .map_err(other)?;
    }
    let name = role_name(role);
    let control = match listener {
        Some(l) => {
            let info = AgentInfo {
                interface: opts.dev.clone(),
                netns: opts.netns.clone(),
                domain: opts.collect.as_ref().map(|_| opts.domain.clone()),
            };
            let c = Control::start(l, &agent, info, counts, &opts.control_config)
                .map_err(step("--control"))?;
            match c.fingerprint() {
                Some(f) => say(format!(
                    "streamgauge inline {name}: control API on {} (certificate SHA-256 {f})",
                    c.url()
                )),
                None => say(format!(
                    "streamgauge inline {name}: control API on {}",
                    c.url()
                )),
            }
            Some(c)
        }
        None => None,
    };
    say(format!(
        "streamgauge inline {name}: attached to {} (prog id {})",
        opts.dev,
        agent.program().prog_id()
    ));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(other)?;
    let interval = Duration::from_secs_f64(opts.interval.max(0.01));
    let streams = out.as_ref().map(|o| &*o.1);
    rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).map_err(other)?;
        let mut hup = signal(SignalKind::hangup()).map_err(other)?;
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
                _ = tick.tick() => report(&agent, role, &opts.dev, streams, &summaries)?,
            }
        }
        Ok::<(), RunError>(())
    })?;
    // Let the record thread drain what is queued before the last report.
    std::thread::sleep(crate::POLL_INTERVAL * 3);
    report(&agent, role, &opts.dev, streams, &summaries)?;
    if let Some(c) = control {
        c.stop();
    }
    agent.stop().map_err(step("detaching"))?;
    if let Some((client, _)) = out {
        client.close().map_err(other)?;
    }
    Ok(())
}

/// Sends the counters and the flows' summaries to the streams, or prints
/// the summaries.
fn report(
    agent: &Agent,
    role: Role,
    dev: &str,
    streams: Option<&Streams>,
    summaries: &Mutex<Summaries>,
) -> Result<(), RunError> {
    let counters = agent.counters().map_err(other)?;
    let list = summaries.lock().unwrap_or_else(|e| e.into_inner()).take();
    match streams {
        Some(s) => {
            s.counters(dev, role, &counters).map_err(other)?;
            s.summaries(&list).map_err(other)?;
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

/// `streamgauge inline ctl`: the settings (after applying `set`, if any,
/// from the next packet on) and counters of the `role` program on `dev`,
/// as `KEY=VALUE` and `counter.NAME=VALUE` lines.
pub fn ctl(
    dev: &str,
    role: Role,
    netns: Option<&str>,
    set: Option<&[String]>,
) -> Result<Vec<String>, RunError> {
    if let Some(ns) = netns {
        crate::netns::enter(ns).map_err(other)?;
    }
    let maps = ProgramMaps::find(dev, role).map_err(other)?;
    let mut settings = Settings::from_config(&maps.config().map_err(other)?);
    if let Some(pairs) = set {
        settings
            .set_all(pairs.iter().map(String::as_str))
            .map_err(other)?;
        maps.set_config(&settings.to_config()).map_err(other)?;
    }
    let mut lines: Vec<String> = settings
        .to_pairs()
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for (k, v) in maps.counters().map_err(other)?.named(role) {
        lines.push(format!("counter.{k}={v}"));
    }
    Ok(lines)
}
