//! # httpkit — the one HTTP stack of streamgauge
//!
//! Every HTTP endpoint of the project (the collection server's metrics,
//! control and query API, the proxy's control endpoint, the capture daemon
//! and the manager) is served by axum on hyper through this crate, so they
//! all share one behaviour:
//!
//! - errors are JSON bodies with a stable `code` and a message that says
//!   what to do ([`ApiError`]);
//! - callers are identified once, by a bearer token from the component's
//!   token file or by being on loopback, and handlers ask the resulting
//!   [`Caller`] what it may do ([`auth`]);
//! - state-changing requests must carry `Content-Type: application/json`,
//!   which an HTML form cannot send cross-site, and bodies are bounded
//!   ([`guard`]);
//! - a request naming a host the endpoint does not know is refused, and so
//!   is a state-changing one from a foreign page ([`hosts`]: DNS
//!   rebinding);
//! - CORS is off unless an origin is configured; slow requests time out
//!   ([`HttpConfig`]);
//! - every listener has a header timeout, an idle timeout and a
//!   connection cap ([`Budget`]), so slow clients cannot exhaust the
//!   process's descriptors;
//! - secret files (token files and every other credential or key a
//!   component loads) must be owner-only ([`secret`]); components that
//!   run as root create their token file on first start rather than run
//!   open ([`token_init`]);
//! - control APIs are served over TLS ([`serve_tls`], [`tls`]: PEM
//!   loading, a self-signed certificate on first start, fingerprint
//!   pinning and CA files for clients);
//! - with the `client` feature, command-line tools talk to those endpoints
//!   through [`client::Client`], which turns the JSON errors back into
//!   readable messages.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use axum::routing::get;
//! use httpkit::{Caller, HttpConfig};
//!
//! async fn hello(caller: Caller) -> httpkit::ApiResult<String> {
//!     caller.require_read("lab1")?;
//!     Ok("hello\n".into())
//! }
//! let app = axum::Router::new().route("/hello", get(hello));
//! let app = HttpConfig::default().apply(app);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! httpkit::serve(listener, app, std::future::pending()).await
//! # }
//! ```
#![deny(missing_docs)]

pub mod auth;
pub mod budget;
#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "client")]
mod client_tls;
mod config;
mod error;
pub mod guard;
pub mod hosts;
pub mod probe;
pub mod secret;
mod serve;
pub mod tls;
pub mod token_init;
pub mod tokens;

pub use auth::{Access, Authenticator, Caller, DomainPattern, Grants};
pub use budget::{raise_fd_limit, Budget, Gate};
pub use config::HttpConfig;
pub use error::{ApiError, ApiResult};
pub use hosts::AllowedHosts;
pub use serve::{looks_like_http, serve, serve_connection, serve_io, serve_tls, serve_with};
