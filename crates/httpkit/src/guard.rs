//! Request guards shared by every endpoint.
//!
//! - [`json_only`]: a state-changing request (anything but GET, HEAD and
//!   OPTIONS) must say `Content-Type: application/json`. A web page can
//!   make a browser send a cross-site form post or a `text/plain` fetch
//!   without asking, but not a JSON one (that needs a CORS preflight, which
//!   we refuse unless an origin is configured), so this closes cross-site
//!   request forgery against local control endpoints. It also reads the
//!   whole body (within the body limit) before the handler runs: a handler
//!   that answers without reading it (logout ignores its `{}`) would make
//!   the server close the connection whenever the body had not fully
//!   arrived yet, after a response that did not say so, and a client that
//!   kept the connection for its next request would see that one fail.
//! - [`not_found`] and [`method_not_allowed`]: JSON answers for paths and
//!   methods that no route serves.

use axum::extract::{Request, State};
use axum::http::{header::CONTENT_TYPE, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::ApiError;

/// Whether a method changes state.
pub fn is_state_changing(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Whether a content type is JSON (`application/json`, any parameters).
pub fn is_json(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// Middleware: refuses state-changing requests that are not JSON (415),
/// and reads their bodies whole, up to `limit` bytes (413 beyond).
pub async fn json_only(State(limit): State<usize>, req: Request, next: Next) -> Response {
    if is_state_changing(req.method()) {
        let ok = req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(is_json);
        if !ok {
            return ApiError::new(
                axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "json_required",
                format!(
                    "{} requests must send 'Content-Type: application/json' (with a JSON body, \
                     '{{}}' when there is nothing to say)",
                    req.method()
                ),
            )
            .into_response();
        }
        let (parts, body) = req.into_parts();
        let bytes = match axum::body::to_bytes(body, limit).await {
            Ok(b) => b,
            Err(e) => return body_error(&e, limit).into_response(),
        };
        return next
            .run(Request::from_parts(parts, axum::body::Body::from(bytes)))
            .await;
    }
    next.run(req).await
}

/// The answer to a body that could not be read: too large (413), or cut
/// short by the client (400).
fn body_error(e: &axum::Error, limit: usize) -> ApiError {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if c.to_string().contains("length limit exceeded") {
            return ApiError::new(
                axum::http::StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!("request bodies are limited to {limit} bytes: send less"),
            );
        }
        cause = c.source();
    }
    ApiError::bad_request(
        "body_unreadable",
        format!("the request body could not be read ({e}): send it again"),
    )
}

/// Fallback for paths no route serves.
pub async fn not_found(req: Request) -> ApiError {
    ApiError::not_found(
        "no_such_endpoint",
        format!(
            "no endpoint {} {}: see the component's API reference",
            req.method(),
            req.uri().path()
        ),
    )
}

/// Fallback for a known path with a method it does not serve.
pub async fn method_not_allowed(req: Request) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{} is not allowed on {}", req.method(), req.uri().path()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_types() {
        assert!(is_json("application/json"));
        assert!(is_json("Application/JSON; charset=utf-8"));
        assert!(!is_json("application/x-www-form-urlencoded"));
        assert!(!is_json("text/plain"));
        assert!(!is_json("application/jsonp"));
    }
}
