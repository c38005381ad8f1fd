//! The web front end's files, embedded in the binary at build time.
//!
//! `build.rs` turns every file of `web/dist/` (built from `web/src/` by
//! `web/build.mjs`) into a table of `(path, content type, bytes)`. This
//! router serves them:
//!
//! - `/assets/…`: the bundle and style sheet, whose names carry a content
//!   hash, so they are cached as `immutable` for a year;
//! - `/` and every other path that is not an API path: `index.html`
//!   (`no-cache`), because the front end routes on the client
//!   (`/experiments/7`, `/runs/21`, … are pages of the same document);
//! - an unknown `/api/…` path: a JSON 404 in the API's error format, never
//!   the HTML page.

use axum::body::Body;
use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

mod table {
    include!(concat!(env!("OUT_DIR"), "/assets_table.rs"));
}

/// Content Security Policy of the page: everything from this origin only
/// (no CDN, no inline script); uPlot positions elements with inline styles.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                   img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; \
                   base-uri 'none'; form-action 'self'";

/// Routes serving `/` and `/assets/…` from the embedded files, and the
/// page for client-side routes.
pub fn router() -> Router {
    Router::new()
        .route("/", get(|| async { serve("/") }))
        .route(
            "/{*path}",
            get(|Path(path): Path<String>| async move { serve(&format!("/{path}")) }),
        )
}

/// The embedded file at `path`, if any.
fn find(path: &str) -> Option<(&'static str, &'static [u8])> {
    table::FILES
        .iter()
        .find(|(p, _, _)| *p == path)
        .map(|(_, ct, body)| (*ct, *body))
}

/// Answers a GET of `path` (already percent-decoded, starting with `/`).
fn serve(path: &str) -> Response {
    if path == "/api" || path.starts_with("/api/") {
        return not_found_json(path);
    }
    if path.starts_with("/assets/") {
        return match find(path) {
            Some((ct, body)) => file(ct, body, "public, max-age=31536000, immutable"),
            None => (StatusCode::NOT_FOUND, "no such asset\n").into_response(),
        };
    }
    let Some((ct, body)) = find("/index.html") else {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            "front end not embedded\n",
        )
            .into_response();
    };
    let mut resp = file(ct, body, "no-cache");
    resp.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    resp.headers_mut().insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    resp
}

fn file(content_type: &'static str, body: &'static [u8], cache: &'static str) -> Response {
    let mut resp = Response::new(Body::from(body));
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}

fn not_found_json(path: &str) -> Response {
    let body = serde_json::json!({"error": {
        "status": 404,
        "code": "not_found",
        "message": format!("no API endpoint at {path}; see /api/v1/openapi.json"),
    }});
    (StatusCode::NOT_FOUND, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(r: &Response, name: header::HeaderName) -> &str {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    #[test]
    fn the_page_is_served_for_client_routes() {
        for path in ["/", "/experiments/7", "/runs/21", "/login"] {
            let r = serve(path);
            assert_eq!(r.status(), StatusCode::OK, "{path}");
            assert_eq!(header(&r, header::CONTENT_TYPE), "text/html; charset=utf-8");
            assert_eq!(header(&r, header::CACHE_CONTROL), "no-cache");
            assert!(header(&r, header::CONTENT_SECURITY_POLICY).contains("default-src 'self'"));
        }
    }

    #[test]
    fn every_asset_the_page_names_is_embedded_and_immutable() {
        let (_, page) = find("/index.html").expect("index.html embedded");
        let page = std::str::from_utf8(page).expect("utf-8 page");
        let named: Vec<&str> = page
            .split('"')
            .filter(|s| s.starts_with("/assets/"))
            .collect();
        assert_eq!(named.len(), 2, "one script and one style sheet: {named:?}");
        for a in named {
            let r = serve(a);
            assert_eq!(r.status(), StatusCode::OK, "{a}");
            assert!(header(&r, header::CACHE_CONTROL).contains("immutable"));
            let ct = header(&r, header::CONTENT_TYPE);
            assert!(
                ct.starts_with("text/javascript") || ct.starts_with("text/css"),
                "{a}: {ct}"
            );
        }
    }

    #[test]
    fn unknown_assets_and_api_paths_are_404_not_the_page() {
        assert_eq!(serve("/assets/nope.js").status(), StatusCode::NOT_FOUND);
        let r = serve("/api/v1/nope");
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        assert_eq!(header(&r, header::CONTENT_TYPE), "application/json");
    }
}
