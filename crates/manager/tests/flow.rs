//! The whole flow through a real manager, as root: a real capture daemon
//! whose packet socket sits in a network namespace joined by a veth pair
//! (created here, deleted by a drop guard), UDP traffic sent from a second
//! namespace, a real collection server with its query API, and the
//! project's client library sending a stream.
//!
//! Covers: devices and capabilities, configuration validation (400 with
//! fields), stale edits (409), unknown devices, a device down during start
//! (run partial, never running there), start/pause/resume/stop with
//! counters growing, file list and download equal to the file on the
//! device, per-experiment isolation of runs and files, the live-data proxy
//! (rows, SSE tail, Last-Event-ID), and the monitor raising `down`.
#![allow(unsafe_code)] // setns(2) for the sending thread

mod common;

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::Duration;

use capture::daemon::{Daemon, DaemonConfig};
use common::{add_users, code, start_on, wait_for, Api, Backend, ADMIN_PW};
use serde_json::{json, Value};

struct Netns(String);
impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn ip(args: &[&str]) {
    let s = Command::new("ip").args(args).status().unwrap();
    assert!(s.success(), "ip {args:?}");
}

fn have(tool: &str) -> bool {
    testkit::have_tool(
        "sh",
        &["-c", &format!("command -v {tool}")],
        "its Debian package; scripts/setup.sh installs it",
    )
}

fn send_udp(ns: &str, count: u32) {
    let path = format!("/var/run/netns/{ns}");
    std::thread::spawn(move || {
        let f = std::fs::File::open(path).unwrap();
        // SAFETY: moves only this thread into the namespace.
        assert_eq!(unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) }, 0);
        let s = UdpSocket::bind("10.88.0.2:0").unwrap();
        for i in 0..count {
            s.send_to(&i.to_be_bytes().repeat(16), "10.88.0.1:5001")
                .unwrap();
        }
    })
    .join()
    .unwrap();
}

fn probe_client(addr: std::net::SocketAddr) -> (client::Client, client::Mp) {
    use client::spec::{Backchannel, ClientSpec, DestinationSpec, Encoding, OverloadPolicy, Uri};
    let spec = ClientSpec {
        app: "flow".into(),
        id: Some("sender1".into()),
        domain: Some("flow_test".into()),
        destinations: vec![DestinationSpec {
            uri: Uri::Tcp {
                host: addr.ip().to_string(),
                port: addr.port(),
            },
            encoding: Encoding::Binary,
            policy: OverloadPolicy::Block { stall_limit: None },
            bufsize: 1 << 20,
            streams: None,
            instrumentation: false,
            backchannel: Backchannel::default(),
        }],
        ..ClientSpec::default()
    };
    let c = client::Client::new(spec).unwrap();
    let mp = c
        .add_mp(
            "probe",
            &[("seq", omsp::OmlType::UInt64), ("v", omsp::OmlType::Double)],
        )
        .unwrap();
    c.start().unwrap();
    (c, mp)
}

fn inject(mp: &client::Mp, range: std::ops::Range<u64>) {
    for i in range {
        mp.inject(&[
            omsp::ValueRef::UInt64(i),
            omsp::ValueRef::Double(i as f64 / 2.0),
        ])
        .unwrap();
    }
}

/// Reads `n` event ids from an SSE body.
fn event_ids(resp: ureq::http::Response<ureq::Body>, n: usize) -> Vec<u64> {
    let mut lines = BufReader::new(resp.into_body().into_reader());
    let mut ids = Vec::new();
    let mut line = String::new();
    while ids.len() < n {
        line.clear();
        assert!(
            lines.read_line(&mut line).unwrap() > 0,
            "tail ended early after {ids:?}"
        );
        if let Some(id) = line.trim_end().strip_prefix("id:") {
            ids.push(id.trim().parse().unwrap());
        }
    }
    ids
}

crate::on_both_backends!(capture_runs_files_live_data_and_monitor);

fn capture_runs_files_live_data_and_monitor(backend: Backend) {
    if !testkit::have_root("network namespaces, AF_PACKET capture") {
        return;
    }
    if !have("ip") {
        return;
    }
    let pid = std::process::id();
    let tag = match backend {
        Backend::Sqlite => "s",
        Backend::Postgres => "p",
    };
    let (a, b) = (format!("sgmA{tag}{pid}"), format!("sgmB{tag}{pid}"));
    ip(&["netns", "add", &a]);
    let _ga = Netns(a.clone());
    ip(&["netns", "add", &b]);
    let _gb = Netns(b.clone());
    ip(&[
        "-n", &a, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", &b,
    ]);
    ip(&["-n", &a, "addr", "add", "10.88.0.1/24", "dev", "va"]);
    ip(&["-n", &b, "addr", "add", "10.88.0.2/24", "dev", "vb"]);
    ip(&["-n", &a, "link", "set", "va", "up"]);
    ip(&["-n", &b, "link", "set", "vb", "up"]);

    // A collection server with the query API, and a capture daemon.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("server.tokens");
    httpkit::secret::write_private(&tokens, "* mgr-read read\n").unwrap();
    std::fs::create_dir_all(dir.path().join("srv")).unwrap();
    let mut scfg = server::ServerConfig::new(dir.path().join("srv"));
    scfg.listen = vec!["127.0.0.1:0".parse().unwrap()];
    scfg.http_listen = Some("127.0.0.1:0".parse().unwrap());
    scfg.auth = Some(server::AuthSettings {
        file: tokens,
        required: false,
    });
    let srv = rt.block_on(server::Server::start(scfg)).unwrap();
    let (collect, http) = (srv.local_addrs()[0], srv.http_addr().unwrap());
    let dtokens = dir.path().join("daemon.tokens");
    httpkit::secret::write_private(&dtokens, "* daemon-op control\n").unwrap();
    let data = dir.path().join("capture");
    let mut dcfg = DaemonConfig::new(&["va"], &data);
    dcfg.listen = "127.0.0.1:0".parse().unwrap();
    dcfg.token_file = Some(dtokens);
    dcfg.plain_http = true;
    dcfg.netns = Some(a.clone());
    dcfg.collect = Some(collect.to_string());
    dcfg.policy.max_snaplen = Some(1500);
    let daemon = rt.block_on(Daemon::start(dcfg)).unwrap();
    let dport = daemon.local_addr().port();
    let dead_port = testkit::free_port();

    let creds = dir.path().join("credentials");
    httpkit::secret::write_private(&creds, "tap daemon-op\ncoll mgr-read\n").unwrap();
    let t = start_on(backend, |c| {
        c.credentials = Some(creds.clone());
        c.monitor_interval = Duration::from_millis(500);
    });
    let admin = Api::login(&t.base, "admin", ADMIN_PW);

    // Devices; the secret never comes back.
    let dev = |name: &str, kind: &str, port: u16, cred: Option<&str>| {
        admin.ok(
            "/api/v1/devices",
            json!({"name": name, "kind": kind, "hostname": "127.0.0.1",
            "port": port, "credential_ref": cred}),
        )["id"]
            .as_i64()
            .unwrap()
    };
    let tap = dev("tap", "capture", dport, Some("tap"));
    let dead = dev("dead", "capture", dead_port, None);
    let coll = dev("coll", "collector", http.port(), Some("coll"));
    let (s, v) = admin.post(
        "/api/v1/devices",
        json!({"name": "x", "kind": "capture",
        "hostname": "127.0.0.1", "port": 1, "credential_ref": "missing"}),
    );
    assert_eq!((s, code(&v)), (400, "invalid_request"));
    let d = admin.ok(&format!("/api/v1/devices/{tap}/refresh"), json!({}));
    assert_eq!(d["capabilities"]["interfaces"][0]["name"], "va", "{d}");
    assert_eq!(d["status"], "up");
    let (_, all) = admin.get("/api/v1/devices");
    assert!(!all.to_string().contains("daemon-op"), "no secrets: {all}");
    let (s, v) = admin.post(&format!("/api/v1/devices/{dead}/refresh"), json!({}));
    assert_eq!((s, code(&v)), (502, "device_unreachable"));

    add_users(&admin, &["alice", "bob"]);
    let alice = Api::login(&t.base, "alice", "alice-password");
    let bob = Api::login(&t.base, "bob", "bob-password");
    let e = alice.ok(
        "/api/v1/experiments",
        json!({"name": "flow test", "collector": coll}),
    );
    let eid = e["id"].as_i64().unwrap();
    assert_eq!(e["domain"], "flow_test");

    // Validation before saving, with the fields named.
    let cfg = |session: Value, device: i64| {
        json!({"name": "east", "device": device, "session": session,
        "storage": {"type": "local"}, "metadata": {"purpose": "test"}})
    };
    let configs = format!("/api/v1/experiments/{eid}/configs");
    for (session, device, field) in [
        (
            json!({"interface": "va", "snaplen": 5000}),
            tap,
            "session.snaplen",
        ),
        (json!({"interface": "eth9"}), tap, "session.interface"),
        (
            json!({"interface": "va", "snaplen": 256, "bogus": 1}),
            tap,
            "session.bogus",
        ),
        (
            json!({"interface": "va", "filter": "udp prt 5"}),
            tap,
            "session.filter",
        ),
        (
            json!({"interface": "va", "anonymization": {"key": "nokey"}}),
            tap,
            "session.anonymization.key",
        ),
        (json!({"interface": "va"}), 99_999, "device"),
        (json!({"interface": "va"}), coll, "device"),
    ] {
        let (s, v) = alice.post(&configs, cfg(session.clone(), device));
        assert_eq!((s, code(&v)), (400, "invalid_config"), "{session}: {v}");
        assert!(
            v["error"]["details"]["fields"][field].is_string(),
            "{field}: {v}"
        );
    }
    let good = json!({"interface": "va", "filter": "udp port 5001", "snaplen": 256, "outputs": [{"type": "pcap"}],
        "counter_interval_s": 1});
    let c = alice.ok(&configs, cfg(good.clone(), tap));
    let cid = c["id"].as_i64().unwrap();
    assert_eq!(c["version"], 1);
    let mut edit = cfg(good.clone(), tap);
    edit["version"] = json!(1);
    edit["metadata"] = json!({"purpose": "edited"});
    let (s, v) = alice.put(&format!("/api/v1/configs/{cid}"), edit.clone());
    assert_eq!((s, v["version"].as_i64()), (200, Some(2)), "{v}");
    edit["metadata"] = json!({"purpose": "lost?"});
    let (s, v) = bob.put(&format!("/api/v1/configs/{cid}"), edit.clone());
    assert_eq!(s, 404, "a non-member cannot even see it");
    let (s, v2) = alice.put(&format!("/api/v1/configs/{cid}"), edit);
    assert_eq!((s, code(&v2)), (409, "edit_conflict"), "{v}");
    assert_eq!(
        v2["error"]["details"]["current"]["metadata"]["purpose"],
        "edited"
    );
    let copy = alice.ok(
        &format!("/api/v1/configs/{cid}/copy"),
        json!({"name": "east-copy"}),
    );
    assert_eq!(
        (copy["name"].as_str(), copy["version"].as_i64()),
        (Some("east-copy"), Some(1))
    );

    // Runs: unknown device; one device down during start.
    let runs = format!("/api/v1/experiments/{eid}/runs");
    let (s, v) = alice.post(&runs, json!({"config": cid, "devices": [99_999]}));
    assert_eq!((s, code(&v)), (400, "invalid_request"), "{v}");
    let r2 = alice.ok(&runs, json!({"config": cid, "devices": [tap, dead]}));
    let r2 = alice.ok(&format!("/api/v1/runs/{}/start", r2["id"]), json!({}));
    assert_eq!(r2["state"], "partial", "{r2}");
    let by_dev = |r: &Value, d: i64| {
        r["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["device"] == d)
            .unwrap()
            .clone()
    };
    assert_eq!(by_dev(&r2, tap)["state"], "running");
    let dd = by_dev(&r2, dead);
    assert_eq!(dd["state"], "failed");
    assert!(
        dd["reason"].as_str().unwrap().contains("3 attempts"),
        "{dd}"
    );
    let r2 = alice.ok(&format!("/api/v1/runs/{}/stop", r2["id"]), json!({}));
    assert_eq!(by_dev(&r2, tap)["state"], "stopped");
    let only_dead = alice.ok(&runs, json!({"config": cid, "devices": [dead]}));
    let v = alice.ok(
        &format!("/api/v1/runs/{}/start", only_dead["id"]),
        json!({}),
    );
    assert_eq!(v["state"], "failed", "never running: {v}");

    // The main run, with traffic flowing.
    let run = alice.ok(&runs, json!({"config": cid}));
    let rid = run["id"].as_i64().unwrap();
    assert_eq!(run["state"], "created");
    let session = run["devices"][0]["session"].as_str().unwrap().to_owned();
    assert_eq!(session, format!("flow_test-east-{rid}"));
    let v = alice.ok(&format!("/api/v1/runs/{rid}/start"), json!({}));
    assert_eq!(v["state"], "running", "{v}");
    let matched = || {
        let (s, v) = alice.get(&format!("/api/v1/runs/{rid}/status"));
        assert_eq!(s, 200, "{v}");
        v["devices"][0]["counters"]["matched"].as_u64().unwrap_or(0)
    };
    send_udp(&b, 100);
    wait_for("100 matched", || matched() >= 100);
    let first = matched();
    send_udp(&b, 50);
    wait_for("counters grow", || matched() >= first + 50);
    assert_eq!(bob.get(&format!("/api/v1/runs/{rid}")).0, 404);
    assert_eq!(bob.get(&format!("/api/v1/runs/{rid}/status")).0, 404);
    let v = alice.ok(&format!("/api/v1/runs/{rid}/pause"), json!({}));
    assert_eq!(v["state"], "paused");
    let v = alice.ok(&format!("/api/v1/runs/{rid}/resume"), json!({}));
    assert_eq!(v["state"], "running");
    let v = alice.ok(&format!("/api/v1/runs/{rid}/stop"), json!({}));
    assert_eq!(v["state"], "stopped");

    // Files: listed, and downloaded byte for byte as on the device.
    let (s, files) = alice.get(&format!("/api/v1/runs/{rid}/files"));
    assert_eq!(s, 200, "{files}");
    let pcap = files
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"].as_str().unwrap().ends_with(".pcap"))
        .unwrap_or_else(|| panic!("no pcap in {files}"))
        .clone();
    let (s, bytes) = alice.get_bytes(pcap["url"].as_str().unwrap());
    assert_eq!(s, 200);
    let on_disk = std::fs::read(data.join(&session).join(pcap["name"].as_str().unwrap())).unwrap();
    assert_eq!(bytes.len() as u64, pcap["bytes"].as_u64().unwrap());
    assert!(
        bytes == on_disk && bytes.len() > 150 * 64,
        "{} vs {} bytes",
        bytes.len(),
        on_disk.len()
    );
    assert_eq!(bob.get_bytes(pcap["url"].as_str().unwrap()).0, 404);
    let (s, v) = alice.get(&format!("/api/v1/runs/{rid}/files/{tap}/..%2Fx"));
    assert_eq!(s, 404, "{v}");
    let (_, log) = alice.get(&format!("/api/v1/runs/{rid}/log"));
    let events = log["events"].to_string();
    assert!(
        events.contains("run running") && events.contains("run stopped"),
        "{log}"
    );
    assert!(
        log["devices"][0]["lines"].as_array().unwrap().len() >= 2,
        "{log}"
    );

    // Live data: rows and a tail of a stream sent by the client library.
    let (client, mp) = probe_client(collect);
    inject(&mp, 0..50);
    let rows_path =
        format!("/api/v1/experiments/{eid}/query/streams/flow_probe/rows?fields=seq,v&limit=1000");
    wait_for("50 rows through the proxy", || {
        let (s, v) = alice.get(&rows_path);
        s == 200 && v["rows"].as_array().is_some_and(|r| r.len() == 50)
    });
    let (_, v) = alice.get(&rows_path);
    assert_eq!(v["rows"][49], json!([49, 24.5]));
    let (s, streams) = alice.get(&format!("/api/v1/experiments/{eid}/streams"));
    assert_eq!(s, 200);
    assert!(streams.to_string().contains("flow_probe"), "{streams}");
    assert_eq!(bob.get(&rows_path).0, 404);
    let tail = alice.open(
        &format!("/api/v1/experiments/{eid}/query/streams/flow_probe/tail?after=50"),
        &[],
    );
    assert_eq!(tail.status().as_u16(), 200);
    inject(&mp, 50..60);
    assert_eq!(event_ids(tail, 10), (51..=60).collect::<Vec<u64>>());
    let resumed = alice.open(
        &format!("/api/v1/experiments/{eid}/query/streams/flow_probe/tail"),
        &[("Last-Event-ID", "55")],
    );
    assert_eq!(event_ids(resumed, 5), (56..=60).collect::<Vec<u64>>());
    client.close().unwrap();

    // The monitor: the dead device is down with an alert; the tap is up.
    wait_for("dead device down with an alert", || {
        let (_, alerts) = alice.get("/api/v1/alerts");
        alerts
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["device"] == dead && a["kind"] == "down")
    });
    let (_, d) = alice.get(&format!("/api/v1/devices/{tap}"));
    assert_eq!(d["status"], "up");
    let (_, snaps) = alice.get(&format!("/api/v1/devices/{tap}/snapshots?since=0"));
    assert!(!snaps.as_array().unwrap().is_empty());

    drop(t);
    rt.block_on(daemon.shutdown());
    rt.block_on(srv.shutdown());
}
