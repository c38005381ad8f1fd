//! Running the proxy as a program: what `streamgauge proxy` does between
//! parsing its flags and exiting. [`Options`] are the command line's
//! settings, checked and turned into a [`ProxyConfig`] without I/O;
//! [`serve`] runs the proxy until SIGTERM or SIGINT, with the reference's
//! command lines on standard input.
//!
//! ```no_run
//! # fn demo() -> Result<(), proxy::run::RunError> {
//! let options = proxy::run::Options {
//!     upstream: Some("collector.example:3003".into()),
//!     ..proxy::run::Options::new("journal")
//! };
//! proxy::run::serve(options.resolve()?)?; // until SIGTERM or SIGINT
//! # Ok(()) }
//! ```

mod stdin;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use crate::{ForwardMode, FsyncPolicy, Proxy, ProxyConfig, ProxyError, QuotaPolicy};

/// Why the proxy could not be configured, started or run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A setting is invalid, or settings contradict each other; the
    /// message names the flag and what it wants.
    #[error("{0}")]
    Invalid(String),
    /// A system call failed (signal handlers, the async runtime).
    #[error("{context}")]
    Io {
        /// What was being done.
        context: &'static str,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
    /// The proxy did not start.
    #[error(transparent)]
    Start(#[from] ProxyError),
}

/// The command line's settings; each field is the flag of the same name
/// (`streamgauge proxy --help` says what they do).
#[derive(Debug, Clone)]
pub struct Options {
    /// `--listen`: the port clients connect to.
    pub listen: u16,
    /// `--bind`: addresses to listen on [default: :: and 0.0.0.0].
    pub bind: Vec<IpAddr>,
    /// `--dstaddress`: upstream host.
    pub dstaddress: String,
    /// `--dstport`: upstream port.
    pub dstport: u16,
    /// `--upstream`: HOST:PORT, instead of the two above.
    pub upstream: Option<String>,
    /// `--journal`: the journal directory.
    pub journal: PathBuf,
    /// `--fsync`.
    pub fsync: FsyncPolicy,
    /// `--quota`, bytes.
    pub quota: u64,
    /// `--quota-policy`.
    pub quota_policy: QuotaPolicy,
    /// `--segment-size`, bytes.
    pub segment_size: u64,
    /// `--forward`.
    pub forward: ForwardMode,
    /// `--control`: ADDR:PORT, a port on 127.0.0.1, or `none`.
    pub control: String,
    /// `--auth-file`: tokens of the control endpoint.
    pub auth_file: Option<PathBuf>,
    /// `--allow-host`: DNS names the control endpoint answers.
    pub allow_host: Vec<String>,
    /// `--max-connections`.
    pub max_connections: usize,
    /// `--max-connections-per-source`.
    pub max_connections_per_source: usize,
    /// `--proxy-id`.
    pub proxy_id: Option<String>,
}

impl Options {
    /// The defaults of `streamgauge proxy`, journaling into `journal`.
    pub fn new(journal: impl Into<PathBuf>) -> Options {
        let c = ProxyConfig::new(PathBuf::new(), String::new());
        Options {
            listen: 3003,
            bind: Vec::new(),
            dstaddress: "localhost".into(),
            dstport: 3003,
            upstream: None,
            journal: journal.into(),
            fsync: c.fsync,
            quota: c.quota,
            quota_policy: c.quota_policy,
            segment_size: c.segment_size,
            forward: c.forward,
            control: "127.0.0.1:3004".into(),
            auth_file: None,
            allow_host: Vec::new(),
            max_connections: c.max_connections,
            max_connections_per_source: c.max_connections_per_source,
            proxy_id: None,
        }
    }

    /// Validates and builds the proxy's settings (no I/O).
    pub fn resolve(&self) -> Result<ProxyConfig, RunError> {
        let upstream = match &self.upstream {
            Some(u) => {
                if u.rsplit_once(':')
                    .and_then(|(_, p)| p.parse::<u16>().ok())
                    .is_none()
                {
                    return Err(RunError::Invalid(format!(
                        "--upstream {u:?}: want HOST:PORT, e.g. collector.example:3003"
                    )));
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
            return Err(RunError::Invalid(format!(
                "the proxy would forward to itself: it listens on port {} and the upstream is {upstream}; \
                 move the proxy (e.g. -l 3005) or point it elsewhere (-a HOST -p PORT)",
                self.listen
            )));
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
        c.control = parse_control(&self.control).map_err(RunError::Invalid)?;
        c.auth_file = self.auth_file.clone();
        c.control_allowed_hosts = self.allow_host.clone();
        c.proxy_id = self.proxy_id.clone();
        c.max_connections = self.max_connections;
        c.max_connections_per_source = self.max_connections_per_source;
        c.validate().map_err(RunError::Invalid)?;
        Ok(c)
    }
}

/// Parses `--control`: `none`, a port (on 127.0.0.1) or an address.
pub fn parse_control(s: &str) -> Result<Option<SocketAddr>, String> {
    if s == "none" {
        return Ok(None);
    }
    if let Ok(port) = s.parse::<u16>() {
        return Ok(Some(SocketAddr::from(([127, 0, 0, 1], port))));
    }
    s.parse().map(Some).map_err(|e| {
        format!("--control {s:?}: want ADDR:PORT (e.g. 127.0.0.1:3004), a port, or 'none': {e}")
    })
}

/// Where the control endpoint's tokens are when the proxy made them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedTokens {
    /// The token file (`<journal>/control.tokens`).
    pub path: PathBuf,
    /// Whether this start created it (else an earlier start did).
    pub created: bool,
}

/// A proxy never serves its control endpoint open: one bound beyond
/// loopback without `--auth-file` gets `<journal>/control.tokens`, created
/// on first start (owner-only, one random token with the read and control
/// scopes) and kept for the next starts, as its token file. Returns where
/// it is, for the operator to be told; `None` when the endpoint is off, on
/// loopback, or has a token file.
pub fn secure_control(config: &mut ProxyConfig) -> Result<Option<CreatedTokens>, RunError> {
    let beyond_loopback = config.control.is_some_and(|a| !a.ip().is_loopback());
    if !beyond_loopback || config.auth_file.is_some() {
        return Ok(None);
    }
    let path = config.journal_dir.join("control.tokens");
    let init = httpkit::token_init::load_or_create(&path, "*", "read,control")
        .map_err(|e| RunError::Invalid(format!("{e} (or pass --auth-file FILE)")))?;
    config.auth_file = Some(path.clone());
    Ok(Some(CreatedTokens {
        path,
        created: init.created,
    }))
}

/// Runs the proxy until SIGTERM or SIGINT, applying the reference's
/// command lines typed on standard input; the journals stay for the next
/// start.
pub fn serve(config: ProxyConfig) -> Result<(), RunError> {
    // Every file and directory created from here on is owner-only.
    httpkit::secret::owner_only_from_now();
    let io = |context| move |source| RunError::Io { context, source };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(io("starting the async runtime"))?;
    runtime.block_on(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).map_err(io("installing SIGTERM handler"))?;
        let mut int = signal(SignalKind::interrupt()).map_err(io("installing SIGINT handler"))?;
        let proxy = Proxy::start(config).await?;
        stdin::spawn(proxy.handle());
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        tracing::info!("shutting down");
        proxy.shutdown().await;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_addresses() {
        assert_eq!(parse_control("none"), Ok(None));
        assert_eq!(
            parse_control("3004"),
            Ok(Some(SocketAddr::from(([127, 0, 0, 1], 3004))))
        );
        assert!(parse_control("nowhere").is_err());
    }

    #[test]
    fn a_control_endpoint_beyond_loopback_gets_a_token_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = Options::new(dir.path().join("j"));
        o.listen = 3005;
        let mut loopback = o.resolve().unwrap();
        assert_eq!(secure_control(&mut loopback).unwrap(), None);
        o.control = "0.0.0.0:0".into();
        let mut open = o.resolve().unwrap();
        let made = secure_control(&mut open).unwrap().unwrap();
        assert!(made.created);
        assert_eq!(open.auth_file.as_deref(), Some(made.path.as_path()));
        let again = secure_control(&mut o.resolve().unwrap()).unwrap().unwrap();
        assert!(!again.created, "kept for the next starts");
    }

    #[test]
    fn a_proxy_never_forwards_to_itself() {
        let mut o = Options::new("j");
        assert!(o.resolve().is_err(), "localhost:3003 from port 3003");
        o.listen = 3005;
        assert_eq!(o.resolve().unwrap().upstream, "localhost:3003");
        o.upstream = Some("no-port".into());
        assert!(o.resolve().is_err());
    }
}
