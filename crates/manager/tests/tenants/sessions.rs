//! Sessions on the shared daemon: what bob sees of them, and sessions of
//! his runs' names that are not his runs'.

use std::io::{BufRead, BufReader};

use serde_json::json;

use super::world::{leaked, World};
use crate::common::{self, code, wait_for};
use crate::{A_DOMAIN, A_META, A_ROW2, A_STREAM};

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

/// Bob sees his own session on the shared daemon and counts only his; a
/// session of his run's name in alice's domain fails his start, without a
/// word about it, and never shows as his; a `dropping` alert naming
/// alice's session reaches him without the name.
pub fn shared_devices(w: &World) {
    let (bob, admin, markers) = (&w.bob, &w.admin, &w.markers);
    let (tap, coll, rb2, sb, sb2, sa) = (w.tap, w.coll, w.rb2, &w.sb, &w.sb2, &w.sa);
    let (_, snaps) = bob.get(&format!("/api/v1/devices/{tap}/snapshots?since=0"));
    assert!(
        snaps.to_string().contains(sb.as_str()),
        "his own session: {snaps}"
    );
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
        assert!(leaked(markers, &text, "").is_empty(), "{p}: {text}");
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
    let db = common::open_db(&w.t);
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
        if all.to_string().contains(sa.as_str()) && his.to_string().contains("dropping") {
            assert!(leaked(markers, &his.to_string(), "").is_empty(), "{his}");
            seen = true;
            break;
        }
    }
    assert!(seen, "the alert was never read by both");
}

/// An experiment alice deleted leaves its stopped session and files on
/// the daemon. Bob takes its domain (without a collector nobody holds
/// it), its configuration's name and, as SQLite gives the largest run id
/// again, its run's id: his run's session has her session's name, and
/// must not become his (before, he listed and downloaded her files).
pub fn deleted_experiment(w: &World) {
    let (alice, bob) = (&w.alice, &w.bob);
    let gone = alice.ok(
        "/api/v1/experiments",
        json!({"name": "Alice zq7mk gone", "domain": "alicegone_zq7mk"}),
    )["id"]
        .as_i64()
        .unwrap();
    let cg = alice.ok(
        &format!("/api/v1/experiments/{gone}/configs"),
        w.config("gonecfg", A_META),
    )["id"]
        .as_i64()
        .unwrap();
    let (rg, sg) = w.run(alice, gone, cg);
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
        w.config("gonecfg", "bob's"),
    )["id"]
        .as_i64()
        .unwrap();
    assert_eq!(
        w.run(bob, eg, cbg),
        (rg, sg.clone()),
        "the run id and session name of alice's deleted run come again"
    );
    let v = bob.ok(&format!("/api/v1/runs/{rg}/start"), json!({}));
    assert_eq!(v["state"], "failed", "{v}");
    assert!(v.to_string().contains("session_name_taken"), "{v}");
    let (s, files) = bob.get(&format!("/api/v1/runs/{rg}/files"));
    assert_eq!((s, files.clone()), (200, json!([])), "her files: {files}");
    let (_, log) = bob.get(&format!("/api/v1/runs/{rg}/log"));
    assert_eq!(log["devices"], json!([]), "her session's log: {log}");
    // Nor do the device's snapshots show it to him.
    let since = manager::now_s();
    let snaps = format!("/api/v1/devices/{}/snapshots?since={since}", w.tap);
    wait_for("a snapshot after his start", || {
        bob.get(&snaps).1.as_array().is_some_and(|a| !a.is_empty())
    });
    let (_, v) = bob.get(&snaps);
    assert!(!v.to_string().contains(&format!("\"{sg}\"")), "{v}");
}

/// Still his: a session of his run's name in his domain, never started
/// (the daemon made it, its answer was lost), is found and started.
pub fn lost_answer(w: &World) {
    let bob = &w.bob;
    let (r3, s3) = w.run(bob, w.eb, w.cb);
    w.daemon_session("bobdom", &s3, false);
    let v = bob.ok(&format!("/api/v1/runs/{r3}/start"), json!({}));
    assert_eq!(v["state"], "running", "{v}");
}

/// Nothing of alice's changed, and her tail is live.
pub fn alice_unchanged(w: &mut World) {
    let (alice, bob) = (&w.alice, &w.bob);
    let (ea, ca, ra) = (w.ea, w.ca, w.ra);
    let (s, e) = alice.get(&format!("/api/v1/experiments/{ea}"));
    assert_eq!(
        (s, &e["version"], &e["members"]),
        (200, &json!(1), &json!([]))
    );
    let (_, c) = alice.get(&format!("/api/v1/configs/{ca}"));
    assert_eq!(c["version"], 1);
    let (_, list) = alice.get(&format!("/api/v1/experiments/{ea}/configs"));
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
    let (_, list) = alice.get(&format!("/api/v1/experiments/{ea}/runs"));
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
    let (_, r) = alice.get(&format!("/api/v1/runs/{ra}"));
    assert_eq!(r["state"], "running", "{r}");
    assert_eq!(alice.get("/api/v1/tokens").1.as_array().unwrap().len(), 1);
    common::feed(w.collect, w.http, A_DOMAIN, A_STREAM, A_ROW2);
    tail_until(w.tail.take().expect("alice's tail"), A_ROW2);
    assert_eq!(
        code(
            &bob.get(&format!("/api/v1/experiments/{ea}/query/streams"))
                .1
        ),
        "not_found"
    );
}
