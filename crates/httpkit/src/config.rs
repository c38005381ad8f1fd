//! The layers every listener gets.

use std::time::Duration;

use axum::http::{HeaderValue, Method};
use axum::Router;
use tower_http::cors::CorsLayer;
use tower_http::timeout::TimeoutLayer;

use crate::auth::{authenticate, Access};
use crate::budget::Budget;
use crate::guard;
use crate::hosts::{check_host, AllowedHosts, HostCheck};

/// How a listener treats its requests.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Who callers are (tokens, loopback trust, public reads).
    pub access: Access,
    /// Allowed cross-origin caller (`--http-cors-origin`); `None`: no CORS
    /// headers at all, so browsers refuse cross-origin reads.
    pub cors_origin: Option<HeaderValue>,
    /// Largest request body accepted (413 beyond).
    pub body_limit: usize,
    /// Longest time until the response head (streamed bodies such as live
    /// tails and exports may then run as long as the client reads).
    pub request_timeout: Duration,
    /// Names beyond loopback names and IP literals that requests may
    /// address (`--allow-host`): a foreign `Host` gets 421, a foreign
    /// `Origin` on a state-changing request 403 (DNS rebinding).
    pub allowed_hosts: AllowedHosts,
    /// Timeouts and connection cap of the listener
    /// ([`crate::serve_with`]; [`crate::serve`] uses the default).
    pub budget: Budget,
}

impl Default for HttpConfig {
    fn default() -> HttpConfig {
        HttpConfig {
            access: Access::default(),
            cors_origin: None,
            body_limit: 64 * 1024,
            request_timeout: Duration::from_secs(30),
            allowed_hosts: AllowedHosts::default(),
            budget: Budget::default(),
        }
    }
}

impl HttpConfig {
    /// Wraps a router with the shared layers: JSON fallbacks, caller
    /// identification, the JSON-only rule for state-changing requests, the
    /// body limit, the head timeout, the `Host`/`Origin` check and, when
    /// configured, CORS.
    pub fn apply(&self, router: Router) -> Router {
        let mut router = router
            .fallback(guard::not_found)
            .method_not_allowed_fallback(guard::method_not_allowed)
            .layer(axum::middleware::from_fn_with_state(
                self.body_limit,
                guard::json_only,
            ))
            .layer(axum::middleware::from_fn_with_state(
                self.access.clone(),
                authenticate,
            ))
            .layer(axum::extract::DefaultBodyLimit::max(self.body_limit))
            .layer(TimeoutLayer::with_status_code(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                self.request_timeout,
            ));
        router = self.check_hosts(router);
        if let Some(origin) = &self.cors_origin {
            router = router.layer(
                CorsLayer::new()
                    .allow_origin(origin.clone())
                    .allow_methods([Method::GET, Method::POST, Method::PUT, Method::DELETE])
                    .allow_headers([
                        axum::http::header::AUTHORIZATION,
                        axum::http::header::CONTENT_TYPE,
                        axum::http::HeaderName::from_static("last-event-id"),
                    ]),
            );
        }
        router
    }

    /// Only the `Host`/`Origin` check ([`crate::hosts`]), for a router that
    /// gains routes or a fallback after [`HttpConfig::apply`] (the manager
    /// adds its front end's files that way): layers cover only what the
    /// router held when they were added.
    pub fn check_hosts(&self, router: Router) -> Router {
        router.layer(axum::middleware::from_fn_with_state(
            HostCheck {
                hosts: self.allowed_hosts.clone(),
                cors_origin: self.cors_origin.clone(),
            },
            check_host,
        ))
    }
}
