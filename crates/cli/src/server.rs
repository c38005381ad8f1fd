//! `streamgauge server`: the collection server (an oml2-server replacement).

mod file;
mod http;
mod limits;
mod privileges;
mod security;
mod signals;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use ::server::{Server, ServerConfig, DEFAULT_PORT};
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};

use file::FileConfig;
use security::SecurityArgs;

pub const LONG_ABOUT: &str = "\
Collect measurement streams from OML clients (liboml2, oml4py, streamgauge)
over TCP and store them, one SQLite database <data-dir>/<domain>.sq3 per
experiment domain (or, with --backend postgresql, one PostgreSQL database
named after the domain, created when first needed: the --pg-user role needs
CREATEDB), in the layout of the reference oml2-server.

Accepts OMSP v1 to v5, text and binary, from any number of concurrent
clients. Bad lines and packets are logged (client address and byte offset)
and skipped; a connection is closed only when the protocol cannot go on.
Rows become visible to readers within a second. SIGTERM or SIGINT stop the
server cleanly: connections are drained, everything accepted is committed,
databases are closed and the event hook gets EXIT.

Settings come from, in order of precedence: the command line, the
environment (OML_SQLITE_DIR for --data-dir, PGPASSWORD for --pg-pass), the --config file (key = value
lines, keys named like the long options), the defaults.";

/// Storage back ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// Embedded SQLite, one file per domain.
    Sqlite,
    /// PostgreSQL, one database per domain.
    Postgresql,
}

/// Arguments of `streamgauge server`.
#[derive(Debug, Args)]
pub struct ServerArgs {
    /// TCP port to listen on (0 picks a free one; the log says which) [default: 3003].
    #[arg(short = 'l', long, value_name = "PORT")]
    pub listen: Option<u16>,
    /// Address to listen on, IPv4 or IPv6; repeat for several [default: :: and 0.0.0.0].
    #[arg(long, value_name = "ADDR")]
    pub bind: Vec<IpAddr>,
    /// Directory of the <domain>.sq3 files [default: current directory].
    #[arg(short = 'D', long, value_name = "DIR", env = "OML_SQLITE_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Storage back end [default: sqlite].
    #[arg(short = 'b', long, value_name = "NAME")]
    pub backend: Option<Backend>,
    /// PostgreSQL host [default: localhost].
    #[arg(long, value_name = "HOST")]
    pub pg_host: Option<String>,
    /// PostgreSQL port [default: 5432].
    #[arg(long, value_name = "PORT")]
    pub pg_port: Option<u16>,
    /// PostgreSQL user [default: oml].
    #[arg(long, value_name = "USER")]
    pub pg_user: Option<String>,
    /// PostgreSQL password (prefer the environment or the config file: other users can read a command line).
    #[arg(long, value_name = "PASS", env = "PGPASSWORD", hide_env_values = true)]
    pub pg_pass: Option<String>,
    /// Extra libpq connection parameters.
    #[arg(long, value_name = "CONNINFO")]
    pub pg_connect: Option<String>,
    /// Column type of uint64 and guid fields in new PostgreSQL tables: 'numeric' (NUMERIC(20,0), exact) or 'bigint' (the reference's BIGINT; values from 2^63 stored as negative two's complement; see docs/storage.md) [default: numeric].
    #[arg(long, value_name = "LAYOUT", value_parser = parse_uint64_layout)]
    pub pg_uint64: Option<::store::postgres::Uint64Layout>,
    /// Partition new PostgreSQL stream tables with pg_partman, ROWS ids (oml_tuple_id) per partition; needs the pg_partman extension (see docs/scale-out.md) [default: off].
    #[arg(long, value_name = "ROWS", value_parser = parse_partition_rows)]
    pub pg_partition: Option<i64>,
    /// With --pg-partition: drop a partition once all its rows are older than this ('30d', '12h', '90m', '3600s' or seconds) [default: keep everything].
    #[arg(long, value_name = "DURATION", value_parser = parse_retention)]
    pub pg_retention: Option<Duration>,
    /// Program told about database events (must print 'OML HOOK READY').
    #[arg(short = 'H', long, value_name = "PROGRAM")]
    pub event_hook: Option<PathBuf>,
    /// Drop clients silent for this many seconds; 0 never [default: 60].
    #[arg(short = 't', long, value_name = "SECONDS")]
    pub timeout: Option<u64>,
    /// Log to this file instead of standard error ('-' = standard error).
    #[arg(long, value_name = "FILE")]
    pub logfile: Option<PathBuf>,
    /// Log level: -2 error, -1 warning, 0 info, 1 or more debug [default: 0].
    #[arg(short = 'd', long, value_name = "LEVEL", allow_negative_numbers = true)]
    pub debug_level: Option<i32>,
    /// Feedback rules (TOML, see docs/feedback.md): control messages sent to senders that accept them when conditions hold. Re-read on SIGHUP.
    #[arg(long, value_name = "FILE")]
    pub feedback_rules: Option<PathBuf>,
    /// Run as this user once the listening ports are bound (needs root).
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,
    /// Run as this group (with --user) [default: the user's primary group].
    #[arg(long, value_name = "NAME")]
    pub group: Option<String>,
    /// Configuration file (key = value lines; see the description).
    #[arg(short = 'c', long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Serve the HTTP endpoints (Prometheus /metrics, /feedback, /control, the query API) on ADDR too; the older name of --http.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// The HTTP endpoints: query API, metrics, control (off by default).
    #[command(flatten)]
    pub http: http::HttpArgs,
    /// Store the server's own state (tables server_clients, server_stats) in this domain, every second.
    #[arg(long, value_name = "NAME")]
    pub self_domain: Option<String>,
    /// Resource limits.
    #[command(flatten)]
    pub limits: limits::LimitArgs,
    /// Token authentication and TLS (boxed: keeps the subcommand enum small).
    #[command(flatten)]
    pub security: Box<SecurityArgs>,
}

/// Everything resolved: what the server and the logger need.
struct Resolved {
    server: ServerConfig,
    /// The feedback rules file, re-read on SIGHUP.
    rules_file: Option<PathBuf>,
    identity: Option<privileges::Identity>,
    logfile: Option<PathBuf>,
    level: tracing::Level,
}

fn parse<T: std::str::FromStr>(key: &str, v: &str) -> Result<T>
where
    T::Err: std::fmt::Display,
{
    v.parse().map_err(|e| anyhow::anyhow!("{key} = {v:?}: {e}"))
}

impl ServerArgs {
    /// Merges command line (and environment) over file over defaults, and
    /// validates; no I/O besides reading the configuration file.
    fn resolve(&self) -> Result<Resolved> {
        let file = match &self.config {
            Some(p) => {
                let text = std::fs::read_to_string(p)
                    .with_context(|| format!("reading {}", p.display()))?;
                FileConfig::parse(&text, &p.display().to_string())?
            }
            None => FileConfig::default(),
        };
        let backend = match (self.backend, file.get("backend")) {
            (Some(b), _) => b,
            (None, Some(v)) => {
                Backend::from_str(v, true).map_err(|e| anyhow::anyhow!("backend = {v:?}: {e}"))?
            }
            (None, None) => Backend::Sqlite,
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
                .collect::<Result<_>>()?
        };
        let data_dir = match (&self.data_dir, file.get("data-dir")) {
            (Some(d), _) => d.clone(),
            (None, Some(v)) => PathBuf::from(v),
            (None, None) => PathBuf::from("."),
        };
        let mut server = ServerConfig::new(data_dir);
        if backend == Backend::Postgresql {
            server.backend = ::server::Backend::Postgres(self.pg_options(&file)?);
        }
        server.listen = if binds.is_empty() {
            ::server::config::default_listen(port)
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
        server.self_domain = self
            .self_domain
            .clone()
            .or_else(|| file.get("self-domain").map(str::to_owned));
        if let Some(d) = &server.self_domain {
            if !omsp::names::is_valid_domain(d) {
                anyhow::bail!(
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
        let level = match level {
            i32::MIN..=-2 => tracing::Level::ERROR,
            -1 => tracing::Level::WARN,
            0 => tracing::Level::INFO,
            _ => tracing::Level::DEBUG,
        };
        let user = self.user.as_deref().or_else(|| file.get("user"));
        let group = self.group.as_deref().or_else(|| file.get("group"));
        let identity = privileges::Identity::resolve(user, group)?;
        let rules_file = self
            .feedback_rules
            .clone()
            .or_else(|| file.get("feedback-rules").map(PathBuf::from));
        let mut server = server;
        if let Some(path) = &rules_file {
            server.feedback_rules =
                ::server::feedback::rules::load(path).map_err(anyhow::Error::msg)?;
        }
        Ok(Resolved {
            server,
            rules_file,
            identity,
            logfile,
            level,
        })
    }
}

impl ServerArgs {
    /// `--pg-*` over the file's `pg-*` keys over the reference's defaults
    /// (`oml@localhost:5432`, no password, no extra conninfo).
    fn pg_options(&self, file: &FileConfig) -> Result<::server::PgOptions> {
        let defaults = ::server::PgOptions::default();
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
        Ok(::server::PgOptions {
            host: text(&self.pg_host, "pg-host", defaults.host.clone()),
            port,
            user: text(&self.pg_user, "pg-user", defaults.user.clone()),
            password: text(&self.pg_pass, "pg-pass", String::new()),
            conninfo: text(&self.pg_connect, "pg-connect", String::new()),
            uint64: match (self.pg_uint64, file.get("pg-uint64")) {
                (Some(l), _) => l,
                (None, Some(v)) => parse_uint64_layout(v).map_err(anyhow::Error::msg)?,
                (None, None) => defaults.uint64,
            },
            partition: self.partitioning(file)?,
            ..defaults
        })
    }

    /// `--pg-partition` and `--pg-retention` over the file's keys.
    fn partitioning(&self, file: &FileConfig) -> Result<Option<::store::postgres::Partitioning>> {
        let rows = match (self.pg_partition, file.get("pg-partition")) {
            (Some(r), _) => Some(r),
            (None, Some(v)) => Some(parse_partition_rows(v).map_err(anyhow::Error::msg)?),
            (None, None) => None,
        };
        let retention = match (self.pg_retention, file.get("pg-retention")) {
            (Some(d), _) => Some(d),
            (None, Some(v)) => Some(parse_retention(v).map_err(anyhow::Error::msg)?),
            (None, None) => None,
        };
        match (rows, retention) {
            (None, None) => Ok(None),
            (None, Some(_)) => anyhow::bail!("--pg-retention needs --pg-partition"),
            (Some(rows), retention) => Ok(Some(::store::postgres::Partitioning {
                retention,
                ..::store::postgres::Partitioning::new(rows)
            })),
        }
    }
}

/// Ids per partition (`--pg-partition`): a whole number of at least 1000.
fn parse_partition_rows(v: &str) -> std::result::Result<i64, String> {
    match v.trim().parse::<i64>() {
        Ok(n) if n >= 1000 => Ok(n),
        _ => Err(format!("{v:?}: want a number of rows, at least 1000")),
    }
}

/// `30d`, `12h`, `90m`, `3600s` or a number of seconds (`--pg-retention`).
fn parse_retention(v: &str) -> std::result::Result<Duration, String> {
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
fn parse_uint64_layout(v: &str) -> std::result::Result<::store::postgres::Uint64Layout, String> {
    match v {
        "numeric" => Ok(::store::postgres::Uint64Layout::Numeric),
        "bigint" => Ok(::store::postgres::Uint64Layout::Bigint),
        _ => Err(format!("{v:?}: want numeric or bigint")),
    }
}

/// Logs to `logfile` (appended, no colours) or to standard error, and
/// raises the open-file limit; shared by the server, the proxy, the capture
/// daemon and the manager.
pub(crate) fn init_logging(logfile: Option<&PathBuf>, level: tracing::Level) -> Result<()> {
    let builder = tracing_subscriber::fmt().with_max_level(level);
    match logfile {
        Some(path) => {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("opening log file {}", path.display()))?;
            builder
                .with_ansi(false)
                .with_writer(std::sync::Mutex::new(f))
                .init();
        }
        None => {
            use std::io::IsTerminal;
            builder
                .with_ansi(std::io::stderr().is_terminal())
                .with_writer(std::io::stderr)
                .init();
        }
    }
    // Every long-running component logs through here: descriptor budgets
    // (per-listener caps), not the default soft limit of 1024, decide how
    // many clients it serves.
    if let Err(e) = httpkit::raise_fd_limit() {
        tracing::warn!(error = %e, "could not raise the open-file limit");
    }
    Ok(())
}

/// Runs the server until SIGTERM or SIGINT.
pub fn run(args: &ServerArgs) -> Result<bool> {
    let resolved = args.resolve()?;
    init_logging(resolved.logfile.as_ref(), resolved.level)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let reload = resolved.server.auth.is_some() || resolved.rules_file.is_some();
        let mut signals = signals::Signals::install(reload)?;
        let data_dir = match resolved.server.backend {
            ::server::Backend::Sqlite => Some(resolved.server.data_dir.clone()),
            ::server::Backend::Postgres(_) => None,
        };
        let server = Server::start(resolved.server).await?;
        if let Some(identity) = &resolved.identity {
            if let Err(e) = identity.assume(data_dir.as_deref()) {
                server.shutdown().await;
                return Err(e);
            }
        }
        signals
            .wait(&server, resolved.rules_file.as_deref())
            .await?;
        tracing::info!("shutting down");
        server.shutdown().await;
        Ok(true)
    })
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
}
