//! `streamgauge server`: the collection server (an oml2-server replacement).

mod http;
mod limits;
mod security;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use ::server::run::config::{parse_partition_rows, parse_retention, parse_uint64_layout};
use ::server::run::{BackendKind, Options};
use anyhow::Result;
use clap::{Args, ValueEnum};

use security::SecurityArgs;

pub const LONG_ABOUT: &str = include_str!("../help/server.txt");

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

impl From<&ServerArgs> for Options {
    fn from(a: &ServerArgs) -> Self {
        Options {
            listen: a.listen,
            bind: a.bind.clone(),
            data_dir: a.data_dir.clone(),
            backend: a.backend.map(|b| match b {
                Backend::Sqlite => BackendKind::Sqlite,
                Backend::Postgresql => BackendKind::Postgresql,
            }),
            pg_host: a.pg_host.clone(),
            pg_port: a.pg_port,
            pg_user: a.pg_user.clone(),
            pg_pass: a.pg_pass.clone(),
            pg_connect: a.pg_connect.clone(),
            pg_uint64: a.pg_uint64,
            pg_partition: a.pg_partition,
            pg_retention: a.pg_retention,
            event_hook: a.event_hook.clone(),
            timeout: a.timeout,
            logfile: a.logfile.clone(),
            debug_level: a.debug_level,
            feedback_rules: a.feedback_rules.clone(),
            user: a.user.clone(),
            group: a.group.clone(),
            config: a.config.clone(),
            metrics: a.metrics,
            self_domain: a.self_domain.clone(),
            http: (&a.http).into(),
            limits: (&a.limits).into(),
            security: a.security.as_ref().into(),
        }
    }
}

/// Runs the server until SIGTERM or SIGINT.
pub fn run(args: &ServerArgs) -> Result<bool> {
    let resolved = Options::from(args).resolve()?;
    crate::logging::init(resolved.logfile.as_ref(), resolved.level)?;
    ::server::run::serve(resolved)?;
    Ok(true)
}
