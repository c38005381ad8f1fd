//! `streamgauge manager --data-dir DIR`: serve until SIGTERM/SIGINT.

use std::path::Path;

use anyhow::{Context, Result};
use manager::db::DbTarget;
use manager::{Manager, ManagerConfig};

use super::ManagerArgs;

/// The admin password: file (first line) > environment > none (generated).
fn admin_password(args: &ManagerArgs) -> Result<Option<String>> {
    if let Some(f) = &args.admin_password_file {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        let first = text
            .lines()
            .next()
            .unwrap_or("")
            .trim_end_matches('\r')
            .to_owned();
        return Ok(Some(first));
    }
    Ok(std::env::var("STREAMGAUGE_ADMIN_PASSWORD")
        .ok()
        .filter(|p| !p.is_empty()))
}

/// Validates the settings, starts the manager, stops it on a signal.
pub fn run(args: &ManagerArgs, dir: &Path, db: Option<DbTarget>) -> Result<bool> {
    let mut cfg = ManagerConfig::new(dir);
    cfg.database = db;
    cfg.listen = args.listen;
    cfg.credentials = args.credentials.clone();
    cfg.admin_password = admin_password(args)?;
    cfg.monitor_interval = args.monitor_interval;
    cfg.monitor_collect = args.monitor_collect.clone();
    cfg.monitor_domain = args.monitor_domain.clone();
    cfg.session_ttl = args.session_ttl;
    cfg.tls = args.tls_cert.clone().zip(args.tls_key.clone());
    cfg.allowed_hosts = args.allow_host.clone();
    cfg.validate().map_err(anyhow::Error::msg)?;
    crate::logging::init(None, args.log_level)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        use tokio::signal::unix::{signal, SignalKind};
        // Installed before listening, so no signal hits the default action.
        let mut term = signal(SignalKind::terminate()).context("installing SIGTERM handler")?;
        let mut int = signal(SignalKind::interrupt()).context("installing SIGINT handler")?;
        let m = Manager::start(cfg).await?;
        println!("manager: http://{}", m.local_addr());
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        tracing::info!("shutting down");
        m.shutdown().await;
        Ok(true)
    })
}
