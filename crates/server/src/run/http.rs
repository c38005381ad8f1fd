//! `streamgauge server`'s settings for the HTTP endpoints (query API,
//! metrics, feedback control), all on the project's one HTTP stack.

use std::net::SocketAddr;
use std::time::Duration;

use super::file::FileConfig;
use super::{parse, RunError};
use crate::ServerConfig;

/// HTTP listener settings from the command line (off by default: the
/// OML-compatible default opens no HTTP port). Each field is the flag of
/// the same name.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// `--http`: where to serve the endpoints.
    pub http_listen: Option<SocketAddr>,
    /// `--http-public`: without a token file, any address may read.
    pub http_public: bool,
    /// `--http-cors-origin`.
    pub http_cors_origin: Option<String>,
    /// `--allow-host`: DNS names answered besides loopback names.
    pub allow_host: Vec<String>,
    /// `--http-header-timeout`, seconds.
    pub http_header_timeout: Option<f64>,
    /// `--http-max-connections`.
    pub http_max_connections: Option<usize>,
    /// `--query-budget`, seconds.
    pub query_budget: Option<f64>,
    /// `--query-max-tails`.
    pub query_max_tails: Option<usize>,
    /// `--http-nice`.
    pub http_nice: Option<i32>,
    /// `--header-nice`: the accepting threads, which read OMSP headers.
    pub header_nice: Option<i32>,
}

impl HttpOptions {
    /// Command line over the file's keys over the defaults.
    pub fn apply(&self, file: &FileConfig, server: &mut ServerConfig) -> Result<(), RunError> {
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
            bail!("http-header-timeout {header}: want seconds between 0 and 3600");
        }
        server.http_budget.header_timeout = Duration::from_secs_f64(header);
        server.http_budget.max_connections =
            match (self.http_max_connections, file.get("http-max-connections")) {
                (Some(n), _) => n,
                (None, Some(v)) => parse("http-max-connections", v)?,
                (None, None) => server.http_budget.max_connections,
            };
        if server.http_budget.max_connections == 0 {
            bail!("http-max-connections 0: want at least 1");
        }
        let budget = match (self.query_budget, file.get("query-budget")) {
            (Some(b), _) => b,
            (None, Some(v)) => parse("query-budget", v)?,
            (None, None) => 10.0,
        };
        if !(budget.is_finite() && budget > 0.0 && budget <= 86_400.0) {
            bail!("query-budget {budget}: want seconds between 0 and 86400");
        }
        server.query_budget = Duration::from_secs_f64(budget);
        server.query_max_tails = match (self.query_max_tails, file.get("query-max-tails")) {
            (Some(n), _) => n,
            (None, Some(v)) => parse("query-max-tails", v)?,
            (None, None) => server.query_max_tails,
        };
        if server.query_max_tails == 0 {
            bail!("query-max-tails 0: want at least 1");
        }
        server.http_nice = match (self.http_nice, file.get("http-nice")) {
            (Some(n), _) => n,
            (None, Some(v)) => parse("http-nice", v)?,
            (None, None) => server.http_nice,
        };
        if !(0..=crate::http_runtime::MAX_NICE).contains(&server.http_nice) {
            bail!(
                "http-nice {}: want a nice value from 0 (same priority as collection) to 19",
                server.http_nice
            );
        }
        server.header_nice = match (self.header_nice, file.get("header-nice")) {
            (Some(n), _) => n,
            (None, Some(v)) => parse("header-nice", v)?,
            (None, None) => server.header_nice,
        };
        if !(0..=crate::http_runtime::MAX_NICE).contains(&server.header_nice) {
            bail!(
                "header-nice {}: want a nice value from 0 (headers read at collection's priority) to 19",
                server.header_nice
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(flags: HttpOptions, file: &str) -> Result<ServerConfig, RunError> {
        let mut server = ServerConfig::new(std::path::Path::new("/nonexistent"));
        let file = FileConfig::parse(file, "test").unwrap();
        flags.apply(&file, &mut server)?;
        Ok(server)
    }

    #[test]
    fn live_tails_are_capped_by_default_and_on_demand() {
        let tails = |n: Option<usize>, file: &str| {
            let flags = HttpOptions {
                query_max_tails: n,
                ..Default::default()
            };
            config(flags, file).unwrap().query_max_tails
        };
        assert_eq!(tails(None, ""), query::DEFAULT_MAX_TAILS);
        assert_eq!(tails(None, "query-max-tails = 5\n"), 5);
        assert_eq!(tails(Some(3), "query-max-tails = 5\n"), 3);
        let zero = HttpOptions {
            query_max_tails: Some(0),
            ..Default::default()
        };
        assert!(config(zero, "").is_err());
    }

    #[test]
    fn http_threads_default_to_the_lowest_priority() {
        let nice = |n: Option<i32>, file: &str| {
            let flags = HttpOptions {
                http_nice: n,
                ..Default::default()
            };
            config(flags, file).unwrap().http_nice
        };
        assert_eq!(nice(None, ""), 19, "the documented default");
        assert_eq!(nice(None, "http-nice = 5\n"), 5);
        assert_eq!(nice(Some(3), "http-nice = 5\n"), 3);
    }

    #[test]
    fn headers_are_read_at_the_lowest_priority_by_default() {
        let nice = |n: Option<i32>, file: &str| {
            let flags = HttpOptions {
                header_nice: n,
                ..Default::default()
            };
            config(flags, file).map(|c| c.header_nice)
        };
        assert_eq!(nice(None, "").unwrap(), 19);
        assert_eq!(nice(None, "header-nice = 0\n").unwrap(), 0);
        assert_eq!(nice(Some(7), "header-nice = 0\n").unwrap(), 7);
        assert!(nice(None, "header-nice = 25\n").is_err());
    }
}
