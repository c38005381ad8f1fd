//! Deleting an experiment stops its runs' sessions on the devices first,
//! with two real capture daemons capturing on loopback (root: AF_PACKET):
//!
//! - a device that cannot be reached keeps the experiment (409
//!   `sessions_not_stopped`, naming the session), while the reachable
//!   device's session is stopped;
//! - the unreachable daemon comes back (and restores its session, running
//!   again: the reason not to forget it); deleting again stops it there and
//!   deletes the experiment;
//! - `?force=true` deletes despite an unreachable device and names what
//!   was left, in the answer and the audit log.

mod common;

use capture::daemon::{Daemon, DaemonConfig};
use common::{code, start_on, Api, Backend, ADMIN_PW};
use serde_json::{json, Value};

crate::on_both_backends!(deleting_an_experiment_stops_its_sessions);

/// The daemons' control token, also the manager's credential `op`.
const DAEMON_TOKEN: &str = "daemon-op";

fn session_state(daemon: &str, session: &str) -> String {
    let (s, v) =
        Api::with_token(daemon, DAEMON_TOKEN).get(&format!("/api/v1/sessions/{session}/status"));
    assert_eq!(s, 200, "{v}");
    v["state"].as_str().unwrap().to_owned()
}

fn deleting_an_experiment_stops_its_sessions(b: Backend) {
    if !testkit::have_root("AF_PACKET capture on loopback") {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("daemon.tokens");
    httpkit::secret::write_private(&tokens, format!("* {DAEMON_TOKEN} read,control\n")).unwrap();
    let creds = dir.path().join("credentials");
    httpkit::secret::write_private(&creds, format!("op {DAEMON_TOKEN}\n")).unwrap();
    let daemon_config = |name: &str| {
        let mut c = DaemonConfig::new(&["lo"], dir.path().join(name));
        c.listen = "127.0.0.1:0".parse().unwrap();
        c.token_file = Some(tokens.clone());
        c.plain_http = true;
        c
    };
    let one = rt.block_on(Daemon::start(daemon_config("one"))).unwrap();
    let mut two_cfg = daemon_config("two");
    let two = rt.block_on(Daemon::start(two_cfg.clone())).unwrap();
    two_cfg.listen = two.local_addr();
    let (url1, url2) = (
        format!("http://{}", one.local_addr()),
        format!("http://{}", two.local_addr()),
    );

    let t = start_on(b, |c| c.credentials = Some(creds.clone()));
    let admin = Api::login(&t.base, "admin", ADMIN_PW);
    let mut taps = Vec::new();
    for (name, d) in [("tap1", &one), ("tap2", &two)] {
        let id = admin.ok(
            "/api/v1/devices",
            json!({"name": name, "kind": "capture", "hostname": "127.0.0.1",
                   "port": d.local_addr().port(), "credential_ref": "op"}),
        )["id"]
            .as_i64()
            .unwrap();
        admin.ok(&format!("/api/v1/devices/{id}/refresh"), json!({}));
        taps.push(id);
    }
    admin.ok(
        "/api/v1/users",
        json!({"username": "alice", "password": "alice-password"}),
    );
    let alice = Api::login(&t.base, "alice", "alice-password");
    // An experiment with a run on both daemons, started; and one stopped.
    let experiment = |name: &str| -> (i64, i64) {
        let eid = alice.ok("/api/v1/experiments", json!({"name": name}))["id"]
            .as_i64()
            .unwrap();
        let cid = alice.ok(
            &format!("/api/v1/experiments/{eid}/configs"),
            json!({"name": "c", "device": taps[0],
                   "session": {"interface": "lo", "filter": "udp port 9", "snaplen": 128}}),
        )["id"]
            .as_i64()
            .unwrap();
        (eid, cid)
    };
    let start_run = |eid: i64, cid: i64, devices: &[i64]| -> Value {
        let r = alice.ok(
            &format!("/api/v1/experiments/{eid}/runs"),
            json!({"config": cid, "devices": devices}),
        );
        let r = alice.ok(&format!("/api/v1/runs/{}/start", r["id"]), json!({}));
        assert_eq!(r["state"], "running", "{r}");
        r
    };
    let (eid, cid) = experiment("delete me");
    let done = start_run(eid, cid, &[taps[0]]);
    alice.ok(&format!("/api/v1/runs/{}/stop", done["id"]), json!({}));
    let run = start_run(eid, cid, &taps);
    let rid = run["id"].as_i64().unwrap();
    let session = run["devices"][0]["session"].as_str().unwrap().to_owned();
    assert_eq!(session_state(&url1, &session), "running");
    assert_eq!(session_state(&url2, &session), "running");

    // The second daemon is gone: the experiment is kept, its session named.
    rt.block_on(two.shutdown());
    let (s, v) = alice.delete(&format!("/api/v1/experiments/{eid}"));
    assert_eq!((s, code(&v)), (409, "sessions_not_stopped"), "{v}");
    let left = &v["error"]["details"]["not_stopped"];
    assert_eq!(left.as_array().unwrap().len(), 1, "{v}");
    assert_eq!(
        (
            left[0]["run"].as_i64(),
            left[0]["device"].as_i64(),
            left[0]["session"].as_str()
        ),
        (Some(rid), Some(taps[1]), Some(session.as_str()))
    );
    assert!(
        left[0]["reason"].as_str().unwrap().contains("stop failed"),
        "{v}"
    );
    assert_eq!(
        alice.get(&format!("/api/v1/experiments/{eid}")).0,
        200,
        "kept"
    );
    assert_eq!(
        session_state(&url1, &session),
        "stopped",
        "the reachable one stopped"
    );
    let (_, r) = alice.get(&format!("/api/v1/runs/{rid}"));
    let states: Vec<&str> = r["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["stopped", "running"], "{r}");

    // It comes back with its session capturing again; deleting again stops it.
    let two = rt.block_on(Daemon::start(two_cfg.clone())).unwrap();
    assert_eq!(
        session_state(&url2, &session),
        "running",
        "restored by the daemon"
    );
    let (s, v) = alice.delete(&format!("/api/v1/experiments/{eid}"));
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["stopped_runs"], json!([rid]), "{v}");
    assert_eq!(v["not_stopped"], json!([]));
    assert_eq!(session_state(&url2, &session), "stopped");
    assert_eq!(alice.get(&format!("/api/v1/experiments/{eid}")).0, 404);
    assert_eq!(alice.get(&format!("/api/v1/runs/{rid}")).0, 404);

    // force=true: deleted despite the unreachable device, which is named.
    let (eid, cid) = experiment("forced");
    let run = start_run(eid, cid, &[taps[1]]);
    let forced_session = run["devices"][0]["session"].as_str().unwrap().to_owned();
    rt.block_on(two.shutdown());
    let (s, v) = alice.delete(&format!("/api/v1/experiments/{eid}?force=true"));
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        v["not_stopped"][0]["session"],
        forced_session.as_str(),
        "{v}"
    );
    assert_eq!(alice.get(&format!("/api/v1/experiments/{eid}")).0, 404);
    let (s, v) = alice.delete(&format!("/api/v1/experiments/{eid}?force=maybe"));
    assert_eq!((s, code(&v)), (400, "bad_query"), "{v}");

    // The audit log tells the whole story.
    let (_, log) = admin.get("/api/v1/audit?limit=100");
    let entries = log.as_array().unwrap();
    let stops = entries
        .iter()
        .filter(|e| {
            e["action"] == "run.stop" && e["summary"].as_str().unwrap().contains("deleting")
        })
        .count();
    assert_eq!(stops, 3, "{log}");
    let deleted: Vec<&str> = entries
        .iter()
        .filter(|e| e["action"] == "experiment.delete")
        .map(|e| e["summary"].as_str().unwrap())
        .collect();
    assert_eq!(deleted.len(), 2, "{log}");
    assert!(
        deleted[0].contains("forced") && deleted[0].contains(&forced_session),
        "{deleted:?}"
    );
    assert!(
        deleted[1].contains(&format!("stopped runs [{rid}]")),
        "{deleted:?}"
    );
    drop(t);
    rt.block_on(one.shutdown());
}
