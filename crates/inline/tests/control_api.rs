//! The HTTP control endpoint (`--control`) on a real source and sink in
//! namespaces: authentication and request guards answer with the
//! project's JSON errors, bad settings are refused field by field with
//! nothing applied, and a settings change or a pause made over HTTP
//! changes what is measured on real traffic.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::traffic::{udp_receiver, udp_send};
use common::*;
use inline::{AgentCounters, AgentInfo, Control, ControlConfig};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;

const CONTROL: &str = "ctl-secret";
const READER: &str = "read-secret";

struct Http {
    agent: ureq::Agent,
    base: String,
}

impl Http {
    fn new(addr: std::net::SocketAddr) -> Http {
        Http {
            agent: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(Duration::from_secs(10)))
                .build()
                .into(),
            base: format!("http://{addr}"),
        }
    }

    fn get(&self, path: &str, token: Option<&str>) -> (u16, Value) {
        let mut req = self.agent.get(format!("{}{path}", self.base));
        if let Some(t) = token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        answer(req.call().unwrap())
    }

    fn send(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        content_type: &str,
        body: &str,
    ) -> (u16, Value) {
        let url = format!("{}{path}", self.base);
        let mut req = match method {
            "PATCH" => self.agent.patch(&url),
            "PUT" => self.agent.put(&url),
            _ => self.agent.post(&url),
        };
        if let Some(t) = token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        answer(
            req.header("Content-Type", content_type)
                .send(body.to_owned())
                .unwrap(),
        )
    }

    fn patch(&self, body: Value) -> (u16, Value) {
        self.send(
            "PATCH",
            "/api/v1/settings",
            Some(CONTROL),
            "application/json",
            &body.to_string(),
        )
    }

    fn instrumented(&self) -> u64 {
        let (s, v) = self.get("/api/v1/status", Some(READER));
        assert_eq!(s, 200, "{v}");
        v["counters"]["instrumented"].as_u64().unwrap()
    }
}

fn answer(mut r: ureq::http::Response<ureq::Body>) -> (u16, Value) {
    let status = r.status().as_u16();
    let text = r.body_mut().read_to_string().unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or("")
}

#[test]
fn settings_over_http_change_what_is_measured() {
    if !require_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("control.tokens");
    httpkit::secret::write_private(
        &tokens,
        format!("*  {CONTROL}  read,control\n*  {READER}  read\n"),
    )
    .unwrap();
    let net = Net::new(Topology::Direct);
    let (source, sink, records) = agents(&net, &settings(&["proto=udp"]));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let info = AgentInfo {
        interface: SRC_IF.into(),
        netns: Some(net.src.clone()),
        domain: None,
    };
    let config = ControlConfig {
        token_file: Some(tokens),
        plain_http: true,
        ..ControlConfig::default()
    };
    let control = Control::start(
        listener,
        &source,
        info,
        Arc::new(AgentCounters::default()),
        &config,
    )
    .unwrap();
    let http = Http::new(control.local_addr());
    let burst = |port: u16, n: usize| {
        let rx = udp_receiver(&net.dst, port, Duration::from_millis(400));
        udp_send(
            &net.src,
            6600,
            DST_ADDR,
            port,
            &vec![64; n],
            Duration::from_micros(100),
        );
        assert_eq!(rx.join().unwrap().count, n);
    };

    // Authentication: none, unknown, read-only where control is needed.
    let (s, v) = http.get("/api/v1/status", None);
    assert_eq!((s, code(&v)), (401, "unauthenticated"), "{v}");
    let (s, v) = http.get("/api/v1/status", Some("nope"));
    assert_eq!((s, code(&v)), (401, "invalid_token"), "{v}");
    let (s, v) = http.send(
        "PATCH",
        "/api/v1/settings",
        Some(READER),
        "application/json",
        r#"{"sample": 2}"#,
    );
    assert_eq!((s, code(&v)), (403, "forbidden"), "{v}");
    // A form post (what a cross-site page could make a browser send).
    let (s, v) = http.send(
        "PATCH",
        "/api/v1/settings",
        Some(CONTROL),
        "application/x-www-form-urlencoded",
        "sample=2",
    );
    assert_eq!((s, code(&v)), (415, "json_required"), "{v}");
    // A page that re-binds its name to 127.0.0.1 (DNS rebinding): foreign
    // Host 421, foreign Origin on a state-changing request 403.
    httpkit::probe::assert_host_checks(
        control.local_addr(),
        "/api/v1/status",
        "/api/v1/settings",
        r#"{"sample": 2}"#,
        &[],
    );

    // What the agent says it is.
    let (s, caps) = http.get("/api/v1/capabilities", Some(READER));
    assert_eq!(s, 200, "{caps}");
    assert_eq!(caps["agent"], "inline");
    assert_eq!(caps["roles"], json!(["source"]));
    assert_eq!(caps["interface"], SRC_IF);
    let sample = caps["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key"] == "sample")
        .unwrap();
    assert_eq!(sample["used"], true);
    let (s, st) = http.get("/api/v1/status", Some(READER));
    assert_eq!(s, 200, "{st}");
    assert_eq!(st["role"], "source");
    assert_eq!(st["state"], "running");
    assert_eq!(st["prog_id"], source.program().prog_id());
    assert_eq!(st["settings"]["proto"], "17");

    // Every packet measured at first.
    burst(7600, 100);
    assert_eq!(http.instrumented(), 100);

    // Bad settings: every bad field named, nothing applied.
    let (s, v) =
        http.patch(json!({"sample": 0, "bogus": 1, "dst": "not-an-address", "mode": "loss"}));
    assert_eq!((s, code(&v)), (400, "invalid_settings"), "{v}");
    let fields = v["error"]["details"]["fields"].as_object().unwrap();
    assert!(fields["sample"].as_str().unwrap().contains(">= 1"), "{v}");
    assert!(
        fields.contains_key("bogus") && fields.contains_key("dst"),
        "{v}"
    );
    assert!(!fields.contains_key("mode"), "{v}");
    let (_, now) = http.get("/api/v1/settings", Some(READER));
    assert_eq!(
        (now["sample"].as_str(), now["mode"].as_str()),
        (Some("1"), Some("both"))
    );
    let (s, v) = http.send(
        "PATCH",
        "/api/v1/settings",
        Some(CONTROL),
        "application/json",
        "[1]",
    );
    assert_eq!((s, code(&v)), (400, "invalid_body"), "{v}");

    // One in ten over HTTP: ten more of the next hundred are measured,
    // and the sink records exactly those.
    let (s, v) = http.patch(json!({"sample": 10}));
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["sample"], "10");
    assert_eq!(v["proto"], "17", "PATCH keeps the other keys");
    burst(7600, 100);
    let (_, st) = http.get("/api/v1/status", Some(READER));
    assert_eq!(st["counters"]["instrumented"], 110, "{st}");
    assert_eq!(st["counters"]["skipped_sampling"], 90, "{st}");
    std::thread::sleep(inline::POLL_INTERVAL * 3);
    assert_eq!(records.lock().unwrap().len(), 110);
    assert_eq!(
        sink.counters().unwrap().get(inline::Counter::SinkRecords),
        110
    );

    // Pause: nothing measured; resume: measured again.
    let (s, v) = http.send(
        "POST",
        "/api/v1/pause",
        Some(CONTROL),
        "application/json",
        "{}",
    );
    assert_eq!((s, v["state"].as_str()), (200, Some("paused")), "{v}");
    burst(7600, 50);
    assert_eq!(http.instrumented(), 110);
    let (s, v) = http.send(
        "POST",
        "/api/v1/resume",
        Some(CONTROL),
        "application/json",
        "{}",
    );
    assert_eq!((s, v["state"].as_str()), (200, Some("running")), "{v}");
    burst(7600, 50);
    assert_eq!(http.instrumented(), 115);

    // PUT replaces everything: keys left out take their defaults.
    let (s, v) = http.send(
        "PUT",
        "/api/v1/settings",
        Some(CONTROL),
        "application/json",
        r#"{"dport": 9999}"#,
    );
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        (v["sample"].as_str(), v["proto"].as_str()),
        (Some("1"), Some("any"))
    );
    burst(7600, 20);
    assert_eq!(http.instrumented(), 115, "dport 9999 does not match");

    let (s, doc) = http.get("/api/v1/openapi.json", Some(READER));
    assert_eq!(s, 200);
    assert!(
        doc["paths"]["/api/v1/settings"]["patch"].is_object(),
        "{doc}"
    );
    control.stop();
}

#[test]
fn without_a_token_file_the_agent_creates_one_and_serves_https() {
    if !require_root() {
        return;
    }
    let net = Net::new(Topology::Direct);
    let (_source, sink, _records) = agents(&net, &settings(&[]));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let info = AgentInfo {
        interface: DST_IF.into(),
        netns: Some(net.dst.clone()),
        domain: Some("inline".into()),
    };
    let state = tempfile::tempdir().unwrap();
    let config = ControlConfig {
        state_dir: Some(state.path().to_owned()),
        ..ControlConfig::default()
    };
    let control = Control::start(
        listener,
        &sink,
        info,
        Arc::new(AgentCounters::default()),
        &config,
    )
    .unwrap();
    // First start: a token file only root can read, and a certificate.
    let token_file = state.path().join("control.tokens");
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let token = httpkit::token_init::own_token(&token_file).unwrap();
    let fingerprint = control.fingerprint().expect("HTTPS by default");
    let url = control.url();
    assert!(url.starts_with("https://"), "{url}");
    let client = |token: Option<String>, pin| {
        httpkit::client::Client::new(&url, "in-line agent", "")
            .with_tls(Some(httpkit::tls::ClientTls::pinned(pin)))
            .with_token(token)
    };
    let status = |r: Result<String, httpkit::client::ClientError>| match r {
        Ok(_) => 200,
        Err(httpkit::client::ClientError::Status { status, .. }) => status,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(
        status(client(None, fingerprint).get("/api/v1/status")),
        401,
        "no request is served without the token"
    );
    let caps: Value = serde_json::from_str(
        &client(token.clone(), fingerprint)
            .get("/api/v1/capabilities")
            .unwrap(),
    )
    .unwrap();
    assert_eq!(caps["roles"], json!(["sink"]));
    let used = |k: &str| {
        caps["keys"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["key"] == k)
            .unwrap()["used"]
            .clone()
    };
    assert_eq!((used("mode"), used("sample")), (json!(true), json!(false)));
    let v: Value = serde_json::from_str(
        &client(token.clone(), fingerprint)
            .patch("/api/v1/settings", r#"{"enabled": false}"#)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(v["enabled"].as_str(), Some("false"), "{v}");
    // Another certificate pinned: nothing is sent, and the error says why.
    let other = httpkit::tls::Fingerprint::of(b"another certificate");
    let e = client(token.clone(), other)
        .get("/api/v1/status")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&fingerprint.to_string()) && e.contains("pinned"),
        "{e}"
    );
    // Plain HTTP is refused beyond loopback.
    let far = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let e = Control::start(
        far,
        &sink,
        AgentInfo::default(),
        Arc::new(AgentCounters::default()),
        &ControlConfig {
            plain_http: true,
            ..config.clone()
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("loopback only"), "{e}");
}
