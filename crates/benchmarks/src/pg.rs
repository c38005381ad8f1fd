//! The PostgreSQL server a `--backend postgresql` benchmark stores into:
//! an existing one (`--pg-host`, `--pg-port`, `--pg-user`, `--pg-pass`) or
//! a throwaway cluster started for the run (`--pg-temp`, `pgtemp`).

use anyhow::{Context, Result};
use store::PgOptions;

use crate::server::PgServer;

/// Where the benchmark's databases live.
pub struct PgTarget {
    /// How the server, the watcher and the raw limits log in.
    pub opts: PgOptions,
    /// Database of the raw limits (fresh tables in it per measurement).
    pub raw_db: String,
    /// The throwaway cluster, stopped and deleted when the target is dropped.
    _cluster: Option<pgtemp::Cluster>,
}

impl PgTarget {
    /// Starts the throwaway cluster or checks the given server, and creates
    /// the raw-limit database.
    pub fn open(args: &PgServer) -> Result<PgTarget> {
        let (opts, cluster) = if args.temp {
            let cluster =
                pgtemp::Cluster::start().context("starting a throwaway PostgreSQL cluster")?;
            // Stops the cluster even if this process is killed.
            cluster.watch_process(std::process::id())?;
            let opts = PgOptions {
                host: "127.0.0.1".into(),
                port: cluster.port,
                user: "oml".into(),
                ..PgOptions::default()
            };
            (opts, Some(cluster))
        } else {
            let defaults = PgOptions::default();
            let opts = PgOptions {
                host: args.host.clone().unwrap_or(defaults.host),
                port: args.port.unwrap_or(defaults.port),
                user: args.user.clone().unwrap_or(defaults.user),
                password: args.pass.clone().unwrap_or_default(),
                ..PgOptions::default()
            };
            (opts, None)
        };
        opts.check_can_create_databases()
            .with_context(|| format!("PostgreSQL at {}", opts.uri("postgres")))?;
        let raw_db = format!("sg_bench_raw_{}", std::process::id());
        opts.ensure_database(&raw_db)?;
        Ok(PgTarget {
            opts,
            raw_db,
            _cluster: cluster,
        })
    }

    /// Drops a database of this run (best effort: a benchmark against an
    /// existing server should not leave its databases behind).
    pub fn drop_database(&self, name: &str) {
        let res = self.opts.connect("postgres").and_then(|mut c| {
            c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {}",
                store::sql::quote(name)
            ))
            .map_err(Into::into)
        });
        if let Err(e) = res {
            eprintln!("warning: could not drop database {name}: {e}");
        }
    }
}

impl Drop for PgTarget {
    fn drop(&mut self) {
        if self._cluster.is_none() {
            let raw = self.raw_db.clone();
            self.drop_database(&raw);
        }
    }
}
