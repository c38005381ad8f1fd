//! Proxy settings, parsed and validated before anything is bound or opened.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// When journal writes are forced to stable storage (`--fsync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// After every append, before the data is acknowledged to the client.
    Always,
    /// At most this long after an append (the default, 100 ms).
    Interval(Duration),
    /// Never: the operating system writes back when it likes. A proxy crash
    /// (SIGKILL) loses nothing; a machine crash may lose recent data.
    Never,
}

impl Default for FsyncPolicy {
    fn default() -> FsyncPolicy {
        FsyncPolicy::Interval(Duration::from_millis(100))
    }
}

impl FromStr for FsyncPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<FsyncPolicy, String> {
        match s {
            "always" => Ok(FsyncPolicy::Always),
            "never" => Ok(FsyncPolicy::Never),
            _ => {
                let ms = s.strip_prefix("interval:").ok_or_else(|| {
                    format!("{s:?}: want 'always', 'never' or 'interval:MS' (e.g. interval:100)")
                })?;
                let ms: u64 = ms.parse().ok().filter(|&m| m > 0).ok_or_else(|| {
                    format!("{s:?}: the interval is a number of milliseconds > 0")
                })?;
                Ok(FsyncPolicy::Interval(Duration::from_millis(ms)))
            }
        }
    }
}

impl std::fmt::Display for FsyncPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FsyncPolicy::Always => f.write_str("always"),
            FsyncPolicy::Never => f.write_str("never"),
            FsyncPolicy::Interval(d) => write!(f, "interval:{}", d.as_millis()),
        }
    }
}

/// What happens when the journals reach `--quota` (`--quota-policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QuotaPolicy {
    /// Stop reading from clients until forwarding frees space: clients
    /// feel TCP backpressure, nothing is lost.
    #[default]
    Refuse,
    /// Delete the oldest unacknowledged segment; the lost bytes are counted
    /// and logged, and the affected stream continues in a new upstream session.
    DropOldest,
}

impl FromStr for QuotaPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<QuotaPolicy, String> {
        match s {
            "refuse" => Ok(QuotaPolicy::Refuse),
            "drop-oldest" => Ok(QuotaPolicy::DropOldest),
            _ => Err(format!("{s:?}: want 'refuse' or 'drop-oldest'")),
        }
    }
}

impl std::fmt::Display for QuotaPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            QuotaPolicy::Refuse => "refuse",
            QuotaPolicy::DropOldest => "drop-oldest",
        })
    }
}

/// When forwarding starts (`--forward`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ForwardMode {
    /// Forward whenever the upstream is reachable.
    #[default]
    Auto,
    /// Start paused; forward after a resume command.
    Manual,
}

impl FromStr for ForwardMode {
    type Err = String;

    fn from_str(s: &str) -> Result<ForwardMode, String> {
        match s {
            "auto" => Ok(ForwardMode::Auto),
            "manual" => Ok(ForwardMode::Manual),
            _ => Err(format!("{s:?}: want 'auto' or 'manual'")),
        }
    }
}

/// Parses a byte count: a number with an optional suffix `K`, `M`, `G`,
/// `T` (powers of 1000) or `KiB`, `MiB`, `GiB`, `TiB` (powers of 1024).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?}: want a number of bytes, e.g. 500M or 2GiB"))?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "k" | "KB" | "kB" => 1_000,
        "M" | "MB" => 1_000_000,
        "G" | "GB" => 1_000_000_000,
        "T" | "TB" => 1_000_000_000_000,
        "Ki" | "KiB" => 1 << 10,
        "Mi" | "MiB" => 1 << 20,
        "Gi" | "GiB" => 1 << 30,
        "Ti" | "TiB" => 1 << 40,
        u => {
            return Err(format!(
                "{s:?}: unknown unit {u:?} (use K, M, G, T, KiB, MiB, GiB, TiB)"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{s:?}: too large"))
}

/// Whether `id` may name a proxy (it becomes part of upstream session ids:
/// 1-64 bytes of `[A-Za-z0-9_.:-]`).
pub fn is_valid_proxy_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b))
}

/// Everything a [`crate::Proxy`] needs to run.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Addresses to accept clients on. Port 0 picks a free port once and
    /// reuses it for the later addresses.
    pub listen: Vec<SocketAddr>,
    /// Upstream collection point (server or proxy), `host:port`.
    pub upstream: String,
    /// Journal directory (one sub-directory per client stream).
    pub journal_dir: PathBuf,
    /// When journal data is forced to disk.
    pub fsync: FsyncPolicy,
    /// Most bytes all journals may hold together.
    pub quota: u64,
    /// What to do when the quota is reached.
    pub quota_policy: QuotaPolicy,
    /// Largest segment file; streams roll over to a new file after it.
    pub segment_size: u64,
    /// Forward at once, or wait for a resume command.
    pub forward: ForwardMode,
    /// HTTP control endpoint (`None`: no endpoint).
    pub control: Option<SocketAddr>,
    /// Token file for the control endpoint (`--auth-file`; lines with the
    /// `control` scope may pause and resume, `read` may see the status).
    /// `None`: loopback callers may do everything, others nothing.
    pub auth_file: Option<PathBuf>,
    /// DNS names the control endpoint answers to beyond loopback names and
    /// IP literals (`--allow-host`); any other `Host` gets 421, so a web
    /// page cannot pause the proxy through DNS rebinding.
    pub control_allowed_hosts: Vec<String>,
    /// This proxy's name in upstream session ids (`None`: generated once and
    /// kept in the journal directory).
    pub proxy_id: Option<String>,
    /// How long a client may take to send its header.
    pub header_timeout: Duration,
    /// How long the forwarder waits for the upstream's resume line before it
    /// falls back to plain forwarding (spec §3.6 says 5 s).
    pub resume_timeout: Duration,
    /// First and last delay between upstream connection attempts.
    pub backoff: (Duration, Duration),
    /// Decoder bounds for client streams.
    pub limits: omsp::Limits,
    /// Most client connections served at once; more are closed unread.
    pub max_connections: usize,
    /// Most client connections served at once from one address.
    pub max_connections_per_source: usize,
    /// How long a delivered stream of a resumable client (spec §3.6) is
    /// remembered, so that a client that missed the last acknowledgement
    /// (the proxy crashed) is told it has nothing left to send.
    pub resume_window: Duration,
}

impl ProxyConfig {
    /// Defaults for a journal directory and an upstream: listen on port
    /// 3003 (all addresses), fsync every 100 ms, 1 GiB quota, refuse when
    /// full, 8 MiB segments, forward automatically, control on
    /// 127.0.0.1:3004.
    pub fn new(journal_dir: impl Into<PathBuf>, upstream: impl Into<String>) -> ProxyConfig {
        ProxyConfig {
            listen: vec![
                SocketAddr::from(([0u16; 8], 3003)),
                SocketAddr::from(([0u8; 4], 3003)),
            ],
            upstream: upstream.into(),
            journal_dir: journal_dir.into(),
            fsync: FsyncPolicy::default(),
            quota: 1 << 30,
            quota_policy: QuotaPolicy::Refuse,
            segment_size: 8 << 20,
            forward: ForwardMode::Auto,
            control: Some(SocketAddr::from(([127, 0, 0, 1], 3004))),
            auth_file: None,
            control_allowed_hosts: Vec::new(),
            proxy_id: None,
            header_timeout: Duration::from_secs(30),
            resume_timeout: Duration::from_secs(5),
            backoff: (Duration::from_millis(100), Duration::from_secs(5)),
            limits: omsp::Limits::default(),
            max_connections: 4096,
            max_connections_per_source: 1024,
            resume_window: Duration::from_secs(15 * 60),
        }
    }

    /// Checks the settings (no I/O).
    pub fn validate(&self) -> Result<(), String> {
        if self.listen.is_empty() {
            return Err("no listen address".into());
        }
        if self.upstream.rsplit_once(':').is_none() {
            return Err(format!("upstream {:?}: want HOST:PORT", self.upstream));
        }
        if let Some(id) = &self.proxy_id {
            if !is_valid_proxy_id(id) {
                return Err(format!(
                    "proxy id {id:?}: want 1-64 bytes of [A-Za-z0-9_.:-]"
                ));
            }
        }
        if self.max_connections == 0 || self.max_connections_per_source == 0 {
            return Err("connection limits must be at least 1".into());
        }
        if self.segment_size < 4096 {
            return Err("segment size must be at least 4096 bytes".into());
        }
        if self.quota < 2 * self.segment_size {
            return Err(format!(
                "quota {} is less than two segments ({} bytes each): raise --quota or lower --segment-size",
                self.quota, self.segment_size
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_policies_and_sizes() {
        assert_eq!("always".parse(), Ok(FsyncPolicy::Always));
        assert_eq!(
            "interval:250".parse(),
            Ok(FsyncPolicy::Interval(Duration::from_millis(250)))
        );
        assert!("interval:0".parse::<FsyncPolicy>().is_err());
        assert!("sometimes".parse::<FsyncPolicy>().is_err());
        assert_eq!(parse_bytes("10M"), Ok(10_000_000));
        assert_eq!(parse_bytes("2GiB"), Ok(2 << 30));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert!(parse_bytes("12X").is_err());
        assert_eq!("drop-oldest".parse(), Ok(QuotaPolicy::DropOldest));
    }
}
