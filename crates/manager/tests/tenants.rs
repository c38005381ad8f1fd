//! Tenant isolation, route by route. Alice and bob each own an experiment
//! on the same real collection server and the same real capture daemon (on
//! `lo`, so as root), with sessions, files, counters, streams and a live
//! tail. Bob, with a browser session and with an API token, tries every
//! route of the manager against alice's experiment, configuration, run,
//! files, streams and the shared devices: each answer must be the expected
//! 403 or 404 (400 for relay paths refused before anything is sent, 200
//! for the shared lists), and no status line, header or body may carry any
//! of the marker strings planted in alice's data, unless bob sent that
//! very string himself.
//!
//! [`ROUTES`] is the route list; `the_route_list_is_the_routers` checks it
//! against the router's source and the OpenAPI document, and the main test
//! fails for a route no request of bob's went through. So a new route
//! needs a case here before the suite passes.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::time::Duration;

use capture::daemon::{Daemon, DaemonConfig};
use common::{add_users, code, collection_server, start, wait_for, Api, ADMIN_PW};
use serde_json::{json, Value};

/// In every string of alice's: finding it anywhere bob looks is a leak.
const TAG: &str = "zq7mk";
const A_DOMAIN: &str = "alicedom_zq7mk";
const A_NAME: &str = "Alice zq7mk study";
const A_DESC: &str = "alicedesc_zq7mk";
const A_CONFIG: &str = "alicecfg_zq7mk";
const A_META: &str = "alicemeta_zq7mk";
const A_STREAM: &str = "alicestream_zq7mk";
const A_ROW: &str = "alicerow_zq7mk";
const A_ROW2: &str = "alicerowlive_zq7mk";
const A_TOKEN: &str = "alicetoken_zq7mk";

/// Every route of the manager: method and path as the router writes them
/// (`{*rest}` as `{rest}`).
const ROUTES: &[(&str, &str)] = &[
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
    ("GET", "/api/v1/runs/{id}/files"),
    ("GET", "/api/v1/runs/{id}/files/{device}/{name}"),
    ("GET", "/api/v1/experiments/{id}/streams"),
    ("GET", "/api/v1/experiments/{id}/query/{rest}"),
    ("GET", "/api/v1/audit"),
    ("GET", "/api/v1/openapi.json"),
];

/// `(method, path)` of every `.route(...)` in the router's source.
fn router_routes() -> BTreeSet<(String, String)> {
    let src = include_str!("../src/api/mod.rs");
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

#[test]
fn the_route_list_is_the_routers() {
    let listed: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    assert_eq!(listed.len(), ROUTES.len(), "a route listed twice");
    let router = router_routes();
    assert_eq!(
        listed, router,
        "tests/tenants.rs ROUTES against the router (src/api/mod.rs): give a new route a case in \
         bob_gets_nothing_of_alices"
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

/// The markers found in `text` that bob did not send himself (`sent`).
fn leaked<'a>(markers: &'a [String], text: &str, sent: &str) -> Vec<&'a str> {
    markers
        .iter()
        .map(String::as_str)
        .filter(|m| text.contains(m) && !sent.contains(m))
        .collect()
}

/// Reads an SSE body until a line contains `want` (a tail is live).
fn tail_until(resp: ureq::http::Response<ureq::Body>, want: &str) {
    let mut lines = BufReader::new(resp.into_body().into_reader());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            lines.read_line(&mut line).unwrap() > 0,
            "tail ended before {want}"
        );
        if line.contains(want) {
            return;
        }
    }
}

#[test]
fn bob_gets_nothing_of_alices() {
    if !testkit::have_root("a capture daemon on lo (AF_PACKET)") {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let srv = collection_server(&rt, dir.path(), |_| {});
    let (collect, http) = (srv.local_addrs()[0], srv.http_addr().unwrap());
    let mut dcfg = DaemonConfig::new(&["lo"], &dir.path().join("capture"));
    dcfg.listen = "127.0.0.1:0".parse().unwrap();
    dcfg.collect = Some(collect.to_string());
    dcfg.plain_http = true;
    let dtokens = dir.path().join("daemon.tokens");
    httpkit::secret::write_private(&dtokens, "* daemon-op control\n").unwrap();
    dcfg.token_file = Some(dtokens);
    let daemon = rt.block_on(Daemon::start(dcfg)).unwrap();
    let daemon_url = format!("http://{}", daemon.local_addr());
    let creds = dir.path().join("credentials");
    httpkit::secret::write_private(&creds, "tap daemon-op\n").unwrap();
    let t = start(|c| {
        c.monitor_interval = Duration::from_millis(300);
        c.credentials = Some(creds.clone());
    });
    let admin = Api::login(&t.base, "admin", ADMIN_PW);
    let dev = |name: &str, kind: &str, port: u16, cred: Option<&str>| {
        admin.ok(
            "/api/v1/devices",
            json!({"name": name, "kind": kind, "hostname": "127.0.0.1", "port": port,
                   "credential_ref": cred}),
        )["id"]
            .as_i64()
            .unwrap()
    };
    let tap = dev("tap", "capture", daemon.local_addr().port(), Some("tap"));
    let coll = dev("coll", "collector", http.port(), None);
    admin.ok(&format!("/api/v1/devices/{tap}/refresh"), json!({}));
    let site = admin.ok("/api/v1/sites", json!({"name": "lab"}))["id"].clone();
    add_users(&admin, &["alice", "bob"]);
    let alice = Api::login(&t.base, "alice", "alice-password");
    let bob = Api::login(&t.base, "bob", "bob-password");
    let bob_token = bob.ok("/api/v1/tokens", json!({"name": "bob script"}))["secret"]
        .as_str()
        .unwrap()
        .to_owned();
    let tok_a = alice.ok("/api/v1/tokens", json!({"name": A_TOKEN}))["id"].clone();
    let alice_id = alice.get("/api/v1/session").1["user"]["id"].clone();

    // Alice's experiment, configuration and running session with files and
    // counters, her stream on the collector and a live tail of it.
    let ea = alice.ok(
        "/api/v1/experiments",
        json!({"name": A_NAME, "domain": A_DOMAIN, "collector": coll, "description": A_DESC}),
    )["id"]
        .as_i64()
        .unwrap();
    let session_cfg = json!({"interface": "lo", "outputs": [{"type": "pcap"}],
                             "counter_interval_s": 1});
    let config = |name: &str, meta: &str| {
        json!({"name": name, "device": tap, "session": session_cfg,
               "storage": {"type": "local"}, "metadata": {"purpose": meta}})
    };
    let ca = alice.ok(
        &format!("/api/v1/experiments/{ea}/configs"),
        config(A_CONFIG, A_META),
    )["id"]
        .as_i64()
        .unwrap();
    let ra = alice.ok(
        &format!("/api/v1/experiments/{ea}/runs"),
        json!({"config": ca}),
    );
    let sa = ra["devices"][0]["session"].as_str().unwrap().to_owned();
    let ra = ra["id"].as_i64().unwrap();
    let started = alice.ok(&format!("/api/v1/runs/{ra}/start"), json!({}));
    assert_eq!(started["state"], "running", "{started}");
    common::feed(collect, http, A_DOMAIN, A_STREAM, A_ROW);
    let mut a_files = Vec::new();
    wait_for("alice's pcap file with packets", || {
        let (_, f) = alice.get(&format!("/api/v1/runs/{ra}/files"));
        a_files = f
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["bytes"].as_u64().unwrap_or(0) > 24)
            .map(|f| f["name"].as_str().unwrap().to_owned())
            .collect();
        !a_files.is_empty()
    });
    let a_file = a_files[0].clone();
    let a_file_bytes = alice
        .get_bytes(&format!("/api/v1/runs/{ra}/files/{tap}/{a_file}"))
        .1;
    assert!(a_file_bytes.len() > 24);
    wait_for("alice's capture counters on the collector", || {
        let (s, v) = alice.get(&format!(
            "/api/v1/experiments/{ea}/query/streams/capture_counters/rows"
        ));
        s == 200 && v.to_string().contains(&sa)
    });
    let tail = alice.open(
        &format!("/api/v1/experiments/{ea}/query/streams/{A_STREAM}/tail"),
        &[],
    );
    assert_eq!(tail.status().as_u16(), 200);

    // Bob's experiments: one with a running session and data, one that
    // has no data yet, on the same collector and daemon.
    let eb = bob.ok(
        "/api/v1/experiments",
        json!({"name": "bob study", "domain": "bobdom", "collector": coll}),
    )["id"]
        .as_i64()
        .unwrap();
    let eb_empty = bob.ok(
        "/api/v1/experiments",
        json!({"name": "bob empty", "domain": "bobempty", "collector": coll}),
    )["id"]
        .as_i64()
        .unwrap();
    let cb = bob.ok(
        &format!("/api/v1/experiments/{eb}/configs"),
        config("bobcfg", "bob's"),
    )["id"]
        .as_i64()
        .unwrap();
    let rb = bob.ok(
        &format!("/api/v1/experiments/{eb}/runs"),
        json!({"config": cb}),
    );
    let sb = rb["devices"][0]["session"].as_str().unwrap().to_owned();
    let rb = rb["id"].as_i64().unwrap();
    assert_eq!(
        bob.ok(&format!("/api/v1/runs/{rb}/start"), json!({}))["state"],
        "running"
    );
    common::feed(collect, http, "bobdom", "bobstream", "bobrow");

    // A session named as bob's next run's will be, made on the daemon for
    // alice's domain (by alice's scripts, say): his start is refused (409 on
    // the daemon) without a word about it, and it never shows as his.
    let rb2 = bob.ok(
        &format!("/api/v1/experiments/{eb}/runs"),
        json!({"config": cb}),
    );
    let (rb2, sb2) = (
        rb2["id"].as_i64().unwrap(),
        rb2["devices"][0]["session"].as_str().unwrap().to_owned(),
    );
    let mut taken = session_cfg.clone();
    taken["name"] = json!(sb2);
    let resp = ureq::post(format!(
        "{daemon_url}/api/v1/sessions?experiment={A_DOMAIN}"
    ))
    .content_type("application/json")
    .header("Authorization", "Bearer daemon-op")
    .send(taken.to_string())
    .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    ureq::post(format!("{daemon_url}/api/v1/sessions/{sb2}/start"))
        .content_type("application/json")
        .header("Authorization", "Bearer daemon-op")
        .send("{}")
        .unwrap();

    // What alice's data look like from where they may be seen: each marker
    // is there to be found (or the checks below could not fail).
    wait_for(
        "snapshots and capabilities with both tenants' sessions",
        || {
            let (_, snaps) = admin.get(&format!("/api/v1/devices/{tap}/snapshots"));
            let last = snaps
                .as_array()
                .and_then(|a| a.last())
                .map(Value::to_string);
            let (_, d) = admin.get(&format!("/api/v1/devices/{coll}"));
            last.is_some_and(|l| l.contains(&sa) && l.contains(&sb) && l.contains(&sb2))
                && d.to_string().contains(A_DOMAIN)
        },
    );
    let (_, rows) = alice.get(&format!(
        "/api/v1/experiments/{ea}/query/streams/{A_STREAM}/rows"
    ));
    assert!(rows.to_string().contains(A_ROW), "{rows}");
    assert!(
        a_file.contains(&sa),
        "file names carry the session: {a_file}"
    );

    let mut markers: Vec<String> = [
        TAG, A_DOMAIN, A_NAME, A_DESC, A_CONFIG, A_META, A_STREAM, A_ROW, A_ROW2, A_TOKEN,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    markers.push(sa.clone());
    markers.extend(a_files.iter().cloned());

    let bob_cookie = bob.clone();
    let bob_api = Api::with_token(&t.base, &bob_token);
    let mut covered = BTreeSet::new();
    let route = |m: &str, p: &str| {
        *ROUTES
            .iter()
            .find(|(rm, rp)| *rm == m && *rp == p)
            .unwrap_or_else(|| panic!("no route {m} {p}"))
    };
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
        case(route("PUT", "/api/v1/configs/{id}"), &c, edit, &[404]),
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

    // Every case as bob with his browser session and with his token.
    let mut failures = Vec::new();
    for c in &cases {
        covered.insert(c.route);
        for (who, api) in [("cookie", &bob_cookie), ("token", &bob_api)] {
            let (s, headers, bytes) = api.raw(c.method, &c.path, &c.body);
            let text = format!("{s}\n{headers}\n{}", String::from_utf8_lossy(&bytes));
            let sent = format!("{} {}", c.path, c.body);
            let found = leaked(&markers, &text, &sent);
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
    let anon = Api::new(&t.base);
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
            s == want && leaked(&markers, &text, "").is_empty(),
            "{s} {text}"
        );
    }
    covered.insert(route("POST", "/api/v1/login"));
    let once = Api::login(&t.base, "bob", "bob-password");
    let (s, h, b) = once.raw("POST", "/api/v1/logout", &json!({}));
    assert_eq!(s, 200);
    assert!(leaked(&markers, &format!("{h}{}", String::from_utf8_lossy(&b)), "").is_empty());
    covered.insert(route("POST", "/api/v1/logout"));

    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    let missing: Vec<_> = ROUTES.iter().filter(|r| !covered.contains(r)).collect();
    assert!(missing.is_empty(), "routes bob never tried: {missing:?}");

    // Shared devices: bob sees his own session, counts only his.
    let (_, snaps) = bob.get(&format!("/api/v1/devices/{tap}/snapshots?since=0"));
    assert!(snaps.to_string().contains(&sb), "his own session: {snaps}");
    let (_, d) = bob.get(&format!("/api/v1/devices/{tap}"));
    assert_eq!(
        d["capabilities"]["sessions"], 1,
        "his one live session: {d}"
    );
    let (_, d) = admin.get(&format!("/api/v1/devices/{tap}"));
    assert!(d["capabilities"]["sessions"].as_u64() >= Some(3), "{d}");
    let (_, d) = bob.get(&format!("/api/v1/devices/{coll}"));
    assert!(d.to_string().contains("bobdom"), "his own domain: {d}");

    // The session of his name on the daemon is not his.
    let v = bob.ok(&format!("/api/v1/runs/{rb2}/start"), json!({}));
    assert_eq!(v["state"], "failed", "{v}");
    assert!(v.to_string().contains("session_name_taken"), "{v}");
    for p in [
        format!("/api/v1/runs/{rb2}"),
        format!("/api/v1/runs/{rb2}/status"),
        format!("/api/v1/runs/{rb2}/log"),
        format!("/api/v1/runs/{rb2}/files"),
        format!("/api/v1/devices/{tap}/snapshots?since=0"),
    ] {
        let (_, body) = bob.get(&p);
        let text = body.to_string();
        assert!(leaked(&markers, &text, "").is_empty(), "{p}: {text}");
        if p.contains("snapshots") {
            let theirs = body
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|s| {
                    s["data"]["sessions"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                })
                .any(|s| s["id"] == sb2.as_str());
            assert!(!theirs, "a session of his name that is not his: {text}");
        }
    }

    // A `dropping` alert naming alice's session (as the monitor raises it;
    // the next poll clears it, so raise it until both have read it).
    let db = common::open_db(&t);
    let mut seen = false;
    for _ in 0..50 {
        db.with(|c| {
            manager::db::monitor::raise(
                c,
                tap,
                "dropping",
                &format!("device tap is dropping packets: session {sa}: dropped_kernel +5"),
            )
        })
        .unwrap();
        let (_, all) = admin.get("/api/v1/alerts");
        let (_, his) = bob.get("/api/v1/alerts");
        if all.to_string().contains(&sa) && his.to_string().contains("dropping") {
            assert!(leaked(&markers, &his.to_string(), "").is_empty(), "{his}");
            seen = true;
            break;
        }
    }
    assert!(seen, "the alert was never read by both");

    // An experiment alice deleted leaves its stopped session and files on
    // the daemon. Bob takes its domain (without a collector nobody holds
    // it), its configuration's name and, as SQLite gives the largest run id
    // again, its run's id: his run's session has her session's name, and
    // must not become his.
    let gone = alice.ok(
        "/api/v1/experiments",
        json!({"name": "Alice zq7mk gone", "domain": "alicegone_zq7mk"}),
    )["id"]
        .as_i64()
        .unwrap();
    let cg = alice.ok(
        &format!("/api/v1/experiments/{gone}/configs"),
        config("gonecfg", A_META),
    )["id"]
        .as_i64()
        .unwrap();
    let rg = alice.ok(
        &format!("/api/v1/experiments/{gone}/runs"),
        json!({"config": cg}),
    );
    let (rg, sg) = (
        rg["id"].as_i64().unwrap(),
        rg["devices"][0]["session"].as_str().unwrap().to_owned(),
    );
    alice.ok(&format!("/api/v1/runs/{rg}/start"), json!({}));
    wait_for("files of alice's second session", || {
        let (_, f) = alice.get(&format!("/api/v1/runs/{rg}/files"));
        f.as_array().is_some_and(|a| !a.is_empty())
    });
    let (s, v) = alice.delete(&format!("/api/v1/experiments/{gone}"));
    assert_eq!(s, 200, "{v}");
    let eg = bob.ok(
        "/api/v1/experiments",
        json!({"name": "bob reuses", "domain": "alicegone_zq7mk"}),
    )["id"]
        .as_i64()
        .unwrap();
    let cbg = bob.ok(
        &format!("/api/v1/experiments/{eg}/configs"),
        config("gonecfg", "bob's"),
    )["id"]
        .as_i64()
        .unwrap();
    let rbg = bob.ok(
        &format!("/api/v1/experiments/{eg}/runs"),
        json!({"config": cbg}),
    );
    assert_eq!(
        (rbg["id"].as_i64(), rbg["devices"][0]["session"].as_str()),
        (Some(rg), Some(sg.as_str())),
        "the run id and session name of alice's deleted run come again"
    );
    let v = bob.ok(&format!("/api/v1/runs/{rg}/start"), json!({}));
    assert_eq!(v["state"], "failed", "{v}");
    assert!(v.to_string().contains("session_name_taken"), "{v}");
    let (s, files) = bob.get(&format!("/api/v1/runs/{rg}/files"));
    assert_eq!((s, files.clone()), (200, json!([])), "her files: {files}");
    let (_, log) = bob.get(&format!("/api/v1/runs/{rg}/log"));
    assert_eq!(log["devices"], json!([]), "her session's log: {log}");

    // Still his: a session of his run's name in his domain, never started
    // (the daemon made it, its answer was lost), is found and started.
    let r3 = bob.ok(
        &format!("/api/v1/experiments/{eb}/runs"),
        json!({"config": cb}),
    );
    let (r3, s3) = (
        r3["id"].as_i64().unwrap(),
        r3["devices"][0]["session"].as_str().unwrap().to_owned(),
    );
    let mut lost = session_cfg.clone();
    lost["name"] = json!(s3);
    let resp = ureq::post(format!("{daemon_url}/api/v1/sessions?experiment=bobdom"))
        .content_type("application/json")
        .header("Authorization", "Bearer daemon-op")
        .send(lost.to_string())
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let v = bob.ok(&format!("/api/v1/runs/{r3}/start"), json!({}));
    assert_eq!(v["state"], "running", "{v}");

    // Nothing of alice's changed, and her tail is live.
    let (s, e) = alice.get(&format!("/api/v1/experiments/{ea}"));
    assert_eq!(
        (s, &e["version"], &e["members"]),
        (200, &json!(1), &json!([]))
    );
    let (_, c) = alice.get(&format!("/api/v1/configs/{ca}"));
    assert_eq!(c["version"], 1);
    let (_, r) = alice.get(&format!("/api/v1/runs/{ra}"));
    assert_eq!(r["state"], "running", "{r}");
    assert_eq!(alice.get("/api/v1/tokens").1.as_array().unwrap().len(), 1);
    common::feed(collect, http, A_DOMAIN, A_STREAM, A_ROW2);
    tail_until(tail, A_ROW2);
    assert_eq!(code(&bob.get(&q(ea, "streams")).1), "not_found");

    drop(t);
    rt.block_on(daemon.shutdown());
    rt.block_on(srv.shutdown());
}
