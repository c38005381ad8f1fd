//! The monitor against a real capture daemon that stops and comes back:
//! the device goes `down` with an alert, the alert clears when it answers
//! again, and the snapshots also arrive as the measurement stream
//! `manager_monitor` on a real collection server.

mod common;

use std::time::Duration;

use capture::daemon::{Daemon, DaemonConfig};
use common::{collection_server, start_on, wait_for, Api, Backend, ADMIN_PW};
use serde_json::json;

crate::on_both_backends!(stopped_device_goes_down_with_an_alert_that_clears);

fn stopped_device_goes_down_with_an_alert_that_clears(b: Backend) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let srv = collection_server(&rt, dir.path(), |_| {});
    let (collect, http) = (srv.local_addrs()[0], srv.http_addr().unwrap());

    // A daemon that is never asked to capture (no privileges needed).
    let mut dcfg = DaemonConfig::new(&["lo"], dir.path().join("capture"));
    dcfg.listen = "127.0.0.1:0".parse().unwrap();
    let daemon = rt.block_on(Daemon::start(dcfg.clone())).unwrap();
    let addr = daemon.local_addr();
    // Over HTTPS: the daemon's self-signed certificate pinned, its
    // created token as the manager's credential `tap`.
    let pin = daemon.fingerprint().expect("HTTPS by default").to_string();
    let token = httpkit::token_init::own_token(&dcfg.effective_token_file())
        .unwrap()
        .unwrap();
    let creds = dir.path().join("credentials");
    httpkit::secret::write_private(&creds, format!("tap {token}\n")).unwrap();

    let t = start_on(b, |c| {
        c.credentials = Some(creds.clone());
        c.monitor_interval = Duration::from_millis(300);
        c.monitor_collect = Some(collect.to_string());
        c.monitor_domain = "mgr_mon".into();
    });
    let admin = Api::login(&t.base, "admin", ADMIN_PW);
    let id = admin.ok(
        "/api/v1/devices",
        json!({"name": "tap", "kind": "capture",
        "hostname": "127.0.0.1", "port": addr.port(), "credential_ref": "tap",
        "tls_fingerprint": pin}),
    )["id"]
        .as_i64()
        .unwrap();
    let status = || {
        admin.get(&format!("/api/v1/devices/{id}")).1["status"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let alerts = || {
        admin
            .get("/api/v1/alerts")
            .1
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["device"] == id && a["kind"] == "down")
            .count()
    };
    wait_for("device up", || status() == "up");
    assert_eq!(alerts(), 0);
    let (_, d) = admin.get(&format!("/api/v1/devices/{id}"));
    assert_eq!(d["capabilities"]["interfaces"][0]["name"], "lo", "{d}");

    rt.block_on(daemon.shutdown());
    wait_for("device down", || status() == "down");
    wait_for("down alert", || alerts() == 1);
    let (_, a) = admin.get("/api/v1/alerts");
    assert!(
        a[0]["message"]
            .as_str()
            .unwrap()
            .contains("does not answer"),
        "{a}"
    );

    dcfg.listen = addr;
    let daemon = rt.block_on(Daemon::start(dcfg)).unwrap();
    wait_for("device up again", || status() == "up");
    wait_for("alert cleared", || alerts() == 0);

    // Snapshots, and the same polls as a measurement stream.
    let (_, snaps) = admin.get(&format!("/api/v1/devices/{id}/snapshots?since=0"));
    let states: Vec<&str> = snaps
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["status"].as_str().unwrap())
        .collect();
    assert!(
        states.contains(&"up") && states.contains(&"down"),
        "{states:?}"
    );
    let q = Api::new(&format!("http://{http}"));
    wait_for("manager_monitor rows", || {
        let (s, v) =
            q.get("/api/v1/domains/mgr_mon/streams/manager_monitor/rows?fields=device,status");
        s == 200
            && v["rows"]
                .as_array()
                .is_some_and(|r| r.iter().any(|x| x[1] == "down") && r.iter().any(|x| x[1] == "up"))
    });
    drop(t);
    rt.block_on(daemon.shutdown());
    rt.block_on(srv.shutdown());
}
