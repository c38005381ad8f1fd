//! The manager's settings, built by the command line (`streamgauge
//! manager`) or by tests; validated without I/O before anything starts.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::db::DbTarget;

/// Everything the manager needs to start.
#[derive(Debug, Clone)]
pub struct ManagerConfig {
    /// API and front-end address.
    pub listen: SocketAddr,
    /// Holds `manager.db` (when the database is the default SQLite file).
    pub data_dir: PathBuf,
    /// The database: `None` is SQLite in `data_dir/manager.db`; else a
    /// SQLite file elsewhere or a PostgreSQL database (`--db`).
    pub database: Option<DbTarget>,
    /// Device credentials (`<name> <bearer-token>` lines), referenced by
    /// devices' `credential_ref`.
    pub credentials: Option<PathBuf>,
    /// Password of the `admin` created on first start (`None`: generated
    /// and printed once on standard error).
    pub admin_password: Option<String>,
    /// Time between two polls of every device.
    pub monitor_interval: Duration,
    /// Collection server (`HOST:PORT`) receiving the `manager_monitor` stream.
    pub monitor_collect: Option<String>,
    /// Domain of that stream.
    pub monitor_domain: String,
    /// Lifetime of a browser session.
    pub session_ttl: Duration,
    /// Whether cookies get `Secure` (always with `tls`; set it by hand
    /// behind a TLS-terminating proxy).
    pub secure_cookies: bool,
    /// Certificate chain and private key (PEM): serve over TLS.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// The names browsers reach the manager under (`--allow-host`, a name
    /// or its public URL), beyond loopback names and IP literals: requests
    /// naming any other host are refused (DNS rebinding).
    pub allowed_hosts: Vec<String>,
    /// First wait before retrying an unreachable device (doubled per
    /// attempt, 3 attempts).
    pub retry_backoff: Duration,
}

impl ManagerConfig {
    /// Defaults around a data directory.
    pub fn new(data_dir: impl Into<PathBuf>) -> ManagerConfig {
        ManagerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8090)),
            data_dir: data_dir.into(),
            database: None,
            credentials: None,
            admin_password: None,
            monitor_interval: Duration::from_secs(15),
            monitor_collect: None,
            monitor_domain: "streamgauge_manager".into(),
            session_ttl: Duration::from_secs(12 * 3600),
            secure_cookies: false,
            tls: None,
            allowed_hosts: Vec::new(),
            retry_backoff: Duration::from_millis(500),
        }
    }

    /// Where the database is.
    pub fn db_target(&self) -> DbTarget {
        self.database
            .clone()
            .unwrap_or_else(|| DbTarget::Sqlite(self.data_dir.join("manager.db")))
    }

    /// Checks values without I/O.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(DbTarget::Postgres { url, .. }) = &self.database {
            DbTarget::parse(url)?;
        }
        if self.monitor_interval < Duration::from_millis(100) {
            return Err("monitor interval: at least 0.1 s".into());
        }
        if self.session_ttl < Duration::from_secs(1) {
            return Err("session TTL: at least 1 s".into());
        }
        if let Some(c) = &self.monitor_collect {
            match c.rsplit_once(':') {
                Some((h, p)) if !h.is_empty() && p.parse::<u16>().is_ok() => {}
                _ => return Err(format!("monitor collect: {c:?} is not HOST:PORT")),
            }
        }
        let d = &self.monitor_domain;
        if d.is_empty() || !d.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("monitor domain: {d:?} must be [A-Za-z0-9_]+"));
        }
        if let Some(p) = &self.admin_password {
            if p.chars().count() < crate::auth::passwords::MIN_LEN {
                return Err(format!(
                    "admin password: at least {} characters",
                    crate::auth::passwords::MIN_LEN
                ));
            }
        }
        Ok(())
    }
}
