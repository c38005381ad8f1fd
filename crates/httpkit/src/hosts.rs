//! Which names an endpoint answers to: the `Host` and `Origin` checks.
//!
//! Being on loopback is not an identity. A web page on `evil.example` can
//! re-bind its own name to 127.0.0.1 (DNS rebinding): the victim's browser
//! then sends the page's requests to a local endpoint, and since the page
//! and the endpoint now share an origin, the browser lets the page read the
//! answers. Such requests always carry the attacker's *name*: `Host:
//! evil.example` (and, for fetches that change state, `Origin:
//! http://evil.example`). So every endpoint refuses requests whose `Host`
//! is not a name it knows (421 Misdirected Request) and state-changing
//! requests whose `Origin` is not one (403).
//!
//! The names an endpoint knows ([`AllowedHosts::allows`]):
//!
//! - the loopback names: `localhost` (and `*.localhost`, which RFC 6761
//!   reserves for loopback and browsers resolve themselves);
//! - **any IP literal** (`127.0.0.1`, `[::1]`, `10.0.0.5`, the address a
//!   wildcard listener is reached on): rebinding needs a DNS name the
//!   attacker controls — a page whose origin is an IP literal can only ever
//!   reach that address, so a request naming an address is not a rebinding
//!   one. This covers the bound address of a non-wildcard listener and the
//!   machine's own addresses when bound to `0.0.0.0` on a testbed, without
//!   configuration;
//! - the names given by the operator (`--allow-host NAME`, repeatable; the
//!   manager also takes its public URL; `allowed_hosts` in the capture
//!   daemon's configuration), for endpoints reached under a DNS name.
//!
//! A request without `Host` (HTTP/1.0 tools) is served: browsers always
//! send one. `Origin: null` (sandboxed frames, `file:` pages) is foreign.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{HOST, ORIGIN};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::guard::is_state_changing;
use crate::ApiError;

/// The DNS names (beyond loopback names and IP literals) that an endpoint
/// answers to. Cheap to clone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedHosts {
    /// Lower-case names without a trailing dot; shared by every request.
    names: Arc<Vec<String>>,
}

impl AllowedHosts {
    /// Loopback names, IP literals and `names` (a name may carry a port,
    /// which is ignored, or a scheme, as in a public URL: `https://lab.example/`).
    pub fn new<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> AllowedHosts {
        let mut list: Vec<String> = names
            .into_iter()
            .filter_map(|n| {
                let n = n.as_ref().trim();
                let n = n.split_once("://").map_or(n, |(_, rest)| rest);
                let authority = n.split('/').next().unwrap_or(n);
                normalise(host_of(authority))
            })
            .collect();
        list.sort();
        list.dedup();
        AllowedHosts {
            names: Arc::new(list),
        }
    }

    /// The configured names (normalised).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Whether a `Host` value (`name`, `name:port`, `[v6]:port`) is allowed.
    pub fn allows(&self, host: &str) -> bool {
        let Some(name) = normalise(host_of(host)) else {
            return false;
        };
        if name == "localhost" || name.ends_with(".localhost") {
            return true;
        }
        let literal = name.trim_start_matches('[').trim_end_matches(']');
        if literal.parse::<IpAddr>().is_ok() {
            return true;
        }
        self.names.contains(&name)
    }

    /// Whether an `Origin` value (`scheme://host[:port]`) is allowed.
    pub fn allows_origin(&self, origin: &str) -> bool {
        match origin.split_once("://") {
            Some((scheme, authority)) if !scheme.is_empty() && !authority.contains('/') => {
                self.allows(authority)
            }
            _ => false,
        }
    }
}

/// The host part of an authority (`name:port`, `[v6]:port`, `name`).
fn host_of(authority: &str) -> &str {
    if authority.starts_with('[') {
        return match authority.find(']') {
            Some(end) => &authority[..=end],
            None => "",
        };
    }
    match authority.rsplit_once(':') {
        // More than one colon without brackets: a bare IPv6 literal.
        Some((h, _)) if !h.contains(':') => h,
        _ => authority,
    }
}

/// Lower case without the trailing dot of a fully qualified name; `None`
/// for an empty name.
fn normalise(host: &str) -> Option<String> {
    let h = host.trim().trim_end_matches('.').to_ascii_lowercase();
    (!h.is_empty()).then_some(h)
}

/// What the host layer needs: the allowed names and the configured CORS
/// origin (a state-changing request from that origin is allowed too).
#[derive(Debug, Clone)]
pub(crate) struct HostCheck {
    /// Names the endpoint answers to.
    pub(crate) hosts: AllowedHosts,
    /// `--http-cors-origin`, allowed as an `Origin` as well.
    pub(crate) cors_origin: Option<HeaderValue>,
}

/// Middleware: 421 for a foreign `Host`, 403 for a state-changing request
/// from a foreign `Origin`.
pub(crate) async fn check_host(
    State(check): State<HostCheck>,
    req: Request,
    next: Next,
) -> Response {
    let host = req
        .uri()
        .authority()
        .map(|a| a.as_str().to_owned())
        .or_else(|| {
            req.headers()
                .get(HOST)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        });
    if let Some(host) = host {
        if !check.hosts.allows(&host) {
            let name = host_of(&host).trim_end_matches('.');
            return ApiError::new(
                StatusCode::MISDIRECTED_REQUEST,
                "host_not_allowed",
                format!(
                    "this endpoint does not answer to the name {name:?} (a web page can reach \
                     local endpoints under a name of its own: DNS rebinding); if {name:?} is \
                     this machine's name, start it with --allow-host {name} (the capture \
                     daemon: allowed_hosts in its configuration), or use an IP address or \
                     localhost"
                ),
            )
            .with_details(serde_json::json!({ "host": host, "allowed": check.hosts.names() }))
            .into_response();
        }
    }
    if is_state_changing(req.method()) {
        if let Some(origin) = req.headers().get(ORIGIN) {
            let configured = check.cors_origin.as_ref() == Some(origin);
            let text = String::from_utf8_lossy(origin.as_bytes());
            if !configured && !check.hosts.allows_origin(&text) {
                return ApiError::new(
                    StatusCode::FORBIDDEN,
                    "origin_not_allowed",
                    format!(
                        "{} requests from pages of {text:?} are refused (a foreign page must \
                         not change state here); if that is this service's own name, start it \
                         with --allow-host NAME (the capture daemon: allowed_hosts in its \
                         configuration), or allow the page with --http-cors-origin where the \
                         component has it",
                        req.method()
                    ),
                )
                .with_details(serde_json::json!({ "origin": text, "allowed": check.hosts.names() }))
                .into_response();
            }
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_ip_literals_are_allowed_by_default() {
        let h = AllowedHosts::default();
        for ok in [
            "localhost",
            "LOCALHOST:8080",
            "localhost.",
            "app.localhost:3000",
            "127.0.0.1",
            "127.0.0.1:9000",
            "127.8.9.10:1",
            "[::1]",
            "[::1]:80",
            "::1",
            "10.0.0.5:3003",
            "[fe80::1]:80",
        ] {
            assert!(h.allows(ok), "{ok} should be allowed");
        }
        for bad in [
            "evil.example",
            "evil.example:8080",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "",
            "[::1",
            "user@127.0.0.1",
        ] {
            assert!(!h.allows(bad), "{bad} should be refused");
        }
    }

    #[test]
    fn configured_names_from_flags_and_urls() {
        let h = AllowedHosts::new(["Lab.Example.", "https://ui.example:8443/app", " gw:80 "]);
        assert_eq!(h.names(), ["gw", "lab.example", "ui.example"]);
        assert!(h.allows("lab.example:3003"));
        assert!(h.allows("ui.example"));
        assert!(h.allows("gw"));
        assert!(!h.allows("example"));
        assert!(!h.allows("sub.lab.example"));
    }

    #[test]
    fn origins() {
        let h = AllowedHosts::new(["ui.example"]);
        assert!(h.allows_origin("http://127.0.0.1:8080"));
        assert!(h.allows_origin("https://ui.example"));
        assert!(h.allows_origin("http://localhost:3000"));
        assert!(!h.allows_origin("http://evil.example"));
        assert!(!h.allows_origin("null"));
        assert!(!h.allows_origin("http://127.0.0.1/path"));
        assert!(!h.allows_origin("127.0.0.1"));
    }
}
