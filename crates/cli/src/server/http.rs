//! `streamgauge server` flags for the HTTP endpoints (query API, metrics,
//! feedback control), all on the project's one HTTP stack.

use std::net::SocketAddr;

use ::server::run::http::HttpOptions;
use clap::Args;

/// HTTP listener settings (off by default: the OML-compatible default
/// opens no HTTP port).
#[derive(Debug, Args)]
pub struct HttpArgs {
    /// Serve the query API (/api/v1/...), /metrics, /feedback and /control on ADDR:PORT. Without --auth-file only loopback clients are answered, and an address beyond loopback is refused at start unless --http-public is given; with it, clients send 'Authorization: Bearer <token>' and tokens need the read or control scope.
    #[arg(long = "http", id = "http", value_name = "ADDR")]
    pub http_listen: Option<SocketAddr>,
    /// Without --auth-file, let any address read (never control) over HTTP.
    #[arg(long)]
    pub http_public: bool,
    /// Allow this browser origin (e.g. http://127.0.0.1:8080) to call the HTTP API from its pages (CORS); none by default.
    #[arg(long, value_name = "ORIGIN")]
    pub http_cors_origin: Option<String>,
    /// Also answer HTTP requests addressed to this DNS name (repeatable). Without it only loopback names (localhost) and IP addresses are served: requests naming any other host get 421 and state-changing requests from pages of other sites 403, which stops web pages from reaching the endpoints through DNS rebinding.
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_host: Vec<String>,
    /// Close an HTTP connection whose request head has not arrived whole within this many seconds (also bounds idle kept-alive connections) [default: 10].
    #[arg(long, value_name = "SECONDS")]
    pub http_header_timeout: Option<f64>,
    /// Most connections each HTTP listener holds at once; more are answered 503 and closed at once, so HTTP clients cannot take the descriptors collection needs [default: 512].
    #[arg(long, value_name = "N")]
    pub http_max_connections: Option<usize>,
    /// Cancel a query API request that runs longer than this [default: 10].
    #[arg(long, value_name = "SECONDS")]
    pub query_budget: Option<f64>,
    /// Most live tails (GET .../tail) the query API keeps open at once; more are answered 503 with Retry-After, so tails cannot take the descriptors and memory collection needs [default: 256].
    #[arg(long, value_name = "N")]
    pub query_max_tails: Option<usize>,
    /// Nice value (0-19) of the threads serving HTTP: query API readers (live tails, exports, downsampled queries) yield the CPU to collection while it needs it, and fall behind instead of slowing ingestion; 0 runs them at the same priority; at 19 (the default) they also run under SCHED_IDLE, and so do readers' PostgreSQL sessions on this host [default: 19].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(0..=19))]
    pub http_nice: Option<i32>,
    /// Nice value (0-19) of the threads that accept OMSP connections and read their headers: a flood of malformed or never-finished headers takes the cores only when collection leaves them idle; a connection moves to the collection threads once its header is whole; 0 reads headers at collection's priority [default: 19].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(0..=19))]
    pub header_nice: Option<i32>,
}

impl From<&HttpArgs> for HttpOptions {
    fn from(a: &HttpArgs) -> Self {
        HttpOptions {
            http_listen: a.http_listen,
            http_public: a.http_public,
            http_cors_origin: a.http_cors_origin.clone(),
            allow_host: a.allow_host.clone(),
            http_header_timeout: a.http_header_timeout,
            http_max_connections: a.http_max_connections,
            query_budget: a.query_budget,
            query_max_tails: a.query_max_tails,
            http_nice: a.http_nice,
            header_nice: a.header_nice,
        }
    }
}
