//! Tenant isolation against a real manager and a real
//! collection server holding two experiments' data: a non-member gets
//! 400/403/404 and never a byte of the other experiment's rows, however
//! the relayed path is encoded; a domain belongs to one experiment.

mod common;

use std::net::SocketAddr;

use common::{add_users, code, collection_server, start_on, Api, Backend, TestManager, ADMIN_PW};
use serde_json::{json, Value};

/// The marker every row of alice's domain carries.
const SECRET: &str = "alice_secret_row";

/// A collection server with its query API (no tokens: the manager is the
/// only gate under test) and `rows` rows of stream `t_m` in each domain.
struct Collector {
    _srv: server::Server,
    _rt: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
    collect: SocketAddr,
    http: SocketAddr,
}

fn collector() -> Collector {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let srv = collection_server(&rt, dir.path(), |_| {});
    let (collect, http) = (srv.local_addrs()[0], srv.http_addr().unwrap());
    Collector {
        _srv: srv,
        _rt: rt,
        _dir: dir,
        collect,
        http,
    }
}

impl Collector {
    /// Sends one row of `t_m` carrying `marker` into `domain` (OMSP text)
    /// and waits until the query API serves it.
    fn feed(&self, domain: &str, marker: &str) {
        common::feed(self.collect, self.http, domain, "t_m", marker);
    }
}

/// A manager with the collector registered, users alice and bob, and
/// alice's experiment on domain `dom_a` (created before its data comes).
struct World {
    t: TestManager,
    admin: Api,
    alice: Api,
    bob: Api,
    coll: i64,
    /// Alice's experiment.
    ea: i64,
}

fn world(b: Backend, c: &Collector) -> World {
    let t = start_on(b, |_| {});
    let admin = Api::login(&t.base, "admin", ADMIN_PW);
    let coll = admin.ok(
        "/api/v1/devices",
        json!({"name": "coll", "kind": "collector", "hostname": "127.0.0.1",
               "port": c.http.port()}),
    )["id"]
        .as_i64()
        .unwrap();
    add_users(&admin, &["alice", "bob"]);
    let alice = Api::login(&t.base, "alice", "alice-password");
    let bob = Api::login(&t.base, "bob", "bob-password");
    let ea = alice.ok(
        "/api/v1/experiments",
        json!({"name": "alice exp", "domain": "dom_a", "collector": coll}),
    )["id"]
        .as_i64()
        .unwrap();
    c.feed("dom_a", SECRET);
    World {
        t,
        admin,
        alice,
        bob,
        coll,
        ea,
    }
}

fn text(api: &Api, path: &str) -> (u16, String) {
    let (s, b) = api.get_bytes(path);
    (s, String::from_utf8_lossy(&b).into_owned())
}

crate::on_both_backends!(the_relay_cannot_leave_its_domain);

fn the_relay_cannot_leave_its_domain(b: Backend) {
    let c = collector();
    let w = world(b, &c);
    let eb = w.bob.ok(
        "/api/v1/experiments",
        json!({"name": "bob exp", "domain": "dom_b", "collector": w.coll}),
    )["id"]
        .as_i64()
        .unwrap();
    c.feed("dom_b", "bob_row");

    // Each reads their own data.
    let (s, body) = text(
        &w.alice,
        &format!("/api/v1/experiments/{}/query/streams/t_m/rows", w.ea),
    );
    assert_eq!(s, 200, "{body}");
    assert!(body.contains(SECRET), "{body}");
    let (s, body) = text(
        &w.bob,
        &format!("/api/v1/experiments/{eb}/query/streams/t_m/rows"),
    );
    assert!(s == 200 && body.contains("bob_row"), "{s} {body}");

    // Bob through his own experiment, in every traversal encoding.
    let q = format!("/api/v1/experiments/{eb}/query/");
    for rest in [
        "%252e%252e/dom_a/streams/t_m/rows",
        "%252E%252E/dom_a/streams/t_m/rows",
        "%2e%2e/dom_a/streams/t_m/rows",
        "%25252e%25252e/dom_a/streams/t_m/rows",
        ".%252e/dom_a/streams/t_m/rows",
        "%252e%252e/dom_a/streams/t_m/tail",
        "%252e%252e/%252e%252e/domains",
        "%252e%252e/%252e%252e/%252e%252e/metrics",
        "streams/%252e%252e%252f%252e%252e%252fdom_a%252fstreams%252ft_m/rows",
        "streams/..%5c..%5cdom_a/rows",
        "streams/t_m%3b/rows",
        "streams/%c0%ae%c0%ae/rows",
        "streams/t_m%00/rows",
    ] {
        let (s, body) = text(&w.bob, &format!("{q}{rest}"));
        assert_eq!(s, 400, "{rest}: {body}");
        assert!(
            !body.contains(SECRET) && !body.contains("dom_a"),
            "{rest}: {body}"
        );
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(code(&v), "bad_path", "{rest}: {body}");
    }
    // Alice's experiment itself: not even its existence.
    for path in [
        format!("/api/v1/experiments/{}/query/streams/t_m/rows", w.ea),
        format!("/api/v1/experiments/{}/streams", w.ea),
        format!("/api/v1/experiments/{}", w.ea),
    ] {
        let (s, body) = text(&w.bob, &path);
        assert_eq!(s, 404, "{path}: {body}");
        assert!(!body.contains(SECRET), "{path}: {body}");
    }
    drop(w.t);
}

crate::on_both_backends!(a_domain_belongs_to_one_experiment);

fn a_domain_belongs_to_one_experiment(b: Backend) {
    let c = collector();
    let w = world(b, &c);
    let exps = "/api/v1/experiments";
    // Alice's domain, directly or by moving an experiment onto its collector.
    let (s, v) = w.bob.post(
        exps,
        json!({"name": "steal", "domain": "dom_a", "collector": w.coll}),
    );
    assert_eq!((s, code(&v)), (409, "domain_taken"), "{v}");
    assert!(!v.to_string().contains("alice"), "names no tenant: {v}");
    // Without a collector too: the devices of an experiment carry its
    // domain to whatever collector they report to.
    let (s, v) = w
        .bob
        .post(exps, json!({"name": "loose", "domain": "dom_a"}));
    assert_eq!((s, code(&v)), (409, "domain_taken"), "{v}");
    let loose = w.bob.ok(exps, json!({"name": "loose", "domain": "dom_l"}));
    let (s, v) = w.bob.put(
        &format!("{exps}/{}", loose["id"]),
        json!({"domain": "dom_a", "version": loose["version"]}),
    );
    assert_eq!((s, code(&v)), (409, "domain_taken"), "{v}");

    // Data nobody's experiment holds yet: only an admin adopts it.
    c.feed("dom_c", "orphan_row");
    let want = json!({"name": "orphans", "domain": "dom_c", "collector": w.coll});
    let (s, v) = w.bob.post(exps, want.clone());
    assert_eq!((s, code(&v)), (409, "domain_has_data"), "{v}");
    let mut adopt = want.clone();
    adopt["adopt"] = json!(true);
    let (s, _) = w.bob.post(exps, adopt.clone());
    assert_eq!(s, 403);
    let e = w.admin.ok(exps, adopt);
    assert_eq!(e["domain"], "dom_c");
    let (_, audit) = w.admin.get("/api/v1/audit");
    assert!(
        audit.to_string().contains("experiment.adopt_domain"),
        "{audit}"
    );

    // Names: scripts stay apart, hidden characters and lengths in characters.
    let d1 = w.bob.ok(exps, json!({"name": "实验"}))["domain"].clone();
    let d2 = w.bob.ok(exps, json!({"name": "试验"}))["domain"].clone();
    assert_ne!(d1, d2);
    let (s, v) = w.bob.post(exps, json!({"name": "exp\u{202E}gnp.exe"}));
    assert_eq!((s, code(&v)), (400, "invalid_request"), "{v}");
    let (s, v) = w.bob.post(exps, json!({"name": "实".repeat(64)}));
    assert_eq!(s, 201, "64 characters, 192 bytes: {v}");
    let (s, _) = w.bob.post(exps, json!({"name": "实".repeat(65)}));
    assert_eq!(s, 400);
    // NFC: the decomposed spelling is the same name.
    w.bob.ok(exps, json!({"name": "Caf\u{e9}"}));
    let (s, v) = w
        .bob
        .post(exps, json!({"name": "Cafe\u{301}", "domain": "x1"}));
    assert_eq!((s, code(&v)), (409, "conflict"), "{v}");
}

crate::on_both_backends!(shared_devices_show_only_your_sessions);

fn shared_devices_show_only_your_sessions(b: Backend) {
    use manager::db::monitor::{self, Snapshot};
    let c = collector();
    let w = world(b, &c);
    let eb = w.bob.ok(
        "/api/v1/experiments",
        json!({"name": "bob exp", "domain": "dom_b"}),
    )["id"]
        .as_i64()
        .unwrap();
    // A capture device both use (never polled: its answers are written below
    // as the monitor would store them).
    let tap = w.admin.ok(
        "/api/v1/devices",
        json!({"name": "tap", "kind": "capture", "hostname": "127.0.0.1", "port": 9}),
    )["id"]
        .as_i64()
        .unwrap();
    let session = |api: &Api, eid: i64, name: &str| {
        let cfg = api.ok(
            &format!("/api/v1/experiments/{eid}/configs"),
            json!({"name": name, "device": tap, "session": {"interface": "lo"},
                   "storage": {"type": "local"}}),
        );
        let run = api.ok(
            &format!("/api/v1/experiments/{eid}/runs"),
            json!({"config": cfg["id"], "devices": [tap]}),
        );
        (
            run["id"].as_i64().unwrap(),
            run["devices"][0]["session"].as_str().unwrap().to_owned(),
        )
    };
    let ((ra, sa), (rb, sb)) = (session(&w.alice, w.ea, "east"), session(&w.bob, eb, "east"));
    // Bob's third run never made its session: one of its name on the device
    // is someone else's.
    let (_, sc) = session(&w.bob, eb, "west");
    // Another tenant's in-line agent, writing to alice's domain.
    let agent = w.admin.ok(
        "/api/v1/devices",
        json!({"name": "agent", "kind": "inline", "hostname": "127.0.0.1", "port": 9}),
    )["id"]
        .as_i64()
        .unwrap();
    let db = common::open_db(&w.t);
    db.with(|c| {
        // Made on the device and stopped since, as runs leave them.
        manager::db::runs::set_device(c, ra, tap, "stopped", None, true)?;
        manager::db::runs::set_device(c, rb, tap, "stopped", None, true)?;
        manager::db::devices::set_seen(
            c,
            w.coll,
            "up",
            Some(&json!({"domains": [{"name": "dom_a", "streams": 1}, {"name": "dom_b", "streams": 0}]})),
        )?;
        manager::db::devices::set_seen(
            c,
            agent,
            "up",
            Some(&json!({"agent": "inline", "domain": "dom_a", "streams": ["inline_inline_delay"]})),
        )?;
        manager::db::devices::set_seen(
            c,
            tap,
            "up",
            Some(&json!({"interfaces": [{"name": "lo"}], "sessions": 7})),
        )?;
        monitor::raise(
            c,
            tap,
            "dropping",
            &format!("device tap is dropping packets: {sa} +5 kernel"),
        )?;
        monitor::insert(
            c,
            &Snapshot {
                device: tap,
                time_unix_s: manager::now_s(),
                status: "up".into(),
                latency_ms: Some(1.0),
                data: json!({"sessions": [
                    {"id": sa, "experiment": "dom_a", "state": "running", "counters": {"written": 1}},
                    {"id": sb, "experiment": "dom_b", "state": "running", "counters": {"written": 2}},
                    {"id": sc, "experiment": "dom_a", "state": "running", "counters": {"written": 3}}]}),
            },
        )
    })
    .unwrap();
    let snaps = format!("/api/v1/devices/{tap}/snapshots");
    for (api, mine, theirs) in [(&w.bob, &sb, &sa), (&w.alice, &sa, &sb)] {
        let (s, v) = api.get(&snaps);
        assert_eq!(s, 200);
        let text = v.to_string();
        assert!(text.contains(mine.as_str()), "{text}");
        assert!(!text.contains(theirs.as_str()), "{text}");
        assert!(
            !text.contains(sc.as_str()),
            "named as a run, not made by it: {text}"
        );
        let (_, d) = api.get(&format!("/api/v1/devices/{tap}"));
        assert_eq!(
            d["capabilities"]["sessions"], 0,
            "none of theirs is live: {d}"
        );
        let (_, list) = api.get("/api/v1/devices");
        assert!(!list.to_string().contains("\"sessions\":7"), "{list}");
    }
    // The collector lists each its own domain; alice's agent's domain is
    // hers to see.
    let (_, c) = w.bob.get(&format!("/api/v1/devices/{}", w.coll));
    let names: Vec<&Value> = c["capabilities"]["domains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| &d["name"])
        .collect();
    assert!(names.iter().all(|n| *n == "dom_b"), "{c}");
    let (_, c) = w.alice.get(&format!("/api/v1/devices/{}", w.coll));
    assert_eq!(c["capabilities"]["domains"][0]["name"], "dom_a", "{c}");
    let (_, list) = w.bob.get("/api/v1/devices");
    assert!(!list.to_string().contains("dom_a"), "{list}");
    let (_, a) = w.alice.get(&format!("/api/v1/devices/{agent}"));
    assert_eq!(a["capabilities"]["domain"], "dom_a", "{a}");
    let (_, a) = w.bob.get(&format!("/api/v1/devices/{agent}"));
    assert_eq!(
        (&a["capabilities"]["domain"], &a["capabilities"]["streams"]),
        (&json!(null), &json!([])),
        "{a}"
    );
    let (_, alerts) = w.bob.get("/api/v1/alerts");
    assert!(!alerts.to_string().contains(sa.as_str()), "{alerts}");
    assert!(alerts.to_string().contains("dropping"), "{alerts}");
    let (_, all) = w.admin.get(&snaps);
    assert!(all.to_string().contains(sa.as_str()) && all.to_string().contains(sb.as_str()));
    let (_, d) = w.admin.get(&format!("/api/v1/devices/{tap}"));
    assert_eq!(d["capabilities"]["sessions"], 7);
}
