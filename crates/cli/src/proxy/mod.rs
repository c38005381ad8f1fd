//! `streamgauge proxy`: the durable store-and-forward proxy (an
//! oml2-proxy-server replacement), and `streamgauge proxy ctl`.

mod ctl;
mod stdin;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use ::proxy::{ForwardMode, FsyncPolicy, Proxy, ProxyConfig, QuotaPolicy};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};

pub const LONG_ABOUT: &str = "\
Accept measurement streams from OML clients like a collection server, write
every tuple to an append-only journal on disk before forwarding it, and
forward each stream to the upstream collection server (or another proxy)
whenever it is reachable. Clients need no change; stock liboml2 and oml4py
clients included.

Towards the upstream every stream is a resumable session (spec/omsp.md
section 3.6): the upstream says where to resume and acknowledges what it
has committed, and only acknowledged data leaves the journal. An upstream
outage, a proxy crash (even SIGKILL) or a reboot therefore loses and
duplicates nothing: on restart the proxy reloads its journals and carries
on. An upstream that does not answer the resume line within 5 s (a stock
oml2-server) gets plain forwarding: data in flight when such a connection
breaks may be lost. Clients that speak section 3.6 themselves get the
resume line and acknowledgements from the proxy, so nothing is lost on
their side either; stock clients get nothing back.

Forwarding can be paused and resumed: type OMLPROXY-PAUSE or
OMLPROXY-RESUME on standard input (as with the reference proxy), send the
same lines to the control port, or use HTTP on the control port
(GET /status, POST /pause, POST /resume), e.g. with
`streamgauge proxy ctl pause`. With --forward manual the proxy starts
paused, as the reference did.

The journals are bounded by --quota; when full, --quota-policy refuse
(default) stops reading from clients (TCP backpressure, nothing lost) and
drop-oldest deletes the oldest unacknowledged data (counted and logged).
SIGTERM or SIGINT stop the proxy cleanly; the journals stay for the next
start. See docs/proxy.md for the guarantees.";

/// Arguments of `streamgauge proxy`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ProxyArgs {
    #[command(subcommand)]
    pub ctl: Option<ProxyCommand>,
    /// TCP port clients connect to (0 picks a free one; the log says which).
    #[arg(short = 'l', long, value_name = "PORT", default_value_t = 3003)]
    pub listen: u16,
    /// Address to listen on, IPv4 or IPv6; repeat for several [default: :: and 0.0.0.0].
    #[arg(long, value_name = "ADDR")]
    pub bind: Vec<IpAddr>,
    /// Upstream host: a collection server or another proxy (as in oml2-proxy-server).
    #[arg(short = 'a', long, value_name = "HOST", default_value = "localhost")]
    pub dstaddress: String,
    /// Upstream port (as in oml2-proxy-server).
    #[arg(short = 'p', long, value_name = "PORT", default_value_t = 3003)]
    pub dstport: u16,
    /// Upstream as HOST:PORT (instead of --dstaddress and --dstport).
    #[arg(long, value_name = "HOST:PORT", conflicts_with_all = ["dstaddress", "dstport"])]
    pub upstream: Option<String>,
    /// Journal directory: one sub-directory per client stream; created if missing.
    #[arg(
        short = 'j',
        long,
        value_name = "DIR",
        default_value = "streamgauge-journal"
    )]
    pub journal: PathBuf,
    /// When journal writes are forced to disk: always (before every acknowledgement),
    /// interval:MS (at most MS milliseconds later), or never (the system decides;
    /// survives a proxy crash, not a machine crash).
    #[arg(long, value_name = "POLICY", default_value = "interval:100", value_parser = parse_fsync)]
    pub fsync: FsyncPolicy,
    /// Most bytes all journals may hold (suffixes K, M, G, T or KiB, MiB, GiB, TiB).
    #[arg(long, value_name = "BYTES", default_value = "1GiB", value_parser = parse_size)]
    pub quota: u64,
    /// What to do when the quota is reached: refuse (stop reading from clients
    /// until forwarding frees space; nothing lost) or drop-oldest (delete the
    /// oldest unacknowledged segment; the lost bytes are logged and counted).
    #[arg(long, value_name = "POLICY", default_value = "refuse", value_parser = parse_quota_policy)]
    pub quota_policy: QuotaPolicy,
    /// Size at which a journal rolls over to a new segment file (the unit of freeing and dropping).
    #[arg(long, value_name = "BYTES", default_value = "8MiB", value_parser = parse_size)]
    pub segment_size: u64,
    /// auto: forward whenever the upstream is reachable; manual: start paused
    /// and forward after a resume command.
    #[arg(long, value_name = "MODE", default_value = "auto", value_parser = parse_forward)]
    pub forward: ForwardMode,
    /// Control endpoint: HTTP (GET /status, POST /pause, POST /resume) and the
    /// reference's command lines; ADDR:PORT, a port on 127.0.0.1, or 'none'.
    #[arg(
        short = 'c',
        long,
        value_name = "ADDR",
        default_value = "127.0.0.1:3004"
    )]
    pub control: String,
    /// Token file for the control endpoint ('<pattern> <token> <scopes>' lines, see `streamgauge server --help`): 'read' may GET /status, 'control' may pause and resume. Without it only loopback clients may use the endpoint, and the reference's line protocol works.
    #[arg(long, value_name = "FILE")]
    pub auth_file: Option<PathBuf>,
    /// Also answer control requests addressed to this DNS name (repeatable); without it only loopback names (localhost) and IP addresses are served, so web pages cannot reach the control endpoint through DNS rebinding.
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_host: Vec<String>,
    /// Serve at most N client connections at once; more are closed unread, counted in the status document (connections.refused) and logged once per 10 s.
    #[arg(long, value_name = "N", default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Serve at most N client connections at once from one address (a NAT counts as one).
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections_per_source: u32,
    /// Name of this proxy in upstream session ids [default: generated once and
    /// kept in the journal directory].
    #[arg(long, value_name = "ID")]
    pub proxy_id: Option<String>,
    /// Log to this file instead of standard error ('-' = standard error).
    #[arg(long, value_name = "FILE")]
    pub logfile: Option<PathBuf>,
    /// Log level: -2 error, -1 warning, 0 info, 1 or more debug.
    #[arg(
        short = 'd',
        long,
        value_name = "LEVEL",
        allow_negative_numbers = true,
        default_value_t = 0
    )]
    pub debug_level: i32,
    /// Accepted for oml2-proxy-server compatibility and ignored (see --journal).
    #[arg(short = 'r', long, value_name = "NAME", hide = true)]
    pub resultfile: Option<String>,
    /// Accepted for oml2-proxy-server compatibility and ignored (see --segment-size).
    #[arg(short = 's', long, value_name = "BYTES", hide = true)]
    pub size: Option<String>,
}

/// `streamgauge proxy ctl`.
#[derive(Debug, Subcommand)]
pub enum ProxyCommand {
    /// Pause, resume, or show the status of a running proxy through its control endpoint.
    Ctl(ctl::CtlArgs),
}

fn parse_fsync(s: &str) -> Result<FsyncPolicy, String> {
    s.parse()
}

fn parse_size(s: &str) -> Result<u64, String> {
    ::proxy::parse_bytes(s)
}

fn parse_quota_policy(s: &str) -> Result<QuotaPolicy, String> {
    s.parse()
}

fn parse_forward(s: &str) -> Result<ForwardMode, String> {
    s.parse()
}

/// Parses `--control`: `none`, a port (on 127.0.0.1) or an address.
pub fn parse_control(s: &str) -> Result<Option<SocketAddr>> {
    if s == "none" {
        return Ok(None);
    }
    if let Ok(port) = s.parse::<u16>() {
        return Ok(Some(SocketAddr::from(([127, 0, 0, 1], port))));
    }
    s.parse().map(Some).with_context(|| {
        format!("--control {s:?}: want ADDR:PORT (e.g. 127.0.0.1:3004), a port, or 'none'")
    })
}

impl ProxyArgs {
    /// Validates and builds the proxy's settings (no I/O).
    fn resolve(&self) -> Result<ProxyConfig> {
        let upstream = match &self.upstream {
            Some(u) => {
                if u.rsplit_once(':')
                    .and_then(|(_, p)| p.parse::<u16>().ok())
                    .is_none()
                {
                    bail!("--upstream {u:?}: want HOST:PORT, e.g. collector.example:3003");
                }
                u.clone()
            }
            None if self.dstaddress.contains(':') => {
                format!("[{}]:{}", self.dstaddress, self.dstport)
            }
            None => format!("{}:{}", self.dstaddress, self.dstport),
        };
        let (host, port) = upstream.rsplit_once(':').unwrap_or((&upstream, ""));
        let local = matches!(
            host.trim_matches(|c| c == '[' || c == ']'),
            "localhost" | "127.0.0.1" | "::1" | "0.0.0.0" | "::"
        );
        if local && port.parse() == Ok(self.listen) {
            bail!(
                "the proxy would forward to itself: it listens on port {} and the upstream is {upstream}; \
                 move the proxy (e.g. -l 3005) or point it elsewhere (-a HOST -p PORT)",
                self.listen
            );
        }
        let mut c = ProxyConfig::new(&self.journal, upstream);
        c.listen = if self.bind.is_empty() {
            vec![
                SocketAddr::from(([0u16; 8], self.listen)),
                SocketAddr::from(([0u8; 4], self.listen)),
            ]
        } else {
            self.bind
                .iter()
                .map(|&ip| SocketAddr::new(ip, self.listen))
                .collect()
        };
        c.fsync = self.fsync;
        c.quota = self.quota;
        c.quota_policy = self.quota_policy;
        c.segment_size = self.segment_size;
        c.forward = self.forward;
        c.control = parse_control(&self.control)?;
        c.auth_file = self.auth_file.clone();
        c.control_allowed_hosts = self.allow_host.clone();
        c.proxy_id = self.proxy_id.clone();
        c.max_connections = self.max_connections as usize;
        c.max_connections_per_source = self.max_connections_per_source as usize;
        c.validate().map_err(anyhow::Error::msg)?;
        Ok(c)
    }
}

/// Runs the proxy until SIGTERM or SIGINT (or runs `ctl`).
pub fn run(args: &ProxyArgs) -> Result<bool> {
    if let Some(ProxyCommand::Ctl(c)) = &args.ctl {
        return ctl::run(c);
    }
    let config = args.resolve()?;
    let level = match args.debug_level {
        i32::MIN..=-2 => tracing::Level::ERROR,
        -1 => tracing::Level::WARN,
        0 => tracing::Level::INFO,
        _ => tracing::Level::DEBUG,
    };
    let logfile = args.logfile.as_ref().filter(|p| p.as_os_str() != "-");
    crate::server::init_logging(logfile, level)?;
    if args.resultfile.is_some() || args.size.is_some() {
        tracing::warn!("-r/--resultfile and -s/--size are oml2-proxy-server options without effect here: streams go to the --journal directory");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).context("installing SIGTERM handler")?;
        let mut int = signal(SignalKind::interrupt()).context("installing SIGINT handler")?;
        let proxy = Proxy::start(config).await?;
        stdin::spawn(proxy.handle());
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        tracing::info!("shutting down");
        proxy.shutdown().await;
        Ok(true)
    })
}
