//! The manager's routes: the list every route needs a case in, checked
//! against the router's source and the OpenAPI document.

use std::collections::BTreeSet;

use crate::common::{start, Api};

/// Every route of the manager: method and path as the router writes them
/// (`{*rest}` as `{rest}`).
pub const ROUTES: &[(&str, &str)] = &[
    ("POST", "/api/v1/login"),
    ("POST", "/api/v1/logout"),
    ("GET", "/api/v1/session"),
    ("GET", "/api/v1/users"),
    ("POST", "/api/v1/users"),
    ("PATCH", "/api/v1/users/{id}"),
    ("DELETE", "/api/v1/users/{id}"),
    ("GET", "/api/v1/tokens"),
    ("POST", "/api/v1/tokens"),
    ("DELETE", "/api/v1/tokens/{id}"),
    ("GET", "/api/v1/sites"),
    ("POST", "/api/v1/sites"),
    ("DELETE", "/api/v1/sites/{id}"),
    ("GET", "/api/v1/devices"),
    ("POST", "/api/v1/devices"),
    ("POST", "/api/v1/devices/certificate"),
    ("GET", "/api/v1/devices/{id}"),
    ("PUT", "/api/v1/devices/{id}"),
    ("DELETE", "/api/v1/devices/{id}"),
    ("POST", "/api/v1/devices/{id}/refresh"),
    ("GET", "/api/v1/devices/{id}/snapshots"),
    ("GET", "/api/v1/alerts"),
    ("GET", "/api/v1/experiments"),
    ("POST", "/api/v1/experiments"),
    ("GET", "/api/v1/experiments/{id}"),
    ("PUT", "/api/v1/experiments/{id}"),
    ("DELETE", "/api/v1/experiments/{id}"),
    ("POST", "/api/v1/experiments/{id}/members"),
    ("DELETE", "/api/v1/experiments/{id}/members/{username}"),
    ("GET", "/api/v1/experiments/{id}/configs"),
    ("POST", "/api/v1/experiments/{id}/configs"),
    ("GET", "/api/v1/configs/{id}"),
    ("PUT", "/api/v1/configs/{id}"),
    ("DELETE", "/api/v1/configs/{id}"),
    ("POST", "/api/v1/configs/{id}/copy"),
    ("GET", "/api/v1/experiments/{id}/runs"),
    ("POST", "/api/v1/experiments/{id}/runs"),
    ("GET", "/api/v1/runs/{id}"),
    ("POST", "/api/v1/runs/{id}/start"),
    ("POST", "/api/v1/runs/{id}/pause"),
    ("POST", "/api/v1/runs/{id}/resume"),
    ("POST", "/api/v1/runs/{id}/stop"),
    ("GET", "/api/v1/runs/{id}/status"),
    ("GET", "/api/v1/runs/{id}/log"),
    ("GET", "/api/v1/runs/{id}/events"),
    ("GET", "/api/v1/runs/{id}/files"),
    ("GET", "/api/v1/runs/{id}/files/{device}/{name}"),
    ("GET", "/api/v1/experiments/{id}/streams"),
    ("GET", "/api/v1/experiments/{id}/query/{rest}"),
    ("GET", "/api/v1/experiments/{id}/dashboards"),
    ("PUT", "/api/v1/experiments/{id}/dashboards/{name}"),
    ("DELETE", "/api/v1/experiments/{id}/dashboards/{name}"),
    ("GET", "/api/v1/audit"),
    ("GET", "/api/v1/openapi.json"),
];

/// `(method, path)` of every `.route(...)` in the router's source.
pub fn router_routes() -> BTreeSet<(String, String)> {
    let src = include_str!("../../src/api/mod.rs");
    let body = &src[src.find("pub fn routes()").expect("routes() in api/mod.rs")..];
    let body = &body[..body.find("\n}\n").expect("end of routes()")];
    let mut out = BTreeSet::new();
    for part in body.split(".route(").skip(1) {
        let path = part.split('"').nth(1).expect("a path literal");
        let path = path.replace("{*", "{");
        for (f, m) in [
            ("get(", "GET"),
            ("post(", "POST"),
            ("put(", "PUT"),
            ("patch(", "PATCH"),
            ("delete(", "DELETE"),
        ] {
            // `get(x)` or `.get(x)`, not `forget(`.
            let called = part
                .match_indices(f)
                .any(|(i, _)| i == 0 || !part.as_bytes()[i - 1].is_ascii_alphanumeric());
            if called {
                out.insert((m.to_owned(), path.clone()));
            }
        }
    }
    out
}

/// Checks [`ROUTES`] against the router and the OpenAPI document.
pub fn check() {
    let listed: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    assert_eq!(listed.len(), ROUTES.len(), "a route listed twice");
    let router = router_routes();
    assert_eq!(
        listed, router,
        "ROUTES (tests/tenants/routes.rs) against the router (src/api/mod.rs): list a new \
         route and give it a case in tests/tenants/sweep.rs"
    );
    // The OpenAPI document describes the same routes (itself undocumented).
    let t = start(|_| {});
    let (s, doc) = Api::new(&t.base).get("/api/v1/openapi.json");
    assert_eq!(s, 200);
    let mut documented = BTreeSet::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for m in ops.as_object().unwrap().keys() {
            documented.insert((m.to_uppercase(), path.clone()));
        }
    }
    documented.insert(("GET".into(), "/api/v1/openapi.json".into()));
    assert_eq!(listed, documented, "ROUTES against /api/v1/openapi.json");
}

/// The listed route `method path`.
pub fn route(method: &str, path: &str) -> (&'static str, &'static str) {
    *ROUTES
        .iter()
        .find(|(m, p)| *m == method && *p == path)
        .unwrap_or_else(|| panic!("no route {method} {path}"))
}
