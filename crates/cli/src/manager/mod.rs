//! `streamgauge manager`: the management plane (REST API and web front
//! end), and offline administration of its database (`user add`,
//! `import-reservation`).

mod admin;
mod serve;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use manager::run;

pub const LONG_ABOUT: &str = include_str!("../../help/manager.txt");

/// Arguments of `streamgauge manager`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ManagerArgs {
    /// Address of the API and the web front end.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8090")]
    pub listen: SocketAddr,
    /// Directory of the manager's database (manager.db), created if missing.
    #[arg(long, value_name = "DIR", env = "STREAMGAUGE_MANAGER_DATA")]
    pub data_dir: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbArgs,
    /// Device credentials: lines '<name> <bearer-token>' that devices reference by name.
    #[arg(long, value_name = "FILE")]
    pub credentials: Option<PathBuf>,
    /// First start only: the password of the 'admin' user (first line of FILE). Overrides STREAMGAUGE_ADMIN_PASSWORD.
    #[arg(long, value_name = "FILE")]
    pub admin_password_file: Option<PathBuf>,
    /// Time between two polls of every device: seconds, or with a unit (500ms, 15s, 2m).
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = run::parse_duration)]
    pub monitor_interval: Duration,
    /// Collection server (HOST:PORT) receiving monitoring snapshots as the stream manager_monitor.
    #[arg(long, value_name = "HOST:PORT")]
    pub monitor_collect: Option<String>,
    /// Domain of the manager_monitor stream.
    #[arg(long, value_name = "DOMAIN", default_value = "streamgauge_manager")]
    pub monitor_domain: String,
    /// Lifetime of a browser session: seconds, or with a unit (30m, 12h).
    #[arg(long, value_name = "DURATION", default_value = "12h", value_parser = run::parse_duration)]
    pub session_ttl: Duration,
    /// Serve over TLS with this certificate chain (PEM, leaf first); needs --tls-key. Session cookies then carry Secure.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// Private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// A name browsers reach the manager under, or its public URL (https://lab.example/), repeatable; without it only loopback names (localhost) and IP addresses are served: requests naming other hosts get 421, which stops web pages from reaching the manager through DNS rebinding.
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_host: Vec<String>,
    /// Log level: error, warn, info, debug.
    #[arg(long, value_name = "LEVEL", default_value = "info")]
    pub log_level: tracing::Level,
    /// Offline administration of the database.
    #[command(subcommand)]
    pub command: Option<ManagerCommand>,
}

/// Where the manager's database is (beside `--data-dir`).
#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// The database instead of <data-dir>/manager.db: postgres://USER@HOST:PORT/DBNAME (or libpq key=value), or sqlite:FILE.
    #[arg(long, value_name = "URL", env = "STREAMGAUGE_MANAGER_DB")]
    pub db: Option<String>,
    /// PostgreSQL password: first line of FILE (else PGPASSWORD; never put it on the command line).
    #[arg(long, value_name = "FILE", requires = "db")]
    pub db_password_file: Option<PathBuf>,
}

impl DbArgs {
    /// The target, if `--db` was given.
    pub fn target(&self) -> Result<Option<manager::db::DbTarget>> {
        Ok(run::db_target(
            self.db.as_deref(),
            self.db_password_file.as_deref(),
        )?)
    }

    /// The database for an offline subcommand: `--db`, else
    /// `<data-dir>/manager.db`.
    pub fn open(&self, data_dir: Option<&std::path::Path>) -> Result<manager::db::Db> {
        Ok(run::open(self.target()?, data_dir)?)
    }
}

/// Subcommands of `streamgauge manager`.
#[derive(Debug, Subcommand)]
pub enum ManagerCommand {
    /// Manage users directly in the database (e.g. before the first login).
    User(admin::UserArgs),
    /// Map a testbed reservation (TOML or JSON slice description) to an experiment with members and devices.
    #[command(long_about = admin::RESERVATION_ABOUT)]
    ImportReservation(admin::ImportArgs),
}

/// Runs the chosen mode.
pub fn run(args: &ManagerArgs) -> Result<bool> {
    match &args.command {
        Some(ManagerCommand::User(u)) => admin::user(u),
        Some(ManagerCommand::ImportReservation(i)) => admin::import(i),
        None => {
            let db = args.db.target()?;
            let dir = match (&args.data_dir, &db) {
                (Some(d), _) => d.clone(),
                // Nothing else lives in the data directory.
                (None, Some(_)) => PathBuf::new(),
                (None, None) => {
                    bail!("give --data-dir DIR (where the manager keeps manager.db) or --db URL")
                }
            };
            serve::run(args, &dir, db)
        }
    }
}
