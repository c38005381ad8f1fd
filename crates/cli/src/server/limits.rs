//! `streamgauge server` flags that bound what clients can make the server
//! hold: connections, open databases, header and queue sizes. The defaults
//! suit a testbed server; see docs/security.md for the memory each allows.

use ::server::ServerConfig;
use anyhow::{bail, Result};
use clap::Args;

use super::file::FileConfig;
use super::parse;

/// Resource limits (each also a configuration file key of the same name).
#[derive(Debug, Args)]
pub struct LimitArgs {
    /// Serve at most N connections at once; more are closed unread and counted in streamgauge_connections_refused_total [default: 4096].
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Serve at most N connections at once from one client address (a proxy or a NAT counts as one) [default: 1024].
    #[arg(long, value_name = "N")]
    pub max_connections_per_source: Option<usize>,
    /// Keep at most N databases (domains) open at once, each with its writer thread; a client of another domain is refused until one closes [default: 1024].
    #[arg(long, value_name = "N")]
    pub max_domains: Option<usize>,
    /// Largest connection header in bytes (schemas included). With --auth-file, a header may hold only 64 KiB until it shows a token for its domain [default: 4194304].
    #[arg(long, value_name = "BYTES")]
    pub max_header_bytes: Option<usize>,
    /// Bytes of rows one domain may have queued for its database writer; a client waits (TCP backpressure) while its domain's queue is full [default: 67108864].
    #[arg(long, value_name = "BYTES")]
    pub max_domain_queue_bytes: Option<usize>,
}

impl LimitArgs {
    /// Command line over the file's keys over the defaults.
    pub fn apply(&self, file: &FileConfig, server: &mut ServerConfig) -> Result<()> {
        let pick = |flag: Option<usize>, key: &str, default: usize| -> Result<usize> {
            let v = match (flag, file.get(key)) {
                (Some(v), _) => v,
                (None, Some(v)) => parse(key, v)?,
                (None, None) => default,
            };
            if v == 0 {
                bail!("{key} = 0: want at least 1");
            }
            Ok(v)
        };
        server.max_connections = pick(
            self.max_connections,
            "max-connections",
            server.max_connections,
        )?;
        server.max_connections_per_source = pick(
            self.max_connections_per_source,
            "max-connections-per-source",
            server.max_connections_per_source,
        )?;
        server.max_domains = pick(self.max_domains, "max-domains", server.max_domains)?;
        server.limits.max_header = pick(
            self.max_header_bytes,
            "max-header-bytes",
            server.limits.max_header,
        )?;
        if server.limits.max_header < 1024 {
            bail!("max-header-bytes {}: want at least 1024 (a liboml2 header alone is a few hundred bytes)", server.limits.max_header);
        }
        server.max_domain_queue_bytes = pick(
            self.max_domain_queue_bytes,
            "max-domain-queue-bytes",
            server.max_domain_queue_bytes,
        )?;
        Ok(())
    }
}
