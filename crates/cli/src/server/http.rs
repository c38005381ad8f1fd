//! `streamgauge server` flags for the HTTP endpoints (query API, metrics,
//! feedback control), all on the project's one HTTP stack.

use std::net::SocketAddr;
use std::time::Duration;

use ::server::ServerConfig;
use anyhow::Result;
use clap::Args;

use super::file::FileConfig;
use super::parse;

/// HTTP listener settings (off by default: the OML-compatible default
/// opens no HTTP port).
#[derive(Debug, Args)]
pub struct HttpArgs {
    /// Serve the query API (/api/v1/...), /metrics, /feedback and /control on ADDR:PORT. Without --auth-file only loopback clients are answered (see --http-public); with it, clients send 'Authorization: Bearer <token>' and tokens need the read or control scope.
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
}

impl HttpArgs {
    /// Command line over the file's keys over the defaults.
    pub fn apply(&self, file: &FileConfig, server: &mut ServerConfig) -> Result<()> {
        server.http_listen = match (self.http_listen, file.get("http")) {
            (Some(a), _) => Some(a),
            (None, Some(v)) => Some(parse("http", v)?),
            (None, None) => None,
        };
        server.http_public = match (self.http_public, file.get("http-public")) {
            (true, _) => true,
            (false, Some(v)) => parse("http-public", v)?,
            (false, None) => false,
        };
        server.http_cors_origin = self
            .http_cors_origin
            .clone()
            .or_else(|| file.get("http-cors-origin").map(str::to_owned));
        server.http_allowed_hosts = if self.allow_host.is_empty() {
            file.all("allow-host").to_vec()
        } else {
            self.allow_host.clone()
        };
        let header = match (self.http_header_timeout, file.get("http-header-timeout")) {
            (Some(s), _) => s,
            (None, Some(v)) => parse("http-header-timeout", v)?,
            (None, None) => server.http_budget.header_timeout.as_secs_f64(),
        };
        if !(header.is_finite() && header > 0.0 && header <= 3600.0) {
            anyhow::bail!("http-header-timeout {header}: want seconds between 0 and 3600");
        }
        server.http_budget.header_timeout = Duration::from_secs_f64(header);
        server.http_budget.max_connections =
            match (self.http_max_connections, file.get("http-max-connections")) {
                (Some(n), _) => n,
                (None, Some(v)) => parse("http-max-connections", v)?,
                (None, None) => server.http_budget.max_connections,
            };
        if server.http_budget.max_connections == 0 {
            anyhow::bail!("http-max-connections 0: want at least 1");
        }
        let budget = match (self.query_budget, file.get("query-budget")) {
            (Some(b), _) => b,
            (None, Some(v)) => parse("query-budget", v)?,
            (None, None) => 10.0,
        };
        if !(budget.is_finite() && budget > 0.0 && budget <= 86_400.0) {
            anyhow::bail!("query-budget {budget}: want seconds between 0 and 86400");
        }
        server.query_budget = Duration::from_secs_f64(budget);
        server.query_max_tails = match (self.query_max_tails, file.get("query-max-tails")) {
            (Some(n), _) => n,
            (None, Some(v)) => parse("query-max-tails", v)?,
            (None, None) => server.query_max_tails,
        };
        if server.query_max_tails == 0 {
            anyhow::bail!("query-max-tails 0: want at least 1");
        }
        server.http_nice = match (self.http_nice, file.get("http-nice")) {
            (Some(n), _) => n,
            (None, Some(v)) => parse("http-nice", v)?,
            (None, None) => server.http_nice,
        };
        if !(0..=::server::http_runtime::MAX_NICE).contains(&server.http_nice) {
            anyhow::bail!(
                "http-nice {}: want a nice value from 0 (same priority as collection) to 19",
                server.http_nice
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        http: HttpArgs,
    }

    fn config(args: &[&str], file: &str) -> Result<ServerConfig> {
        let mut server = ServerConfig::new(std::path::Path::new("/nonexistent"));
        let cli = Cli::parse_from(std::iter::once("streamgauge").chain(args.iter().copied()));
        let file = FileConfig::parse(file, "test").unwrap();
        cli.http.apply(&file, &mut server)?;
        Ok(server)
    }

    fn nice(args: &[&str], file: &str) -> i32 {
        config(args, file).unwrap().http_nice
    }

    #[test]
    fn live_tails_are_capped_by_default_and_on_demand() {
        let tails = |args: &[&str], file: &str| config(args, file).unwrap().query_max_tails;
        assert_eq!(tails(&[], ""), query::DEFAULT_MAX_TAILS);
        assert_eq!(tails(&[], "query-max-tails = 5\n"), 5);
        assert_eq!(
            tails(&["--query-max-tails", "3"], "query-max-tails = 5\n"),
            3
        );
        assert!(config(&["--query-max-tails", "0"], "").is_err());
    }

    #[test]
    fn http_threads_default_to_the_lowest_priority() {
        assert_eq!(nice(&[], ""), 19, "the documented default");
        assert_eq!(nice(&[], "http-nice = 5\n"), 5);
        assert_eq!(nice(&["--http-nice", "3"], "http-nice = 5\n"), 3);
    }
}
