//! `GET /runs/{id}/events`: the run's start (here a start that failed on
//! a device that does not answer) and the device going down, from the
//! manager's own records, for members only.

mod common;

use std::time::Duration;

use common::{add_users, start_on, wait_for, Api, Backend, ADMIN_PW};
use serde_json::{json, Value};

crate::on_both_backends!(events_of_a_run_for_its_plots);

fn kinds(v: &Value) -> Vec<String> {
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_owned())
        .collect()
}

fn events_of_a_run_for_its_plots(b: Backend) {
    // A port nothing listens on: the device never answers.
    let port = testkit::free_port();
    let t = start_on(b, |c| c.monitor_interval = Duration::from_millis(200));
    let admin = Api::login(&t.base, "admin", ADMIN_PW);
    add_users(&admin, &["alice", "bob"]);
    let dev = admin.ok(
        "/api/v1/devices",
        json!({"name": "gone-tap", "kind": "capture", "hostname": "127.0.0.1", "port": port, "credential_ref": null}),
    )["id"]
        .as_i64()
        .unwrap();
    let alice = Api::login(&t.base, "alice", "alice-password");
    let exp = alice.ok("/api/v1/experiments", json!({"name": "ev"}))["id"]
        .as_i64()
        .unwrap();
    let cfg = alice.ok(
        &format!("/api/v1/experiments/{exp}/configs"),
        json!({"name": "c", "device": dev, "session": {"interface": "lo"}, "storage": {"type": "local"}}),
    )["id"]
        .as_i64()
        .unwrap();
    let run = alice.ok(
        &format!("/api/v1/experiments/{exp}/runs"),
        json!({"config": cfg}),
    )["id"]
        .as_i64()
        .unwrap();
    let path = format!("/api/v1/runs/{run}/events");
    let (s, v) = alice.get(&path);
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["start_unix_s"], Value::Null, "not started: {v}");

    // The start is tried (and fails on the silent device): one start event.
    let (s, _) = alice.post(&format!("/api/v1/runs/{run}/start"), json!({}));
    assert!(s < 500, "start answered {s}");
    let mut last = Value::Null;
    wait_for("the device down in the run's events", || {
        last = alice.get(&path).1;
        kinds(&last).contains(&"device_down".to_owned())
    });
    assert_eq!(
        kinds(&last).iter().filter(|k| *k == "start").count(),
        1,
        "{last}"
    );
    assert!(last["start_unix_s"].as_f64().unwrap() > 1.7e9, "{last}");
    let d = &last["devices"][0];
    assert_eq!(d["device"], dev);
    assert_eq!(d["name"], "gone-tap");
    assert_eq!(d["status"], "down", "{last}");
    assert!(d["down_since_unix_s"].as_i64().unwrap() >= 1_700_000_000);
    let times: Vec<f64> = last["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["time_unix_s"].as_f64().unwrap())
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "oldest first: {last}"
    );
    // No alert message (it is the admin's alerts view that has them).
    assert!(!last.to_string().contains("does not answer"), "{last}");

    // Someone outside the experiment sees no such run.
    let bob = Api::login(&t.base, "bob", "bob-password");
    let (s, v) = bob.get(&path);
    assert_eq!(s, 404, "{v}");
}
