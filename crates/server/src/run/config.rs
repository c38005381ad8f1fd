//! `streamgauge server`'s settings: the command line (and environment)
//! over the configuration file over the defaults, validated before
//! anything is bound or opened.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use store::postgres::{Partitioning, Uint64Layout};

use super::file::FileConfig;
use super::http::HttpOptions;
use super::limits::LimitOptions;
use super::privileges::Identity;
use super::security::SecurityOptions;
use super::{parse, RunError};
use crate::{PgOptions, ServerConfig, DEFAULT_PORT};

/// Storage back ends, as named on the command line and in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// Embedded SQLite, one file per domain.
    Sqlite,
    /// PostgreSQL, one database per domain.
    Postgresql,
}

impl std::str::FromStr for BackendKind {
    type Err = String;

    /// `sqlite` or `postgresql`, in any case.
    fn from_str(v: &str) -> Result<Self, String> {
        match v.to_ascii_lowercase().as_str() {
            "sqlite" => Ok(BackendKind::Sqlite),
            "postgresql" => Ok(BackendKind::Postgresql),
            _ => Err(format!("invalid variant: {v}")),
        }
    }
}

/// The settings given on the command line (or through the environment);
/// `None` (or empty, or `false`) leaves a setting to the file or the
/// default. Each field is the flag of the same name.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--listen`: TCP port.
    pub listen: Option<u16>,
    /// `--bind`: addresses to listen on.
    pub bind: Vec<IpAddr>,
    /// `--data-dir` (or `OML_SQLITE_DIR`).
    pub data_dir: Option<PathBuf>,
    /// `--backend`.
    pub backend: Option<BackendKind>,
    /// `--pg-host`.
    pub pg_host: Option<String>,
    /// `--pg-port`.
    pub pg_port: Option<u16>,
    /// `--pg-user`.
    pub pg_user: Option<String>,
    /// `--pg-pass` (or `PGPASSWORD`).
    pub pg_pass: Option<String>,
    /// `--pg-connect`: extra libpq parameters.
    pub pg_connect: Option<String>,
    /// `--pg-uint64`.
    pub pg_uint64: Option<Uint64Layout>,
    /// `--pg-partition`: ids per partition.
    pub pg_partition: Option<i64>,
    /// `--pg-retention`.
    pub pg_retention: Option<Duration>,
    /// `--event-hook`.
    pub event_hook: Option<PathBuf>,
    /// `--timeout`: seconds of silence before a client is dropped.
    pub timeout: Option<u64>,
    /// `--logfile` (`-` is standard error).
    pub logfile: Option<PathBuf>,
    /// `--debug-level`.
    pub debug_level: Option<i32>,
    /// `--feedback-rules`.
    pub feedback_rules: Option<PathBuf>,
    /// `--user`.
    pub user: Option<String>,
    /// `--group`.
    pub group: Option<String>,
    /// `--config`: the configuration file.
    pub config: Option<PathBuf>,
    /// `--metrics`: the older name of `--http`.
    pub metrics: Option<SocketAddr>,
    /// `--self-domain`.
    pub self_domain: Option<String>,
    /// The HTTP endpoints' flags.
    pub http: HttpOptions,
    /// The resource limits' flags.
    pub limits: LimitOptions,
    /// Token authentication and TLS flags.
    pub security: SecurityOptions,
}

/// Everything resolved: what the server and the logger need.
#[derive(Debug)]
pub struct Resolved {
    /// The server's settings.
    pub server: ServerConfig,
    /// The feedback rules file, re-read on SIGHUP.
    pub rules_file: Option<PathBuf>,
    /// Who to run as once bound (`--user`, `--group`).
    pub identity: Option<Identity>,
    /// Where to log (`None`: standard error).
    pub logfile: Option<PathBuf>,
    /// How much to log.
    pub level: tracing::Level,
}

impl Options {
    /// Merges these settings over the file's over the defaults, and
    /// validates; no I/O besides reading the configuration file (and the
    /// feedback rules, and looking up `--user`).
    pub fn resolve(&self) -> Result<Resolved, RunError> {
        let file = match &self.config {
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|source| RunError::ReadConfig {
                    path: p.clone(),
                    source,
                })?;
                FileConfig::parse(&text, &p.display().to_string())?
            }
            None => FileConfig::default(),
        };
        let backend = match (self.backend, file.get("backend")) {
            (Some(b), _) => b,
            (None, Some(v)) => parse("backend", v)?,
            (None, None) => BackendKind::Sqlite,
        };
        let port = match (self.listen, file.get("listen")) {
            (Some(p), _) => p,
            (None, Some(v)) => parse("listen", v)?,
            (None, None) => DEFAULT_PORT,
        };
        let binds: Vec<IpAddr> = if !self.bind.is_empty() {
            self.bind.clone()
        } else {
            file.all("bind")
                .iter()
                .map(|v| parse("bind", v))
                .collect::<Result<_, _>>()?
        };
        let data_dir = match (&self.data_dir, file.get("data-dir")) {
            (Some(d), _) => d.clone(),
            (None, Some(v)) => PathBuf::from(v),
            (None, None) => PathBuf::from("."),
        };
        let mut server = ServerConfig::new(data_dir);
        if backend == BackendKind::Postgresql {
            server.backend = crate::Backend::Postgres(self.pg_options(&file)?);
        }
        server.listen = if binds.is_empty() {
            crate::config::default_listen(port)
        } else {
            binds.iter().map(|&ip| SocketAddr::new(ip, port)).collect()
        };
        let timeout = match (self.timeout, file.get("timeout")) {
            (Some(t), _) => t,
            (None, Some(v)) => parse("timeout", v)?,
            (None, None) => 60,
        };
        server.idle_timeout = (timeout > 0).then(|| Duration::from_secs(timeout));
        server.event_hook = self
            .event_hook
            .clone()
            .or_else(|| file.get("event-hook").map(PathBuf::from));
        server.metrics_listen = match (self.metrics, file.get("metrics")) {
            (Some(a), _) => Some(a),
            (None, Some(v)) => Some(parse("metrics", v)?),
            (None, None) => None,
        };
        (server.auth, server.tls) = self.security.resolve(&file)?;
        self.http.apply(&file, &mut server)?;
        self.limits.apply(&file, &mut server)?;
        never_open(&server)?;
        server.self_domain = self
            .self_domain
            .clone()
            .or_else(|| file.get("self-domain").map(str::to_owned));
        if let Some(d) = &server.self_domain {
            if !omsp::names::is_valid_domain(d) {
                bail!(
                    "self-domain {d:?}: want 1-63 bytes of [A-Za-z0-9_.-], not starting with '.'"
                );
            }
        }
        let logfile = self
            .logfile
            .clone()
            .or_else(|| file.get("logfile").map(PathBuf::from))
            .filter(|p| p.as_os_str() != "-");
        let level = match (self.debug_level, file.get("debug-level")) {
            (Some(d), _) => d,
            (None, Some(v)) => parse("debug-level", v)?,
            (None, None) => 0,
        };
        let user = self.user.as_deref().or_else(|| file.get("user"));
        let group = self.group.as_deref().or_else(|| file.get("group"));
        let identity = Identity::resolve(user, group)?;
        let rules_file = self
            .feedback_rules
            .clone()
            .or_else(|| file.get("feedback-rules").map(PathBuf::from));
        if let Some(path) = &rules_file {
            server.feedback_rules =
                crate::feedback::rules::load(path).map_err(RunError::Invalid)?;
        }
        Ok(Resolved {
            server,
            rules_file,
            identity,
            logfile,
            level: log_level(level),
        })
    }

    /// `--pg-*` over the file's `pg-*` keys over the reference's defaults
    /// (`oml@localhost:5432`, no password, no extra conninfo).
    fn pg_options(&self, file: &FileConfig) -> Result<PgOptions, RunError> {
        let defaults = PgOptions::default();
        let text = |flag: &Option<String>, key: &str, default: String| {
            flag.clone()
                .or_else(|| file.get(key).map(str::to_owned))
                .unwrap_or(default)
        };
        let port = match (self.pg_port, file.get("pg-port")) {
            (Some(p), _) => p,
            (None, Some(v)) => parse("pg-port", v)?,
            (None, None) => defaults.port,
        };
        Ok(PgOptions {
            host: text(&self.pg_host, "pg-host", defaults.host.clone()),
            port,
            user: text(&self.pg_user, "pg-user", defaults.user.clone()),
            password: text(&self.pg_pass, "pg-pass", String::new()),
            conninfo: text(&self.pg_connect, "pg-connect", String::new()),
            uint64: match (self.pg_uint64, file.get("pg-uint64")) {
                (Some(l), _) => l,
                (None, Some(v)) => parse_uint64_layout(v).map_err(RunError::Invalid)?,
                (None, None) => defaults.uint64,
            },
            partition: self.partitioning(file)?,
            ..defaults
        })
    }

    /// `--pg-partition` and `--pg-retention` over the file's keys.
    fn partitioning(&self, file: &FileConfig) -> Result<Option<Partitioning>, RunError> {
        let rows = match (self.pg_partition, file.get("pg-partition")) {
            (Some(r), _) => Some(r),
            (None, Some(v)) => Some(parse_partition_rows(v).map_err(RunError::Invalid)?),
            (None, None) => None,
        };
        let retention = match (self.pg_retention, file.get("pg-retention")) {
            (Some(d), _) => Some(d),
            (None, Some(v)) => Some(parse_retention(v).map_err(RunError::Invalid)?),
            (None, None) => None,
        };
        match (rows, retention) {
            (None, None) => Ok(None),
            (None, Some(_)) => bail!("--pg-retention needs --pg-partition"),
            (Some(rows), retention) => Ok(Some(Partitioning {
                retention,
                ..Partitioning::new(rows)
            })),
        }
    }
}

/// The HTTP endpoints are never open: bound beyond loopback, they need a
/// token file (`--auth-file`) or the explicit choice of public reads
/// (`--http-public`; control stays with loopback callers).
fn never_open(server: &ServerConfig) -> Result<(), RunError> {
    let open = [server.http_listen, server.metrics_listen]
        .into_iter()
        .flatten()
        .find(|a| !a.ip().is_loopback());
    match open {
        Some(addr) if server.auth.is_none() && !server.http_public => bail!(
            "--http {addr} listens beyond loopback without a token file: pass --auth-file FILE \
             (lines '* <token> read,control' for HTTP clients), or --http-public to let any \
             address read (control stays with loopback callers), or bind --http to 127.0.0.1"
        ),
        _ => Ok(()),
    }
}

/// The reference's debug levels: -2 error, -1 warning, 0 info, 1 or more
/// debug.
pub fn log_level(level: i32) -> tracing::Level {
    match level {
        i32::MIN..=-2 => tracing::Level::ERROR,
        -1 => tracing::Level::WARN,
        0 => tracing::Level::INFO,
        _ => tracing::Level::DEBUG,
    }
}

/// Ids per partition (`--pg-partition`): a whole number of at least 1000.
pub fn parse_partition_rows(v: &str) -> Result<i64, String> {
    match v.trim().parse::<i64>() {
        Ok(n) if n >= 1000 => Ok(n),
        _ => Err(format!("{v:?}: want a number of rows, at least 1000")),
    }
}

/// `30d`, `12h`, `90m`, `3600s` or a number of seconds (`--pg-retention`).
pub fn parse_retention(v: &str) -> Result<Duration, String> {
    let t = v.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, "s"),
    };
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => 0,
    };
    match digits.parse::<u64>() {
        Ok(n) if n > 0 && scale > 0 => Ok(Duration::from_secs(n.saturating_mul(scale))),
        _ => Err(format!(
            "{v:?}: want a duration such as 30d, 12h, 90m, 3600s"
        )),
    }
}

/// `numeric` or `bigint` (`--pg-uint64`, config key `pg-uint64`).
pub fn parse_uint64_layout(v: &str) -> Result<Uint64Layout, String> {
    match v {
        "numeric" => Ok(Uint64Layout::Numeric),
        "bigint" => Ok(Uint64Layout::Bigint),
        _ => Err(format!("{v:?}: want numeric or bigint")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_flags_parse() {
        assert_eq!(parse_retention("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_retention("90m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_retention("3600"), Ok(Duration::from_secs(3600)));
        assert!(parse_retention("0s").is_err());
        assert!(parse_retention("5w").is_err());
        assert!(parse_retention("d").is_err());
        assert_eq!(parse_partition_rows("1000000"), Ok(1_000_000));
        assert!(parse_partition_rows("10").is_err());
        assert!(parse_partition_rows("x").is_err());
    }

    #[test]
    fn http_beyond_loopback_needs_tokens_or_public_reads() {
        let mut o = Options::default();
        o.http.http_listen = Some("127.0.0.1:0".parse().unwrap());
        assert!(o.resolve().is_ok());
        o.http.http_listen = Some("0.0.0.0:0".parse().unwrap());
        let e = o.resolve().unwrap_err().to_string();
        assert!(e.contains("--auth-file"), "{e}");
        o.http.http_public = true;
        assert!(o.resolve().is_ok());
        o.http.http_public = false;
        o.metrics = Some("[::]:0".parse().unwrap());
        o.http.http_listen = None;
        assert!(o.resolve().is_err(), "the older name too");
    }

    #[test]
    fn backend_names_in_any_case() {
        assert_eq!("PostgreSQL".parse(), Ok(BackendKind::Postgresql));
        assert_eq!("sqlite".parse(), Ok(BackendKind::Sqlite));
        assert!("mysql".parse::<BackendKind>().is_err());
    }
}
