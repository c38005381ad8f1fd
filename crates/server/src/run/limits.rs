//! `streamgauge server`'s settings that bound what clients can make the
//! server hold: connections, open databases, header and queue sizes. The
//! defaults suit a testbed server; see docs/security.md for the memory
//! each allows.

use super::file::FileConfig;
use super::{parse, RunError};
use crate::ServerConfig;

/// Resource limits from the command line (each also a configuration file
/// key of the same name); `None` leaves it to the file or the default.
#[derive(Debug, Clone, Default)]
pub struct LimitOptions {
    /// `--max-connections`.
    pub max_connections: Option<usize>,
    /// `--max-connections-per-source`.
    pub max_connections_per_source: Option<usize>,
    /// `--max-domains`.
    pub max_domains: Option<usize>,
    /// `--max-header-bytes`.
    pub max_header_bytes: Option<usize>,
    /// `--max-domain-queue-bytes`.
    pub max_domain_queue_bytes: Option<usize>,
}

impl LimitOptions {
    /// Command line over the file's keys over the defaults.
    pub fn apply(&self, file: &FileConfig, server: &mut ServerConfig) -> Result<(), RunError> {
        let pick = |flag: Option<usize>, key: &str, default: usize| -> Result<usize, RunError> {
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
