//! Shared by the scaffold tests: fixtures, generation into a folder, the
//! tools a test needs (missing ones fail under `CI=true`), and a real
//! collection server. Building and running C programs reuses the
//! client-ffi test helpers (`ffi`), which find the built liboml2.

#![allow(dead_code)]

#[path = "../../../client-ffi/tests/common/mod.rs"]
pub mod ffi;

use std::path::{Path, PathBuf};
use std::process::Command;

use scaffold::gen::{Options, Output};

/// `tests/fixtures/<name>`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// `tests/<rest>`.
pub fn test_file(rest: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(rest)
}

/// Our C headers (`crates/client-ffi/include`).
pub fn our_include() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../client-ffi/include")
}

/// Generates `outputs` for the fixture `name` into `dir`.
pub fn generate(name: &str, outputs: &[Output], dir: &Path) {
    let (app, _) = scaffold::load(&fixture(name)).expect("fixture parses");
    let files = scaffold::plan(&app, outputs, &Options::default(), dir).expect("fixture is valid");
    scaffold::write::write_all(&files, true).expect("written");
}

/// Whether `tool` runs (`tool --version`). Missing: the test fails when
/// `CI=true`, and is reported as skipped otherwise.
pub fn require_tool(tool: &str, why: &str) -> bool {
    testkit::have_tool(
        tool,
        &["--version"],
        &format!("{why}; scripts/setup.sh installs it"),
    )
}

/// The reference install (`~/.cache/oml-reference`, or `OML_REFERENCE`).
pub fn reference_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("OML_REFERENCE")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/oml-reference"))
        })?;
    if dir.join("bin/oml2-scaffold").exists() {
        return Some(dir);
    }
    testkit::skip(&format!(
        "no reference OML build at {} (scripts/setup.sh builds it)",
        dir.display()
    ));
    None
}

/// Runs the reference oml2-scaffold with `args` in `dir`.
pub fn reference_scaffold(reference: &Path, args: &[&str], dir: &Path) {
    let out = Command::new("ruby")
        .arg(reference.join("bin/oml2-scaffold"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("ruby runs");
    assert!(
        out.status.success(),
        "reference oml2-scaffold {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A collection server on loopback writing SQLite into a temporary folder.
pub struct TestServer {
    pub server: server::Server,
    pub data: tempfile::TempDir,
    pub port: u16,
}

impl TestServer {
    pub async fn start() -> TestServer {
        let data = tempfile::tempdir().unwrap();
        let mut config = server::ServerConfig::new(data.path());
        config.listen = vec!["127.0.0.1:0".parse().unwrap()];
        let server = server::Server::start(config).await.unwrap();
        let port = server.local_addrs()[0].port();
        TestServer { server, data, port }
    }

    /// `tcp:127.0.0.1:<port>`.
    pub fn uri(&self) -> String {
        format!("tcp:127.0.0.1:{}", self.port)
    }

    /// Stops the server (flushing every row) and returns the data folder.
    pub async fn stop(self) -> tempfile::TempDir {
        self.server.shutdown().await;
        self.data
    }
}

/// Runs `client(uri)` (a blocking program talking to the server at
/// `uri`) against a fresh server, then stops it and returns its data folder.
pub async fn against_server<F>(client: F) -> tempfile::TempDir
where
    F: FnOnce(String) + Send + 'static,
{
    let srv = TestServer::start().await;
    let uri = srv.uri();
    tokio::task::spawn_blocking(move || client(uri))
        .await
        .unwrap();
    srv.stop().await
}

/// Every row of `table` in `<dir>/<domain>.sq3`, fields only, in order.
pub fn rows(dir: &Path, domain: &str, table: &str, cols: &str) -> Vec<Vec<rusqlite::types::Value>> {
    let db = rusqlite::Connection::open(dir.join(format!("{domain}.sq3"))).unwrap();
    let n = cols.split(',').count();
    let mut stmt = db
        .prepare(&format!(
            "SELECT {cols} FROM \"{table}\" ORDER BY oml_tuple_id"
        ))
        .unwrap();
    stmt.query_map([], |r| (0..n).map(|i| r.get(i)).collect())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}
