//! `streamgauge server` flags that bound what clients can make the server
//! hold: connections, open databases, header and queue sizes. The defaults
//! suit a testbed server; see docs/security.md for the memory each allows.

use ::server::run::limits::LimitOptions;
use clap::Args;

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

impl From<&LimitArgs> for LimitOptions {
    fn from(a: &LimitArgs) -> Self {
        LimitOptions {
            max_connections: a.max_connections,
            max_connections_per_source: a.max_connections_per_source,
            max_domains: a.max_domains,
            max_header_bytes: a.max_header_bytes,
            max_domain_queue_bytes: a.max_domain_queue_bytes,
        }
    }
}
