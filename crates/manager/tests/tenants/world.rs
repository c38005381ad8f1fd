//! Two tenants on shared devices: a real collection server and a real
//! capture daemon on `lo`, a manager, and alice's and bob's experiments
//! with running sessions, files, counters, streams and alice's live tail.

use std::net::SocketAddr;
use std::time::Duration;

use capture::daemon::{Daemon, DaemonConfig};
use serde_json::{json, Value};

use crate::common::ADMIN_PW;
use crate::common::{
    self, add_users, collection_server, start_on, wait_for, Api, Backend, TestManager,
};
use crate::{A_CONFIG, A_DESC, A_DOMAIN, A_META, A_NAME, A_ROW, A_ROW2, A_STREAM, A_TOKEN, TAG};

/// The daemon's control token (in the manager's credentials as `tap`).
const DAEMON_TOKEN: &str = "daemon-op";

/// Everything the suite runs against, and the ids it needs.
pub struct World {
    pub t: TestManager,
    pub rt: tokio::runtime::Runtime,
    /// Holds the daemon's and the server's data.
    pub _dir: tempfile::TempDir,
    pub srv: server::Server,
    pub daemon: Daemon,
    pub collect: SocketAddr,
    pub http: SocketAddr,
    pub admin: Api,
    pub alice: Api,
    /// Bob's browser session.
    pub bob: Api,
    /// Bob's API token.
    pub bob_token: Api,
    pub tap: i64,
    pub coll: i64,
    pub site: i64,
    pub alice_id: i64,
    /// Alice's API token's id.
    pub tok_a: i64,
    /// Alice's experiment, configuration, run and its session.
    pub ea: i64,
    pub ca: i64,
    pub ra: i64,
    pub sa: String,
    /// Her session's files with packets, and the first one's bytes.
    pub a_files: Vec<String>,
    pub a_file_bytes: Vec<u8>,
    /// Bob's experiment with data, and one without any yet.
    pub eb: i64,
    pub eb_empty: i64,
    pub cb: i64,
    pub rb: i64,
    pub sb: String,
    /// Bob's run whose session name a session in alice's domain holds.
    pub rb2: i64,
    pub sb2: String,
    /// Alice's live tail of her stream.
    pub tail: Option<ureq::http::Response<ureq::Body>>,
    /// Strings of alice's: finding one where bob looks is a leak.
    pub markers: Vec<String>,
}

/// The markers found in `text` that bob did not send himself (`sent`).
pub fn leaked<'a>(markers: &'a [String], text: &str, sent: &str) -> Vec<&'a str> {
    markers
        .iter()
        .map(String::as_str)
        .filter(|m| text.contains(m) && !sent.contains(m))
        .collect()
}

/// Capture on `lo` into pcap files, counters every second.
pub fn session_config() -> Value {
    json!({"interface": "lo", "outputs": [{"type": "pcap"}], "counter_interval_s": 1})
}

fn id(v: &Value) -> i64 {
    v["id"].as_i64().unwrap_or_else(|| panic!("no id in {v}"))
}

impl World {
    pub fn new(backend: Backend) -> World {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let srv = collection_server(&rt, dir.path(), |_| {});
        let (collect, http) = (srv.local_addrs()[0], srv.http_addr().unwrap());
        let mut dcfg = DaemonConfig::new(&["lo"], dir.path().join("capture"));
        dcfg.listen = "127.0.0.1:0".parse().unwrap();
        dcfg.collect = Some(collect.to_string());
        dcfg.plain_http = true;
        let dtokens = dir.path().join("daemon.tokens");
        httpkit::secret::write_private(&dtokens, format!("* {DAEMON_TOKEN} control\n")).unwrap();
        dcfg.token_file = Some(dtokens);
        let daemon = rt.block_on(Daemon::start(dcfg)).unwrap();
        let creds = dir.path().join("credentials");
        httpkit::secret::write_private(&creds, format!("tap {DAEMON_TOKEN}\n")).unwrap();
        let t = start_on(backend, |c| {
            c.monitor_interval = Duration::from_millis(300);
            c.credentials = Some(creds.clone());
        });
        let admin = Api::login(&t.base, "admin", ADMIN_PW);
        let dev = |name: &str, kind: &str, port: u16, cred: Option<&str>| {
            id(&admin.ok(
                "/api/v1/devices",
                json!({"name": name, "kind": kind, "hostname": "127.0.0.1", "port": port,
                       "credential_ref": cred}),
            ))
        };
        let tap = dev("tap", "capture", daemon.local_addr().port(), Some("tap"));
        let coll = dev("coll", "collector", http.port(), None);
        admin.ok(&format!("/api/v1/devices/{tap}/refresh"), json!({}));
        let site = id(&admin.ok("/api/v1/sites", json!({"name": "lab"})));
        add_users(&admin, &["alice", "bob"]);
        let alice = Api::login(&t.base, "alice", "alice-password");
        let bob = Api::login(&t.base, "bob", "bob-password");
        let secret = bob.ok("/api/v1/tokens", json!({"name": "bob script"}))["secret"]
            .as_str()
            .unwrap()
            .to_owned();
        let bob_token = Api::with_token(&t.base, &secret);
        let tok_a = id(&alice.ok("/api/v1/tokens", json!({"name": A_TOKEN})));
        let alice_id = alice.get("/api/v1/session").1["user"]["id"]
            .as_i64()
            .unwrap();
        let mut w = World {
            t,
            rt,
            _dir: dir,
            srv,
            daemon,
            collect,
            http,
            admin,
            alice,
            bob,
            bob_token,
            tap,
            coll,
            site,
            alice_id,
            tok_a,
            ea: 0,
            ca: 0,
            ra: 0,
            sa: String::new(),
            a_files: Vec::new(),
            a_file_bytes: Vec::new(),
            eb: 0,
            eb_empty: 0,
            cb: 0,
            rb: 0,
            sb: String::new(),
            rb2: 0,
            sb2: String::new(),
            tail: None,
            markers: Vec::new(),
        };
        w.alices_data();
        w.bobs_data();
        w.check_markers_are_there();
        w
    }

    /// A configuration on the tap with `metadata.purpose` = `meta`.
    pub fn config(&self, name: &str, meta: &str) -> Value {
        json!({"name": name, "device": self.tap, "session": session_config(),
               "storage": {"type": "local"}, "metadata": {"purpose": meta}})
    }

    /// `api`'s new run of configuration `config` in experiment `e`: its id
    /// and session name.
    pub fn run(&self, api: &Api, e: i64, config: i64) -> (i64, String) {
        let r = api.ok(
            &format!("/api/v1/experiments/{e}/runs"),
            json!({"config": config}),
        );
        (
            id(&r),
            r["devices"][0]["session"].as_str().unwrap().to_owned(),
        )
    }

    /// Makes session `name` of `domain` on the daemon directly (as another
    /// tool of the tenant's would), and starts it when `start`.
    pub fn daemon_session(&self, domain: &str, name: &str, start: bool) {
        let base = format!("http://{}/api/v1/sessions", self.daemon.local_addr());
        let mut s = session_config();
        s["name"] = json!(name);
        let r = ureq::post(format!("{base}?experiment={domain}"))
            .content_type("application/json")
            .header("Authorization", format!("Bearer {DAEMON_TOKEN}"))
            .send(s.to_string())
            .unwrap();
        assert_eq!(r.status().as_u16(), 201);
        if start {
            ureq::post(format!("{base}/{name}/start"))
                .content_type("application/json")
                .header("Authorization", format!("Bearer {DAEMON_TOKEN}"))
                .send("{}")
                .unwrap();
        }
    }

    /// Alice's experiment, configuration and running session with files
    /// and counters, her stream on the collector and a live tail of it.
    fn alices_data(&mut self) {
        let alice = &self.alice;
        self.ea = id(&alice.ok(
            "/api/v1/experiments",
            json!({"name": A_NAME, "domain": A_DOMAIN, "collector": self.coll,
                   "description": A_DESC}),
        ));
        self.ca = id(&alice.ok(
            &format!("/api/v1/experiments/{}/configs", self.ea),
            self.config(A_CONFIG, A_META),
        ));
        (self.ra, self.sa) = self.run(alice, self.ea, self.ca);
        let started = alice.ok(&format!("/api/v1/runs/{}/start", self.ra), json!({}));
        assert_eq!(started["state"], "running", "{started}");
        common::feed(self.collect, self.http, A_DOMAIN, A_STREAM, A_ROW);
        let mut files = Vec::new();
        wait_for("alice's pcap file with packets", || {
            let (_, f) = alice.get(&format!("/api/v1/runs/{}/files", self.ra));
            files = f
                .as_array()
                .into_iter()
                .flatten()
                .filter(|f| f["bytes"].as_u64().unwrap_or(0) > 24)
                .map(|f| f["name"].as_str().unwrap().to_owned())
                .collect();
            !files.is_empty()
        });
        self.a_file_bytes = alice
            .get_bytes(&format!(
                "/api/v1/runs/{}/files/{}/{}",
                self.ra, self.tap, files[0]
            ))
            .1;
        assert!(self.a_file_bytes.len() > 24);
        self.a_files = files;
        wait_for("alice's capture counters on the collector", || {
            let (s, v) = alice.get(&format!(
                "/api/v1/experiments/{}/query/streams/capture_counters/rows",
                self.ea
            ));
            s == 200 && v.to_string().contains(&self.sa)
        });
        let tail = alice.open(
            &format!(
                "/api/v1/experiments/{}/query/streams/{A_STREAM}/tail",
                self.ea
            ),
            &[],
        );
        assert_eq!(tail.status().as_u16(), 200);
        self.tail = Some(tail);
        self.markers = [
            TAG, A_DOMAIN, A_NAME, A_DESC, A_CONFIG, A_META, A_STREAM, A_ROW, A_ROW2, A_TOKEN,
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([self.sa.clone()])
        .chain(self.a_files.iter().cloned())
        .collect();
    }

    /// Bob's experiments: one with a running session and data, one that
    /// has no data yet, on the same collector and daemon; and a run whose
    /// session name a session in alice's domain already holds.
    fn bobs_data(&mut self) {
        let bob = &self.bob;
        let exp = |name: &str, domain: &str| {
            id(&bob.ok(
                "/api/v1/experiments",
                json!({"name": name, "domain": domain, "collector": self.coll}),
            ))
        };
        self.eb = exp("bob study", "bobdom");
        self.eb_empty = exp("bob empty", "bobempty");
        self.cb = id(&bob.ok(
            &format!("/api/v1/experiments/{}/configs", self.eb),
            self.config("bobcfg", "bob's"),
        ));
        (self.rb, self.sb) = self.run(bob, self.eb, self.cb);
        let v = bob.ok(&format!("/api/v1/runs/{}/start", self.rb), json!({}));
        assert_eq!(v["state"], "running", "{v}");
        common::feed(self.collect, self.http, "bobdom", "bobstream", "bobrow");
        (self.rb2, self.sb2) = self.run(bob, self.eb, self.cb);
        self.daemon_session(A_DOMAIN, &self.sb2, true);
    }

    /// Each marker is there to be found where it may be seen (or the
    /// checks could not fail).
    fn check_markers_are_there(&self) {
        wait_for(
            "snapshots and capabilities with both tenants' sessions",
            || {
                let (_, snaps) = self
                    .admin
                    .get(&format!("/api/v1/devices/{}/snapshots", self.tap));
                let last = snaps
                    .as_array()
                    .and_then(|a| a.last())
                    .map(Value::to_string);
                let (_, d) = self.admin.get(&format!("/api/v1/devices/{}", self.coll));
                last.is_some_and(|l| {
                    l.contains(&self.sa) && l.contains(&self.sb) && l.contains(&self.sb2)
                }) && d.to_string().contains(A_DOMAIN)
            },
        );
        let (_, rows) = self.alice.get(&format!(
            "/api/v1/experiments/{}/query/streams/{A_STREAM}/rows",
            self.ea
        ));
        assert!(rows.to_string().contains(A_ROW), "{rows}");
        let f = &self.a_files[0];
        assert!(f.contains(&self.sa), "file names carry the session: {f}");
    }

    /// Stops the manager, the daemon and the server.
    pub fn finish(self) {
        drop(self.tail);
        drop(self.t);
        self.rt.block_on(self.daemon.shutdown());
        self.rt.block_on(self.srv.shutdown());
    }
}
