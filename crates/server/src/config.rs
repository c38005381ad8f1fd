//! Server settings, validated before anything is bound or opened.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

pub use store::PgOptions;
use store::{CommitPolicy, SqliteOptions};

pub use crate::auth::AuthSettings;
pub use crate::tls::TlsSettings;

/// Default OMSP collection port (the reference's).
pub const DEFAULT_PORT: u16 = 3003;

/// Default bound on the value bytes of one batch of rows.
pub const DEFAULT_BATCH_BYTES: usize = 1 << 20;

/// Header bytes a connection may send before its header has shown a token
/// that opens its domain, when token authentication is on: an unknown
/// client costs at most this much header memory.
pub const PRE_AUTH_HEADER: usize = 64 * 1024;

/// A header past this many bytes is *large*: reading more of it needs one
/// of [`LARGE_HEADERS_AT_ONCE`] places. Headers of real clients (a few
/// schemas) stay far below; the limit itself ([`omsp::Limits`]) is 4 MiB.
pub const LARGE_HEADER: u64 = 64 * 1024;

/// Connections reading a large header at once. Each may hold up to the
/// header limit and its parsed schemas (4 096 fields each): 64 maximal
/// headers at once made the server hold 600 MiB and spend the cores on
/// them. The others stop reading (TCP holds their clients) until a place
/// is free, their idle timeout passes, or the server shuts down.
pub const LARGE_HEADERS_AT_ONCE: usize = 4;

/// Where the databases live.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Backend {
    /// One SQLite file `<data_dir>/<domain>.sq3` per domain.
    #[default]
    Sqlite,
    /// One PostgreSQL database per domain, created when first needed.
    Postgres(PgOptions),
}

/// Everything a [`crate::Server`] needs to run.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Addresses to listen on, in bind order. Port 0 picks a free port once
    /// and reuses it for the later addresses.
    pub listen: Vec<SocketAddr>,
    /// Where the databases live.
    pub backend: Backend,
    /// Directory of the `<domain>.sq3` files (SQLite back end).
    pub data_dir: PathBuf,
    /// Drop a client that sends nothing for this long (`None`: never).
    pub idle_timeout: Option<Duration>,
    /// Event hook program (`-H`), started once at server start.
    pub event_hook: Option<PathBuf>,
    /// SQLite connection settings.
    pub sqlite: SqliteOptions,
    /// When writers commit.
    pub commit: CommitPolicy,
    /// Batches queued per database before connections stop reading
    /// (which turns into TCP backpressure on the clients).
    pub queue_batches: usize,
    /// Most rows a connection hands over in one batch.
    pub batch_rows: usize,
    /// Bytes read from a socket at a time.
    pub read_chunk: usize,
    /// Decoder bounds (longest line, largest packet, largest header…).
    pub limits: omsp::Limits,
    /// Most bytes of row values a connection hands over in one batch
    /// (a batch ends at `batch_rows` rows or at this many bytes).
    pub batch_bytes: usize,
    /// Most connections served at once (`--max-connections`).
    pub max_connections: usize,
    /// Most connections served at once from one address
    /// (`--max-connections-per-source`).
    pub max_connections_per_source: usize,
    /// Most bytes of rows queued for one database's writer and not yet
    /// inserted (`--max-domain-queue-bytes`); a connection waits (and so
    /// slows its client through TCP) while its domain's queue is full.
    pub max_domain_queue_bytes: usize,
    /// Most databases open at once, each with its writer thread
    /// (`--max-domains`); a client of another domain is refused meanwhile.
    pub max_domains: usize,
    /// Serve the HTTP endpoints (`/metrics`, `/feedback`, `/control`, the
    /// query API) on this address too (`--metrics`, the older name).
    pub metrics_listen: Option<SocketAddr>,
    /// Serve the HTTP endpoints on this address (`--http`); off by default.
    pub http_listen: Option<SocketAddr>,
    /// Without a token file, let non-loopback HTTP callers read
    /// (`--http-public`); control stays loopback-only.
    pub http_public: bool,
    /// Allowed cross-origin caller of the HTTP endpoints
    /// (`--http-cors-origin`); `None`: no CORS.
    pub http_cors_origin: Option<String>,
    /// DNS names the HTTP endpoints answer to beyond loopback names and IP
    /// literals (`--allow-host`): any other `Host` is refused (DNS rebinding).
    pub http_allowed_hosts: Vec<String>,
    /// Timeouts and connection cap of each HTTP listener
    /// (`--http-header-timeout`, `--http-max-connections`): slow clients
    /// cannot take the descriptors collection needs.
    pub http_budget: httpkit::Budget,
    /// Longest a query API request may run before it is cancelled.
    pub query_budget: Duration,
    /// Live tails of the query API open at once (`--query-max-tails`):
    /// each holds a database connection, so clients cannot take the
    /// descriptors and memory collection needs.
    pub query_max_tails: usize,
    /// Nice value of the HTTP endpoints' threads (`--http-nice`, 0–19):
    /// readers yield the cores to collection. See [`crate::http_runtime`].
    pub http_nice: i32,
    /// Nice value of the threads that accept OMSP connections and read
    /// their headers (0–19; 19 by default, which also means `SCHED_IDLE`):
    /// a connection moves to the collection runtime once its header is
    /// complete, so clients that never finish one (floods of malformed or
    /// maximal headers) take the cores only when collection leaves them
    /// idle. 0: connections are accepted and served whole on the runtime
    /// the server was started in. See [`crate::socket`].
    pub header_nice: i32,
    /// Store the server's own state as streams in this domain (`--self-domain`).
    pub self_domain: Option<String>,
    /// Token authentication per domain (`--auth-file`); `None`: none, as
    /// in the reference server.
    pub auth: Option<AuthSettings>,
    /// TLS on the collection port (`--tls-cert`, `--tls-key`); `None`:
    /// plaintext only, as in the reference server.
    pub tls: Option<TlsSettings>,
    /// Feedback rules (`--feedback-rules`, spec §3.7); empty: none, control
    /// messages are sent only by hand.
    pub feedback_rules: Vec<crate::feedback::Rule>,
}

impl ServerConfig {
    /// Defaults for a data directory: SQLite, port 3003 on `[::]` and
    /// `0.0.0.0`, idle timeout 60 s, no hook.
    pub fn new(data_dir: impl Into<PathBuf>) -> ServerConfig {
        ServerConfig {
            listen: default_listen(DEFAULT_PORT),
            backend: Backend::Sqlite,
            data_dir: data_dir.into(),
            idle_timeout: Some(Duration::from_secs(60)),
            event_hook: None,
            sqlite: SqliteOptions::default(),
            commit: CommitPolicy::default(),
            queue_batches: 16,
            batch_rows: 1024,
            read_chunk: 64 * 1024,
            limits: omsp::Limits::default(),
            batch_bytes: DEFAULT_BATCH_BYTES,
            max_connections: 4096,
            max_connections_per_source: 1024,
            max_domains: 1024,
            max_domain_queue_bytes: 64 << 20,
            metrics_listen: None,
            http_listen: None,
            http_public: false,
            http_cors_origin: None,
            http_allowed_hosts: Vec::new(),
            http_budget: httpkit::Budget::default(),
            query_budget: Duration::from_secs(10),
            query_max_tails: query::DEFAULT_MAX_TAILS,
            http_nice: 19,
            header_nice: 19,
            self_domain: None,
            auth: None,
            tls: None,
            feedback_rules: Vec::new(),
        }
    }
}

/// The reference binds every passive address: `[::]` (dual-stack where the
/// system allows) and `0.0.0.0`.
pub fn default_listen(port: u16) -> Vec<SocketAddr> {
    vec![
        SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port),
        SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port),
    ]
}
