//! Request guards shared by every endpoint.
//!
//! - [`json_only`]: a state-changing request (anything but GET, HEAD and
//!   OPTIONS) must say `Content-Type: application/json`. A web page can
//!   make a browser send a cross-site form post or a `text/plain` fetch
//!   without asking, but not a JSON one (that needs a CORS preflight, which
//!   we refuse unless an origin is configured), so this closes cross-site
//!   request forgery against local control endpoints.
//! - [`not_found`] and [`method_not_allowed`]: JSON answers for paths and
//!   methods that no route serves.

use axum::extract::Request;
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

/// Middleware: refuses state-changing requests that are not JSON (415).
pub async fn json_only(req: Request, next: Next) -> Response {
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
    }
    next.run(req).await
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
