//! Bob through every route: against alice's experiment, configuration,
//! run, files, streams and tails, and the shared devices.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::routes::{route, ROUTES};
use super::world::{leaked, World};
use crate::common::Api;
use crate::{A_DOMAIN, A_NAME, A_STREAM};

/// One request of bob's and the statuses it may get.
struct Case {
    route: (&'static str, &'static str),
    method: &'static str,
    path: String,
    body: Value,
    want: &'static [u16],
}

fn case(
    route: (&'static str, &'static str),
    path: impl Into<String>,
    body: Value,
    want: &'static [u16],
) -> Case {
    Case {
        route,
        method: route.0,
        path: path.into(),
        body,
        want,
    }
}

/// Bob's requests against alice's objects and the shared ones.
fn cases(w: &World) -> Vec<Case> {
    let (tap, coll, site, alice_id, tok_a) = (w.tap, w.coll, w.site, w.alice_id, w.tok_a);
    let (ea, ca, ra, eb, eb_empty, rb) = (w.ea, w.ca, w.ra, w.eb, w.eb_empty, w.rb);
    let (sa, a_file) = (&w.sa, &w.a_files[0]);
    let config = |n: &str, m: &str| w.config(n, m);
    let none = json!({});
    let q = |e: i64, rest: &str| format!("/api/v1/experiments/{e}/query/{rest}");
    let traversal = [
        format!("%252e%252e/{A_DOMAIN}/streams/{A_STREAM}/rows"),
        format!("%2e%2e/{A_DOMAIN}/streams/{A_STREAM}/rows"),
        format!(".%252e/{A_DOMAIN}/streams/{A_STREAM}/tail"),
        format!("%25252e%25252e/{A_DOMAIN}/streams/capture_counters/rows"),
        "%252e%252e/%252e%252e/domains".to_owned(),
        format!("streams/..%5c..%5c{A_DOMAIN}/rows"),
        format!("streams/%252e%252e%252f%252e%252e%252f{A_DOMAIN}%252fstreams%252f{A_STREAM}/rows"),
        format!("streams/{A_STREAM}%3b/rows"),
        "streams/%c0%ae%c0%ae/rows".to_owned(),
        "streams/x%00/rows".to_owned(),
    ];
    let file_tricks = [
        a_file.clone(),
        format!("..%2f{sa}%2f{a_file}"),
        format!("%2e%2e%2f{sa}%2f{a_file}"),
        format!("..%252f{sa}%252f{a_file}"),
        format!("..%5c{sa}%5c{a_file}"),
    ];

    let mut cases = vec![
        case(
            route("GET", "/api/v1/session"),
            "/api/v1/session",
            json!({}),
            &[200],
        ),
        case(
            route("GET", "/api/v1/users"),
            "/api/v1/users",
            json!({}),
            &[403],
        ),
        case(
            route("POST", "/api/v1/users"),
            "/api/v1/users",
            json!({"username": "mallory", "password": "mallory-password"}),
            &[403],
        ),
        case(
            route("PATCH", "/api/v1/users/{id}"),
            format!("/api/v1/users/{alice_id}"),
            json!({"password": "bob-knows-it-now"}),
            &[403],
        ),
        case(
            route("DELETE", "/api/v1/users/{id}"),
            format!("/api/v1/users/{alice_id}"),
            json!({}),
            &[403],
        ),
        case(
            route("GET", "/api/v1/tokens"),
            "/api/v1/tokens",
            json!({}),
            &[200],
        ),
        case(
            route("POST", "/api/v1/tokens"),
            "/api/v1/tokens",
            json!({"name": "another"}),
            &[201],
        ),
        case(
            route("DELETE", "/api/v1/tokens/{id}"),
            format!("/api/v1/tokens/{tok_a}"),
            json!({}),
            &[404],
        ),
        case(
            route("GET", "/api/v1/sites"),
            "/api/v1/sites",
            json!({}),
            &[200],
        ),
        case(
            route("POST", "/api/v1/sites"),
            "/api/v1/sites",
            json!({"name": "mine"}),
            &[403],
        ),
        case(
            route("DELETE", "/api/v1/sites/{id}"),
            format!("/api/v1/sites/{site}"),
            json!({}),
            &[403],
        ),
        case(
            route("GET", "/api/v1/devices"),
            "/api/v1/devices",
            json!({}),
            &[200],
        ),
        case(
            route("POST", "/api/v1/devices"),
            "/api/v1/devices",
            json!({"name": "x", "kind": "capture", "hostname": "127.0.0.1", "port": 1}),
            &[403],
        ),
        case(
            route("POST", "/api/v1/devices/certificate"),
            "/api/v1/devices/certificate",
            json!({"hostname": "127.0.0.1", "port": 1}),
            &[403],
        ),
        case(
            route("GET", "/api/v1/alerts"),
            "/api/v1/alerts",
            json!({}),
            &[200],
        ),
        case(
            route("GET", "/api/v1/experiments"),
            "/api/v1/experiments",
            json!({}),
            &[200],
        ),
        case(
            route("POST", "/api/v1/experiments"),
            "/api/v1/experiments",
            json!({"name": "bob takes", "domain": A_DOMAIN, "collector": coll}),
            &[409],
        ),
        case(
            route("POST", "/api/v1/experiments"),
            "/api/v1/experiments",
            json!({"name": A_NAME}),
            &[409],
        ),
        case(
            route("GET", "/api/v1/audit"),
            "/api/v1/audit",
            json!({}),
            &[403],
        ),
        case(
            route("GET", "/api/v1/openapi.json"),
            "/api/v1/openapi.json",
            json!({}),
            &[200],
        ),
        // Bob's own run, given alice's configuration.
        case(
            route("POST", "/api/v1/experiments/{id}/runs"),
            format!("/api/v1/experiments/{eb}/runs"),
            json!({"config": ca}),
            &[400],
        ),
        // Bob's own experiment: a domain without data, a stream of alice's.
        case(
            route("GET", "/api/v1/experiments/{id}/streams"),
            format!("/api/v1/experiments/{eb_empty}/streams"),
            json!({}),
            &[200],
        ),
    ];
    for d in [tap, coll] {
        cases.extend([
            case(
                route("GET", "/api/v1/devices/{id}"),
                format!("/api/v1/devices/{d}"),
                json!({}),
                &[200],
            ),
            case(
                route("PUT", "/api/v1/devices/{id}"),
                format!("/api/v1/devices/{d}"),
                json!({"name": "x", "kind": "capture", "hostname": "127.0.0.1", "port": 1, "version": 1}),
                &[403],
            ),
            case(
                route("DELETE", "/api/v1/devices/{id}"),
                format!("/api/v1/devices/{d}"),
                json!({}),
                &[403],
            ),
            case(
                route("POST", "/api/v1/devices/{id}/refresh"),
                format!("/api/v1/devices/{d}/refresh"),
                json!({}),
                &[403],
            ),
            case(
                route("GET", "/api/v1/devices/{id}/snapshots"),
                format!("/api/v1/devices/{d}/snapshots?since=0"),
                json!({}),
                &[200],
            ),
        ]);
    }
    let e = format!("/api/v1/experiments/{ea}");
    cases.extend([
        case(
            route("GET", "/api/v1/experiments/{id}"),
            &e,
            none.clone(),
            &[404],
        ),
        case(
            route("PUT", "/api/v1/experiments/{id}"),
            &e,
            json!({"description": "bob was here", "version": 1}),
            &[404],
        ),
        case(
            route("DELETE", "/api/v1/experiments/{id}"),
            &e,
            none.clone(),
            &[404],
        ),
        case(
            route("DELETE", "/api/v1/experiments/{id}"),
            format!("{e}?force=true"),
            none.clone(),
            &[404],
        ),
        case(
            route("POST", "/api/v1/experiments/{id}/members"),
            format!("{e}/members"),
            json!({"username": "bob"}),
            &[404],
        ),
        case(
            route("DELETE", "/api/v1/experiments/{id}/members/{username}"),
            format!("{e}/members/alice"),
            none.clone(),
            &[404],
        ),
        case(
            route("GET", "/api/v1/experiments/{id}/configs"),
            format!("{e}/configs"),
            none.clone(),
            &[404],
        ),
        case(
            route("POST", "/api/v1/experiments/{id}/configs"),
            format!("{e}/configs"),
            config("bobs", "x"),
            &[404],
        ),
        case(
            route("GET", "/api/v1/experiments/{id}/runs"),
            format!("{e}/runs"),
            none.clone(),
            &[404],
        ),
        case(
            route("POST", "/api/v1/experiments/{id}/runs"),
            format!("{e}/runs"),
            json!({"config": ca}),
            &[404],
        ),
        case(
            route("GET", "/api/v1/experiments/{id}/streams"),
            format!("{e}/streams"),
            none.clone(),
            &[404],
        ),
        case(
            route("GET", "/api/v1/experiments/{id}/dashboards"),
            format!("{e}/dashboards"),
            none.clone(),
            &[404],
        ),
        case(
            route("PUT", "/api/v1/experiments/{id}/dashboards/{name}"),
            format!("{e}/dashboards/main"),
            json!({"plots": [{"version": 1, "title": "t", "domain": A_DOMAIN, "stream": A_STREAM,
                "fields": ["s"], "y2": [], "senders": [], "from": "2026-01-01T00:00:00Z",
                "to": "2026-01-01T00:01:00Z", "time": "server", "derive": "none",
                "points": 100, "timeaxis": "utc"}]}),
            &[404],
        ),
        case(
            route("DELETE", "/api/v1/experiments/{id}/dashboards/{name}"),
            format!("{e}/dashboards/main"),
            none.clone(),
            &[404],
        ),
    ]);
    let c = format!("/api/v1/configs/{ca}");
    let mut edit = config("bobs", "x");
    edit["version"] = json!(1);
    cases.extend([
        case(
            route("GET", "/api/v1/configs/{id}"),
            &c,
            none.clone(),
            &[404],
        ),
        case(
            route("PUT", "/api/v1/configs/{id}"),
            &c,
            edit.clone(),
            &[404],
        ),
        // His own, naming her experiment in the body (ignored: the second
        // time is a stale edit or a taken name).
        case(
            route("PUT", "/api/v1/configs/{id}"),
            format!("/api/v1/configs/{}", w.cb),
            {
                let mut e = edit.clone();
                e["experiment"] = json!(ea);
                e["name"] = json!("bobcfg");
                e
            },
            &[200, 409],
        ),
        case(
            route("POST", "/api/v1/experiments/{id}/configs"),
            format!("/api/v1/experiments/{eb}/configs"),
            {
                let mut e = config("bobs2", "x");
                e["experiment"] = json!(ea);
                e
            },
            &[201, 409],
        ),
        case(
            route("DELETE", "/api/v1/configs/{id}"),
            &c,
            none.clone(),
            &[404],
        ),
        case(
            route("POST", "/api/v1/configs/{id}/copy"),
            format!("{c}/copy"),
            json!({"name": "stolen"}),
            &[404],
        ),
    ]);
    let run = format!("/api/v1/runs/{ra}");
    cases.push(case(
        route("GET", "/api/v1/runs/{id}"),
        &run,
        none.clone(),
        &[404],
    ));
    for (m, a) in [
        ("POST", "start"),
        ("POST", "pause"),
        ("POST", "resume"),
        ("POST", "stop"),
        ("GET", "status"),
        ("GET", "log"),
        ("GET", "events"),
        ("GET", "files"),
    ] {
        let template = ROUTES
            .iter()
            .find(|(rm, rp)| {
                *rm == m && rp.ends_with(&format!("/{a}")) && rp.starts_with("/api/v1/runs/")
            })
            .copied()
            .unwrap();
        cases.push(case(template, format!("{run}/{a}"), none.clone(), &[404]));
    }
    let file_route = route("GET", "/api/v1/runs/{id}/files/{device}/{name}");
    cases.push(case(
        file_route,
        format!("{run}/files/{tap}/{a_file}"),
        none.clone(),
        &[404],
    ));
    for name in &file_tricks {
        cases.push(case(
            file_route,
            format!("/api/v1/runs/{rb}/files/{tap}/{name}"),
            none.clone(),
            &[400, 404],
        ));
    }
    let query = route("GET", "/api/v1/experiments/{id}/query/{rest}");
    for rest in [
        String::new(),
        "streams".into(),
        format!("streams/{A_STREAM}"),
        format!("streams/{A_STREAM}/rows"),
        format!("streams/{A_STREAM}/tail"),
        "streams/capture_counters/rows?format=csv".into(),
    ] {
        cases.push(case(query, q(ea, &rest), none.clone(), &[404]));
        for e in [eb, eb_empty] {
            // Bob's own: alice's stream is not in his domain; his empty
            // domain has nothing.
            if rest.contains(A_STREAM) || e == eb_empty {
                cases.push(case(query, q(e, &rest), none.clone(), &[404]));
            }
        }
    }
    for rest in &traversal {
        cases.push(case(query, q(eb, rest), none.clone(), &[400]));
    }

    cases
}

/// Every case as bob with his browser session and with his token, then
/// logging in and out; fails for a route no case went through.
pub fn sweep(w: &World) {
    let (markers, a_file_bytes) = (&w.markers, &w.a_file_bytes);
    let (bob_cookie, bob_api) = (&w.bob, &w.bob_token);
    let cases = cases(w);
    let mut covered = BTreeSet::new();
    let mut failures = Vec::new();
    for c in &cases {
        covered.insert(c.route);
        for (who, api) in [("cookie", &bob_cookie), ("token", &bob_api)] {
            let (s, headers, bytes) = api.raw(c.method, &c.path, &c.body);
            let text = format!("{s}\n{headers}\n{}", String::from_utf8_lossy(&bytes));
            let sent = format!("{} {}", c.path, c.body);
            let found = leaked(markers, &text, &sent);
            if !c.want.contains(&s) || !found.is_empty() {
                failures.push(format!(
                    "bob ({who}) {} {}: {s} (want {:?}), leaked {found:?}: {}",
                    c.method,
                    c.path,
                    c.want,
                    text.chars().take(600).collect::<String>()
                ));
            }
            assert!(
                a_file_bytes.len() < 64 || !bytes.windows(64).any(|w| w == &a_file_bytes[..64]),
                "{} {}: alice's file bytes",
                c.method,
                c.path
            );
        }
    }

    // Logging in and out touch no experiment; bob as alice gets nowhere.
    let anon = Api::new(&w.t.base);
    for (body, want) in [
        (
            json!({"username": "alice", "password": "bob-password"}),
            401,
        ),
        (json!({"username": "bob", "password": "bob-password"}), 200),
    ] {
        let (s, h, b) = anon.raw("POST", "/api/v1/login", &body);
        let text = format!("{h}{}", String::from_utf8_lossy(&b));
        assert!(
            s == want && leaked(markers, &text, "").is_empty(),
            "{s} {text}"
        );
    }
    covered.insert(route("POST", "/api/v1/login"));
    let once = Api::login(&w.t.base, "bob", "bob-password");
    let (s, h, b) = once.raw("POST", "/api/v1/logout", &json!({}));
    assert_eq!(s, 200);
    assert!(leaked(markers, &format!("{h}{}", String::from_utf8_lossy(&b)), "").is_empty());
    covered.insert(route("POST", "/api/v1/logout"));

    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    let missing: Vec<_> = ROUTES.iter().filter(|r| !covered.contains(r)).collect();
    assert!(missing.is_empty(), "routes bob never tried: {missing:?}");
}
