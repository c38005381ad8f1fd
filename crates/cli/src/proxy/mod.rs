//! `streamgauge proxy`: the durable store-and-forward proxy (an
//! oml2-proxy-server replacement), and `streamgauge proxy ctl`.

mod ctl;

use std::net::IpAddr;
use std::path::PathBuf;

use ::proxy::run::Options;
use ::proxy::{ForwardMode, FsyncPolicy, QuotaPolicy};
use anyhow::Result;
use clap::{Args, Subcommand};

pub const LONG_ABOUT: &str = include_str!("../../help/proxy.txt");

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
    #[arg(long, value_name = "POLICY", default_value = "interval:100")]
    pub fsync: FsyncPolicy,
    /// Most bytes all journals may hold (suffixes K, M, G, T or KiB, MiB, GiB, TiB).
    #[arg(long, value_name = "BYTES", default_value = "1GiB", value_parser = ::proxy::parse_bytes)]
    pub quota: u64,
    /// What to do when the quota is reached: refuse (stop reading from clients
    /// until forwarding frees space; nothing lost) or drop-oldest (delete the
    /// oldest unacknowledged segment; the lost bytes are logged and counted).
    #[arg(long, value_name = "POLICY", default_value = "refuse")]
    pub quota_policy: QuotaPolicy,
    /// Size at which a journal rolls over to a new segment file (the unit of freeing and dropping).
    #[arg(long, value_name = "BYTES", default_value = "8MiB", value_parser = ::proxy::parse_bytes)]
    pub segment_size: u64,
    /// auto: forward whenever the upstream is reachable; manual: start paused
    /// and forward after a resume command.
    #[arg(long, value_name = "MODE", default_value = "auto")]
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
    /// Token file for the control endpoint ('<pattern> <token> <scopes>' lines, see `streamgauge server --help`): 'read' may GET /status, 'control' may pause and resume. Without it, a control endpoint on loopback serves loopback clients only (and the reference's line protocol works); one bound beyond loopback creates <journal>/control.tokens on first start (owner-only, one random token with both scopes; its path is printed) and requires it.
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

impl From<&ProxyArgs> for Options {
    fn from(a: &ProxyArgs) -> Self {
        Options {
            listen: a.listen,
            bind: a.bind.clone(),
            dstaddress: a.dstaddress.clone(),
            dstport: a.dstport,
            upstream: a.upstream.clone(),
            journal: a.journal.clone(),
            fsync: a.fsync,
            quota: a.quota,
            quota_policy: a.quota_policy,
            segment_size: a.segment_size,
            forward: a.forward,
            control: a.control.clone(),
            auth_file: a.auth_file.clone(),
            allow_host: a.allow_host.clone(),
            max_connections: a.max_connections as usize,
            max_connections_per_source: a.max_connections_per_source as usize,
            proxy_id: a.proxy_id.clone(),
        }
    }
}

/// Runs the proxy until SIGTERM or SIGINT (or runs `ctl`).
pub fn run(args: &ProxyArgs) -> Result<bool> {
    if let Some(ProxyCommand::Ctl(c)) = &args.ctl {
        return ctl::run(c);
    }
    let mut config = Options::from(args).resolve()?;
    if let Some(t) = ::proxy::run::secure_control(&mut config)? {
        let done = if t.created { "created" } else { "uses" };
        eprintln!(
            "streamgauge proxy: the control endpoint listens beyond loopback without --auth-file: it {done} the token file {} (read and control scopes; pass --auth-file FILE for your own)",
            t.path.display()
        );
    }
    let level = ::server::run::config::log_level(args.debug_level);
    let logfile = args.logfile.as_ref().filter(|p| p.as_os_str() != "-");
    crate::logging::init(logfile, level)?;
    if args.resultfile.is_some() || args.size.is_some() {
        tracing::warn!("-r/--resultfile and -s/--size are oml2-proxy-server options without effect here: streams go to the --journal directory");
    }
    ::proxy::run::serve(config)?;
    Ok(true)
}
