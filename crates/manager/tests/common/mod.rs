//! Test helpers: a manager on loopback with a fresh data directory (and,
//! for the PostgreSQL backend, a fresh database in the test binary's
//! throwaway cluster), and a small HTTP client that keeps the session
//! cookie and CSRF token the way a browser page does.
//!
//! Tests that exercise the database are written once as `fn name(b:
//! Backend)` and run on both backends by [`on_both_backends!`], which
//! makes the test functions `name::sqlite` and `name::postgres`.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use manager::db::{Db, DbTarget};
use manager::{Manager, ManagerConfig};
use serde_json::{json, Value};

/// The admin password tests start the manager with.
pub const ADMIN_PW: &str = "admin-password-1";

/// A manager and what it needs to live.
pub struct TestManager {
    pub rt: tokio::runtime::Runtime,
    pub manager: Option<Manager>,
    pub dir: tempfile::TempDir,
    pub base: String,
    /// Where its database is.
    pub db: DbTarget,
}

/// The manager's database backend under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `<data-dir>/manager.db`.
    Sqlite,
    /// A fresh database in the throwaway cluster (crates/pgtemp).
    Postgres,
}

/// Runs each named `fn(Backend)` as two tests, `name::sqlite` and
/// `name::postgres`.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn sqlite() {
                super::$name($crate::common::Backend::Sqlite)
            }
            #[test]
            fn postgres() {
                super::$name($crate::common::Backend::Postgres)
            }
        }
    )*};
}

/// A new, empty PostgreSQL database owned by the cluster's `oml` role.
pub fn new_pg_database() -> DbTarget {
    let cluster = pgtemp::shared();
    let name = pgtemp::unique_domain("manager");
    cluster.psql("postgres", &format!("CREATE DATABASE {name} OWNER oml"));
    DbTarget::parse(&format!("postgres://oml@127.0.0.1:{}/{name}", cluster.port)).unwrap()
}

/// Opens the database a test manager uses (alongside it, as the offline
/// subcommands do).
pub fn open_db(t: &TestManager) -> Db {
    Db::connect(&t.db).unwrap()
}

impl Drop for TestManager {
    fn drop(&mut self) {
        if let Some(m) = self.manager.take() {
            self.rt.block_on(m.shutdown());
        }
    }
}

/// Starts a manager (tuned by `tune`) on an ephemeral port, on SQLite.
pub fn start(tune: impl FnOnce(&mut ManagerConfig)) -> TestManager {
    start_on(Backend::Sqlite, tune)
}

/// Starts a manager on a fresh database of backend `b`.
pub fn start_on(b: Backend, tune: impl FnOnce(&mut ManagerConfig)) -> TestManager {
    let dir = tempfile::tempdir().unwrap();
    let db = match b {
        Backend::Sqlite => DbTarget::Sqlite(dir.path().join("data/manager.db")),
        Backend::Postgres => new_pg_database(),
    };
    start_with(dir, db, tune)
}

/// Starts a manager on database `db` (a restart when another used it).
pub fn start_with(
    dir: tempfile::TempDir,
    db: DbTarget,
    tune: impl FnOnce(&mut ManagerConfig),
) -> TestManager {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut cfg = ManagerConfig::new(dir.path().join("data"));
    cfg.database = Some(db.clone());
    cfg.listen = "127.0.0.1:0".parse().unwrap();
    cfg.admin_password = Some(ADMIN_PW.into());
    cfg.retry_backoff = Duration::from_millis(50);
    tune(&mut cfg);
    let manager = rt.block_on(Manager::start(cfg)).unwrap();
    let base = format!("http://{}", manager.local_addr());
    TestManager {
        rt,
        manager: Some(manager),
        dir,
        base,
        db,
    }
}

impl TestManager {
    /// Shuts the manager down and starts another on the same database and
    /// data directory.
    pub fn restart(mut self, tune: impl FnOnce(&mut ManagerConfig)) -> TestManager {
        if let Some(m) = self.manager.take() {
            self.rt.block_on(m.shutdown());
        }
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap());
        let db = self.db.clone();
        drop(self);
        start_with(dir, db, tune)
    }
}

/// One caller: a browser session (cookie + CSRF) or an API token.
#[derive(Clone)]
pub struct Api {
    agent: ureq::Agent,
    pub base: String,
    pub cookie: Option<String>,
    pub csrf: Option<String>,
    pub token: Option<String>,
}

impl Api {
    pub fn new(base: &str) -> Api {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        Api {
            agent,
            base: base.to_owned(),
            cookie: None,
            csrf: None,
            token: None,
        }
    }

    /// Logs in; panics unless 200.
    pub fn login(base: &str, user: &str, password: &str) -> Api {
        let mut a = Api::new(base);
        let (s, v) = a.try_login(user, password);
        assert_eq!(s, 200, "login {user}: {v}");
        a
    }

    /// Logs in; returns the status and body (keeps the cookie on success).
    pub fn try_login(&mut self, user: &str, password: &str) -> (u16, Value) {
        let resp = self
            .agent
            .post(format!("{}/api/v1/login", self.base))
            .content_type("application/json")
            .send(serde_json::json!({"username": user, "password": password}).to_string())
            .unwrap();
        let status = resp.status().as_u16();
        let cookie = resp
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = body(resp);
        if status == 200 {
            let c = cookie.expect("login sets a cookie");
            assert!(
                c.contains("HttpOnly") && c.contains("SameSite=Strict"),
                "{c}"
            );
            self.cookie = Some(c.split(';').next().unwrap().to_owned());
            self.csrf = body["csrf_token"].as_str().map(str::to_owned);
        }
        (status, body)
    }

    pub fn with_token(base: &str, token: &str) -> Api {
        let mut a = Api::new(base);
        a.token = Some(token.to_owned());
        a
    }

    fn prepare<B>(&self, req: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        let mut req = req;
        if let Some(c) = &self.cookie {
            req = req.header("Cookie", c);
        }
        if let Some(t) = &self.token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        req
    }

    /// Any request (a JSON body for POST, PUT and PATCH; the CSRF header
    /// when logged in): the status, the headers as `name: value` lines
    /// and the body bytes.
    pub fn raw(&self, method: &str, path: &str, b: &Value) -> (u16, String, Vec<u8>) {
        let url = format!("{}{path}", self.base);
        let with = |req| self.csrf_json(self.prepare(req));
        let r = match method {
            "GET" => self.prepare(self.agent.get(&url)).call(),
            "DELETE" => self.csrf_json(self.prepare(self.agent.delete(&url))).call(),
            "POST" => with(self.agent.post(&url)).send(b.to_string()),
            "PUT" => with(self.agent.put(&url)).send(b.to_string()),
            "PATCH" => with(self.agent.patch(&url)).send(b.to_string()),
            m => panic!("method {m}"),
        };
        let mut r = r.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let headers = r
            .headers()
            .iter()
            .map(|(k, v)| format!("{k}: {}\n", String::from_utf8_lossy(v.as_bytes())))
            .collect();
        let bytes = r
            .body_mut()
            .with_config()
            .limit(1 << 26)
            .read_to_vec()
            .unwrap_or_else(|e| panic!("{method} {path}: body: {e}"));
        (r.status().as_u16(), headers, bytes)
    }

    fn csrf_json<B>(&self, req: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        let req = req.header("Content-Type", "application/json");
        match &self.csrf {
            Some(t) => req.header("X-CSRF-Token", t),
            None => req,
        }
    }

    pub fn get(&self, path: &str) -> (u16, Value) {
        let r = self
            .prepare(self.agent.get(format!("{}{path}", self.base)))
            .call()
            .unwrap();
        (r.status().as_u16(), body(r))
    }

    /// GET returning the raw bytes.
    pub fn get_bytes(&self, path: &str) -> (u16, Vec<u8>) {
        let mut r = self
            .prepare(self.agent.get(format!("{}{path}", self.base)))
            .call()
            .unwrap();
        let s = r.status().as_u16();
        (
            s,
            r.body_mut()
                .with_config()
                .limit(1 << 30)
                .read_to_vec()
                .unwrap(),
        )
    }

    /// A streaming GET (SSE), with extra headers.
    pub fn open(&self, path: &str, headers: &[(&str, &str)]) -> ureq::http::Response<ureq::Body> {
        let mut req = self.prepare(self.agent.get(format!("{}{path}", self.base)));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.call().unwrap()
    }

    /// A state-changing request with the CSRF header (when logged in).
    pub fn send(&self, method: &str, path: &str, body_json: &Value) -> (u16, Value) {
        self.send_with(method, path, body_json, true, "application/json")
    }

    pub fn send_with(
        &self,
        method: &str,
        path: &str,
        body_json: &Value,
        csrf: bool,
        content_type: &str,
    ) -> (u16, Value) {
        let url = format!("{}{path}", self.base);
        let req = match method {
            "POST" => self.agent.post(&url),
            "PUT" => self.agent.put(&url),
            "PATCH" => self.agent.patch(&url),
            "DELETE" => {
                let mut req = self.prepare(self.agent.delete(&url));
                req = req.header("Content-Type", content_type);
                if csrf {
                    if let Some(t) = &self.csrf {
                        req = req.header("X-CSRF-Token", t);
                    }
                }
                let r = req.call().unwrap();
                return (r.status().as_u16(), body(r));
            }
            m => panic!("method {m}"),
        };
        let mut req = self.prepare(req).header("Content-Type", content_type);
        if csrf {
            if let Some(t) = &self.csrf {
                req = req.header("X-CSRF-Token", t);
            }
        }
        let r = req.send(body_json.to_string()).unwrap();
        (r.status().as_u16(), body(r))
    }

    pub fn post(&self, path: &str, b: Value) -> (u16, Value) {
        self.send("POST", path, &b)
    }

    pub fn put(&self, path: &str, b: Value) -> (u16, Value) {
        self.send("PUT", path, &b)
    }

    pub fn delete(&self, path: &str) -> (u16, Value) {
        self.send("DELETE", path, &serde_json::json!({}))
    }

    /// POST that must answer 200 or 201.
    pub fn ok(&self, path: &str, b: Value) -> Value {
        let (s, v) = self.post(path, b);
        assert!(s == 200 || s == 201, "POST {path}: {s} {v}");
        v
    }
}

fn body(mut r: ureq::http::Response<ureq::Body>) -> Value {
    let text = r.body_mut().read_to_string().unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

/// Waits until `ok` holds (15 s at most).
pub fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !ok() {
        assert!(t0.elapsed() < Duration::from_secs(30), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The error code of an answer.
pub fn code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or("")
}

/// A real collection server with its query API on loopback, storing
/// under `dir/srv` (tuned by `tune`, e.g. with a token file).
pub fn collection_server(
    rt: &tokio::runtime::Runtime,
    dir: &std::path::Path,
    tune: impl FnOnce(&mut server::ServerConfig),
) -> server::Server {
    std::fs::create_dir_all(dir.join("srv")).unwrap();
    let mut scfg = server::ServerConfig::new(dir.join("srv"));
    scfg.listen = vec!["127.0.0.1:0".parse().unwrap()];
    scfg.http_listen = Some("127.0.0.1:0".parse().unwrap());
    tune(&mut scfg);
    rt.block_on(server::Server::start(scfg)).unwrap()
}

/// Sends one row carrying `marker` into stream `stream` (one string field
/// `s`) of `domain` on the collection server at `collect` (OMSP text), and
/// waits until its query API at `http` serves it.
pub fn feed(
    collect: std::net::SocketAddr,
    http: std::net::SocketAddr,
    domain: &str,
    stream: &str,
    marker: &str,
) {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(collect).unwrap();
    let msg = format!(
        "protocol: 5\ndomain: {domain}\nstart-time: 1700000000\nsender-id: s\n\
         app-name: t\nschema: 1 {stream} s:string\ncontent: text\n\n0.5\t1\t0\t{marker}\n"
    );
    s.write_all(msg.as_bytes()).unwrap();
    let url = format!("http://{http}/api/v1/domains/{domain}/streams/{stream}/rows");
    wait_for(&format!("row in {domain}"), || {
        ureq::get(&url)
            .call()
            .ok()
            .and_then(|mut r| r.body_mut().read_to_string().ok())
            .is_some_and(|b| b.contains(marker))
    });
}

/// Creates users whose password is `{name}-password`.
pub fn add_users(admin: &Api, names: &[&str]) {
    for u in names {
        admin.ok(
            "/api/v1/users",
            json!({"username": u, "password": format!("{u}-password")}),
        );
    }
}
