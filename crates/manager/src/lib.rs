//! # manager — the management plane of streamgauge
//!
//! One process serving the REST API of `spec/manager-api.md` and the web
//! front end (`web/`, built to `web/dist/` and embedded by [`assets`]):
//! users and API tokens ([`auth`]), devices ([`devices`]), experiments,
//! capture configurations validated against each device's capabilities
//! and policy, runs driven on capture daemons ([`runs`]), a live-data
//! proxy to the experiment's collection server, a [`monitor`] polling
//! every device, and a testbed [`reservation`] importer. State lives in
//! SQLite, or PostgreSQL by option ([`db`]).
//!
//! ```no_run
//! # async fn demo() -> Result<(), manager::StartError> {
//! let mut config = manager::ManagerConfig::new("/var/lib/streamgauge/manager");
//! config.listen = "127.0.0.1:8090".parse().unwrap();
//! config.admin_password = Some("change me now".into());
//! let m = manager::Manager::start(config).await?;
//! println!("manager on http://{}", m.local_addr());
//! m.shutdown().await;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod api;
pub mod app;
pub mod assets;
pub mod audit;
pub mod auth;
pub mod config;
pub mod db;
pub mod devices;
pub mod monitor;
pub mod names;
pub mod reservation;
pub mod run;
pub mod runs;
pub mod validate;

pub use app::{App, Manager, StartError};
pub use config::ManagerConfig;

/// Now, Unix seconds.
pub fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Now, Unix seconds with fractions.
pub fn now_f64() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
