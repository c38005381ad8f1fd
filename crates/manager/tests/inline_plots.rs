//! In-line agents driven by a real manager, and their streams plotted
//! through it, as root: a source and a sink (the agent library, with its
//! HTTP control endpoint) on a veth pair between two network namespaces
//! created here, UDP traffic between them, the sink's records sent by the
//! client library to a real collection server with its query API.
//!
//! Covers: capabilities refresh, configurations for in-line agents
//! validated against their capabilities (fields named), a run that
//! applies its settings to the source (one packet in two measured on real
//! traffic), pause and stop switching instrumentation off, the in-line
//! stream read through the manager's query proxy (every row, with its
//! values; downsampled points; the SSE tail delivering new rows), the
//! monitor's snapshots carrying the agent's counters, and a `down` alert
//! when an agent's endpoint goes away.

mod common;

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use client::spec::{Backchannel, ClientSpec, DestinationSpec, Encoding, OverloadPolicy, Uri};
use common::{code, start, wait_for, Api, ADMIN_PW};
use inline::{
    Agent, AgentCounters, AgentInfo, Control, ControlConfig, LoadOptions, Role, Settings,
};
use serde_json::{json, Value};

const SRC_ADDR: &str = "fd00:77::1";
const DST_ADDR: &str = "fd00:77::2";
const DPORT: u16 = 7900;
const STREAM: &str = "inline_inline_delay";

/// Two namespaces joined by a veth pair; deleted on drop.
struct Pair {
    src: String,
    dst: String,
}

impl Drop for Pair {
    fn drop(&mut self) {
        for ns in [&self.src, &self.dst] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

fn run(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn pair() -> Pair {
    let pid = std::process::id();
    let p = Pair {
        src: format!("sgiA{pid}"),
        dst: format!("sgiB{pid}"),
    };
    for ns in [&p.src, &p.dst] {
        run(&["ip", "netns", "add", ns]);
        // Addresses usable at once: no duplicate address detection.
        run(&[
            "ip",
            "netns",
            "exec",
            ns,
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.accept_dad=0",
            "net.ipv6.conf.default.accept_dad=0",
        ]);
    }
    run(&[
        "ip", "-n", &p.src, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns",
        &p.dst,
    ]);
    for (ns, dev, addr) in [(&p.src, "va", SRC_ADDR), (&p.dst, "vb", DST_ADDR)] {
        run(&[
            "ip",
            "-n",
            ns,
            "addr",
            "add",
            &format!("{addr}/64"),
            "dev",
            dev,
            "nodad",
        ]);
        run(&["ip", "-n", ns, "link", "set", dev, "up"]);
        run(&["ip", "-n", ns, "link", "set", "lo", "up"]);
    }
    wait_for("the sink's address answers", || {
        Command::new("ip")
            .args([
                "netns", "exec", &p.src, "ping", "-6", "-c", "1", "-W", "1", DST_ADDR,
            ])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    p
}

/// `n` datagrams of one flow from the source namespace to the sink, 200 µs apart.
fn send(ns: &str, n: usize) {
    inline::netns::run_in(ns, move || {
        let s = UdpSocket::bind(format!("[{SRC_ADDR}]:6900")).unwrap();
        for i in 0..n {
            s.send_to(&[i as u8; 64], format!("[{DST_ADDR}]:{DPORT}"))
                .unwrap();
            std::thread::sleep(Duration::from_micros(200));
        }
    })
    .unwrap();
}

/// The client library sending the sink's records to the collector.
fn collector_client(addr: std::net::SocketAddr, domain: &str) -> client::Client {
    client::Client::new(ClientSpec {
        app: "inline".into(),
        id: Some("sink-vb".into()),
        domain: Some(domain.into()),
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
    })
    .unwrap()
}

/// An agent's control endpoint on loopback with a token file, over HTTPS
/// with the certificate it makes on first start in `state`.
fn control(
    agent: &Agent,
    dev: &str,
    ns: &str,
    token_file: &std::path::Path,
    state: &std::path::Path,
) -> Control {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let info = AgentInfo {
        interface: dev.into(),
        netns: Some(ns.into()),
        domain: Some("inline_plots".into()),
    };
    let config = ControlConfig {
        token_file: Some(token_file.to_owned()),
        state_dir: Some(state.to_owned()),
        ..ControlConfig::default()
    };
    Control::start(
        listener,
        agent,
        info,
        Arc::new(AgentCounters::default()),
        &config,
    )
    .unwrap()
}

/// Reads `n` row events (`id`, `data`) from an SSE body.
fn events(resp: ureq::http::Response<ureq::Body>, n: usize) -> Vec<(u64, Value)> {
    let mut lines = BufReader::new(resp.into_body().into_reader());
    let (mut out, mut id, mut line) = (Vec::new(), 0u64, String::new());
    while out.len() < n {
        line.clear();
        assert!(
            lines.read_line(&mut line).unwrap() > 0,
            "tail ended after {out:?}"
        );
        let l = line.trim_end();
        if let Some(v) = l.strip_prefix("id:") {
            id = v.trim().parse().unwrap();
        } else if let Some(d) = l.strip_prefix("data:") {
            out.push((id, serde_json::from_str(d.trim()).unwrap()));
        }
    }
    out
}

fn rows(api: &Api, path: &str) -> Vec<Value> {
    let (s, v) = api.get(path);
    assert_eq!(s, 200, "{path}: {v}");
    v["rows"].as_array().cloned().unwrap_or_default()
}

#[test]
fn inline_agents_are_driven_and_their_streams_plotted() {
    if !testkit::have_root("network namespaces, BPF programs on tc")
        || !testkit::have_tool("ip", &["-V"], "iproute2")
        || !testkit::have_tool("ping", &["-V"], "iputils-ping")
    {
        return;
    }
    let net = pair();

    // The collection server with its query API.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let server_tokens = dir.path().join("server.tokens");
    httpkit::secret::write_private(&server_tokens, "* mgr-read read\n").unwrap();
    std::fs::create_dir_all(dir.path().join("srv")).unwrap();
    let mut scfg = server::ServerConfig::new(dir.path().join("srv"));
    scfg.listen = vec!["127.0.0.1:0".parse().unwrap()];
    scfg.http_listen = Some("127.0.0.1:0".parse().unwrap());
    scfg.auth = Some(server::AuthSettings {
        file: server_tokens,
        required: false,
    });
    let srv = rt.block_on(server::Server::start(scfg)).unwrap();
    let (collect, http) = (srv.local_addrs()[0], srv.http_addr().unwrap());

    // The agents: every UDP packet of the source is a candidate; the sink
    // streams what it records.
    let mut any_udp = Settings::default();
    any_udp.set("proto", "udp").unwrap();
    let s = any_udp.clone();
    let source = inline::netns::run_in(&net.src, move || {
        Agent::start("va", Role::Source, &s, LoadOptions::default())
    })
    .unwrap()
    .unwrap();
    let mut sink = inline::netns::run_in(&net.dst, || {
        Agent::start(
            "vb",
            Role::Sink,
            &Settings::default(),
            LoadOptions::default(),
        )
    })
    .unwrap()
    .unwrap();
    let client = collector_client(collect, "inline_plots");
    let streams = Arc::new(inline::Streams::declare(&client).unwrap());
    client.start().unwrap();
    {
        let streams = Arc::clone(&streams);
        sink.read_records(move |m| streams.record(&m).unwrap())
            .unwrap();
    }
    let agent_tokens = dir.path().join("agent.tokens");
    httpkit::secret::write_private(&agent_tokens, "* agent-op read,control\n").unwrap();
    let state = dir.path().join("agent-state");
    let src_ctl = control(&source, "va", &net.src, &agent_tokens, &state);
    let sink_ctl = control(&sink, "vb", &net.dst, &agent_tokens, &state);
    // Both agents serve the certificate made in `state`; the manager pins it.
    let pin = src_ctl.fingerprint().expect("HTTPS by default").to_string();
    assert_eq!(
        sink_ctl.fingerprint().map(|f| f.to_string()),
        Some(pin.clone())
    );

    let creds = dir.path().join("credentials");
    httpkit::secret::write_private(&creds, "agent agent-op\ncoll mgr-read\n").unwrap();
    let t = start(|c| {
        c.credentials = Some(creds.clone());
        c.monitor_interval = Duration::from_millis(300);
    });
    let admin = Api::login(&t.base, "admin", ADMIN_PW);
    let dev = |name: &str, kind: &str, port: u16, cred: &str| {
        let fp = (kind == "inline").then(|| pin.clone());
        admin.ok(
            "/api/v1/devices",
            json!({"name": name, "kind": kind, "hostname": "127.0.0.1",
                   "port": port, "credential_ref": cred, "tls_fingerprint": fp}),
        )["id"]
            .as_i64()
            .unwrap()
    };
    let src_dev = dev("inline-src", "inline", src_ctl.local_addr().port(), "agent");
    let sink_dev = dev(
        "inline-sink",
        "inline",
        sink_ctl.local_addr().port(),
        "agent",
    );
    let coll = dev("coll", "collector", http.port(), "coll");

    // Capabilities come from the agents' control endpoints.
    let d = admin.ok(&format!("/api/v1/devices/{src_dev}/refresh"), json!({}));
    assert_eq!(d["status"], "up", "{d}");
    assert_eq!(d["capabilities"]["roles"], json!(["source"]), "{d}");
    assert_eq!(d["capabilities"]["interface"], "va");
    let d = admin.ok(&format!("/api/v1/devices/{sink_dev}/refresh"), json!({}));
    assert_eq!(d["capabilities"]["roles"], json!(["sink"]), "{d}");

    let e = admin.ok(
        "/api/v1/experiments",
        json!({"name": "inline plots", "collector": coll, "adopt": true}),
    );
    let eid = e["id"].as_i64().unwrap();
    assert_eq!(e["domain"], "inline_plots");

    // Configurations for agents, validated against their capabilities.
    let configs = format!("/api/v1/experiments/{eid}/configs");
    for (session, device, storage, field) in [
        (json!({"sample": 0}), src_dev, "local", "session.sample"),
        (json!({"bogus": 1}), src_dev, "local", "session.bogus"),
        (
            json!({"mode": "sometimes"}),
            src_dev,
            "local",
            "session.mode",
        ),
        (json!({"sample": 2}), sink_dev, "local", "session.sample"),
        (
            json!({"enabled": false}),
            src_dev,
            "local",
            "session.enabled",
        ),
        (json!({"sample": 2}), src_dev, "s3", "storage.type"),
    ] {
        let (s, v) = admin.post(
            &configs,
            json!({"name": "bad", "device": device, "session": session,
                   "storage": {"type": storage, "target": "x"}}),
        );
        assert_eq!((s, code(&v)), (400, "invalid_config"), "{session}: {v}");
        assert!(
            v["error"]["details"]["fields"][field].is_string(),
            "{session}: {field} in {v}"
        );
    }
    let cfg = admin.ok(
        &configs,
        json!({"name": "half", "device": src_dev,
               "session": {"sample": 2, "proto": "udp", "dport": DPORT}}),
    );
    let run = admin.ok(
        &format!("/api/v1/experiments/{eid}/runs"),
        json!({"config": cfg["id"]}),
    );
    let rid = run["id"].as_i64().unwrap();

    // Starting the run applies its settings to the source.
    let r = admin.ok(&format!("/api/v1/runs/{rid}/start"), json!({}));
    assert_eq!(r["state"], "running", "{r}");
    assert_eq!(r["devices"][0]["state"], "running", "{r}");
    let settings: Value = serde_json::from_str(
        &httpkit::client::Client::new(&src_ctl.url(), "agent", "")
            .with_tls(Some(httpkit::tls::ClientTls::pinned(
                src_ctl.fingerprint().unwrap(),
            )))
            .with_token(Some("agent-op".into()))
            .get("/api/v1/settings")
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        (
            settings["sample"].as_str(),
            settings["dport"].as_str(),
            settings["enabled"].as_str()
        ),
        (Some("2"), Some("7900"), Some("true")),
        "{settings}"
    );

    // One packet in two measured, on real traffic.
    send(&net.src, 200);
    let counters = |rid: i64| {
        let (s, v) = admin.get(&format!("/api/v1/runs/{rid}/status"));
        assert_eq!(s, 200, "{v}");
        v["devices"][0]["counters"].clone()
    };
    let c = counters(rid);
    assert_eq!(
        (c["instrumented"].as_u64(), c["skipped_sampling"].as_u64()),
        (Some(100), Some(100)),
        "{c}"
    );

    // The in-line stream through the manager's query proxy: every
    // measured packet, in order, with a plausible one-way delay.
    let q = format!("/api/v1/experiments/{eid}/query/streams/{STREAM}");
    let all = format!("{q}/rows?fields=oml_tuple_id,seq,delay&limit=1000");
    wait_for("100 delay rows through the manager", || {
        rows(&admin, &all).len() >= 100
    });
    let got = rows(&admin, &all);
    assert_eq!(got.len(), 100);
    // Records come in per-CPU batches, so rows follow the order in which
    // batches were flushed, not sequence order, when packets were handled
    // on several CPUs.
    let mut seqs: Vec<u64> = got.iter().map(|r| r[1].as_u64().unwrap()).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (0..100).collect::<Vec<u64>>());
    let delays: Vec<f64> = got.iter().map(|r| r[2].as_f64().unwrap()).collect();
    assert!(
        delays.iter().all(|d| (0.0..0.5).contains(d)),
        "delays within one host: {delays:?}"
    );
    let max = delays.iter().copied().fold(f64::MIN, f64::max);

    // Downsampled for a plot: a few real rows, the largest delay kept (M4).
    let points = rows(
        &admin,
        &format!("{q}/rows?points=8&fields=oml_ts_server,delay"),
    );
    assert!(!points.is_empty() && points.len() <= 8, "{points:?}");
    let kept: Vec<f64> = points.iter().map(|p| p[1].as_f64().unwrap()).collect();
    assert!(kept.iter().all(|d| delays.contains(d)), "{kept:?}");
    assert!(kept.contains(&max), "M4 keeps the maximum {max}: {kept:?}");

    // The live tail delivers the rows of packets sent after it opened.
    let last = got[99][0].as_u64().unwrap();
    let tail = admin.open(&format!("{q}/tail?after={last}&fields=seq,delay"), &[]);
    assert_eq!(tail.status().as_u16(), 200);
    send(&net.src, 20);
    let new = events(tail, 10);
    assert!(new.iter().all(|(id, _)| *id > last), "{new:?}");
    let mut new_seqs: Vec<u64> = new
        .iter()
        .map(|(_, v)| v["seq"].as_u64().unwrap())
        .collect();
    new_seqs.sort_unstable();
    assert_eq!(new_seqs, (100..110).collect::<Vec<u64>>());

    // The monitor's snapshots carry the sink's counters.
    wait_for("a snapshot of the sink with its records", || {
        let (_, snaps) = admin.get(&format!("/api/v1/devices/{sink_dev}/snapshots"));
        snaps.as_array().and_then(|a| a.last()).is_some_and(|s| {
            s["status"] == "up" && s["data"]["sessions"][0]["counters"]["records"] == 110
        })
    });

    // Pause: the source measures nothing; stop leaves it switched off.
    let r = admin.ok(&format!("/api/v1/runs/{rid}/pause"), json!({}));
    assert_eq!(r["state"], "paused", "{r}");
    send(&net.src, 20);
    assert_eq!(counters(rid)["instrumented"], 110);
    let r = admin.ok(&format!("/api/v1/runs/{rid}/stop"), json!({}));
    assert_eq!(r["state"], "stopped", "{r}");
    send(&net.src, 20);
    assert_eq!(counters(rid)["instrumented"], 110);
    assert_eq!(rows(&admin, &all).len(), 110);

    // An agent whose endpoint goes away is down, with an alert.
    sink_ctl.stop();
    wait_for("the sink's down alert", || {
        let (_, alerts) = admin.get("/api/v1/alerts");
        alerts
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["device"] == sink_dev && a["kind"] == "down")
    });
    let (_, d) = admin.get(&format!("/api/v1/devices/{sink_dev}"));
    assert_eq!(d["status"], "down");

    src_ctl.stop();
    drop(t);
    source.stop().unwrap();
    sink.stop().unwrap();
    client.close().unwrap();
    rt.block_on(srv.shutdown());
}
