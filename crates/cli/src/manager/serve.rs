//! `streamgauge manager --data-dir DIR`: serve until SIGTERM/SIGINT.

use std::path::Path;

use anyhow::Result;
use manager::db::DbTarget;
use manager::{run, ManagerConfig};

use super::ManagerArgs;

/// Builds the settings from the flags, then serves until a signal.
pub fn run(args: &ManagerArgs, dir: &Path, db: Option<DbTarget>) -> Result<bool> {
    let mut cfg = ManagerConfig::new(dir);
    cfg.database = db;
    cfg.listen = args.listen;
    cfg.credentials = args.credentials.clone();
    cfg.admin_password = run::admin_password(args.admin_password_file.as_deref())?;
    cfg.monitor_interval = args.monitor_interval;
    cfg.monitor_collect = args.monitor_collect.clone();
    cfg.monitor_domain = args.monitor_domain.clone();
    cfg.session_ttl = args.session_ttl;
    cfg.tls = args.tls_cert.clone().zip(args.tls_key.clone());
    cfg.allowed_hosts = args.allow_host.clone();
    crate::logging::init(None, args.log_level)?;
    run::serve(cfg, |addr| println!("manager: http://{addr}"))?;
    Ok(true)
}
