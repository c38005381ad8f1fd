//! Helpers shared by the client's integration tests.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use client::spec::{ClientSpec, DestinationSpec, Encoding, OverloadPolicy, Uri, Window};
use omsp::{Decoder, Event, Header, Sample, Schema};

/// A spec for `app` with the given destinations, instrumentation every
/// second, per-sample streams.
pub fn spec(app: &str, destinations: Vec<DestinationSpec>) -> ClientSpec {
    ClientSpec {
        app: app.into(),
        id: Some("sender1".into()),
        domain: Some("dom".into()),
        destinations,
        default_window: Window::PerSample,
        instr_interval: Some(Duration::from_secs(1)),
        ..ClientSpec::default()
    }
}

/// A file destination with default streams.
pub fn file(path: &Path, encoding: Encoding) -> DestinationSpec {
    DestinationSpec {
        uri: Uri::File(path.to_owned()),
        encoding,
        policy: OverloadPolicy::Block { stall_limit: None },
        bufsize: 1 << 20,
        streams: None,
        instrumentation: true,
        backchannel: Default::default(),
    }
}

/// A TCP destination with default streams and the documented TCP defaults
/// (block, 1 s stall limit).
pub fn tcp(
    addr: std::net::SocketAddr,
    encoding: Encoding,
    policy: OverloadPolicy,
    bufsize: usize,
) -> DestinationSpec {
    DestinationSpec {
        uri: Uri::Tcp {
            host: addr.ip().to_string(),
            port: addr.port(),
        },
        encoding,
        policy,
        bufsize,
        streams: None,
        instrumentation: true,
        backchannel: Default::default(),
    }
}

/// Everything a session decodes to.
#[derive(Debug, Default)]
pub struct Decoded {
    pub header: Option<Header>,
    pub schemas: Vec<Arc<Schema>>,
    pub samples: Vec<Sample>,
    pub errors: Vec<String>,
}

impl Decoded {
    /// Samples of stream `index`.
    pub fn stream(&self, index: u32) -> Vec<&Sample> {
        self.samples.iter().filter(|s| s.stream == index).collect()
    }
}

/// Decodes a whole session.
pub fn decode(bytes: &[u8]) -> Decoded {
    let mut out = Decoded::default();
    for ev in Decoder::decode_all(bytes) {
        match ev {
            Ok(Event::Header(h)) => out.header = Some(h),
            Ok(Event::Schema(s)) => out.schemas.push(s),
            Ok(Event::Sample(s)) => out.samples.push(s),
            Err(e) => out.errors.push(e.to_string()),
        }
    }
    out
}

/// Both encodings, for tests that run on each.
pub const ENCODINGS: [Encoding; 2] = [Encoding::Text, Encoding::Binary];

/// A real collection server (crates/server) on loopback, in its own runtime.
pub struct TestServer {
    pub rt: tokio::runtime::Runtime,
    pub server: Option<server::Server>,
    pub addr: std::net::SocketAddr,
    pub dir: tempfile::TempDir,
    /// Feedback rules (TOML, server/src/feedback/rules.rs), applied at every (re)start.
    pub rules: Option<String>,
}

impl TestServer {
    /// On an ephemeral port of 127.0.0.1, with a fresh data directory.
    pub fn start() -> TestServer {
        TestServer::start_on("127.0.0.1:0".parse().unwrap())
    }

    /// On `addr`, with a fresh data directory.
    pub fn start_on(addr: std::net::SocketAddr) -> TestServer {
        TestServer::start_with(addr, None)
    }

    /// On an ephemeral port, with these feedback rules.
    pub fn with_rules(rules: &str) -> TestServer {
        TestServer::start_with("127.0.0.1:0".parse().unwrap(), Some(rules.to_owned()))
    }

    fn start_with(addr: std::net::SocketAddr, rules: Option<String>) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let mut s = TestServer {
            rt,
            server: None,
            addr,
            dir,
            rules,
        };
        s.restart();
        s
    }

    /// Shuts the server down (it stores what it received, then closes).
    pub fn stop(&mut self) {
        if let Some(server) = self.server.take() {
            self.rt.block_on(server.shutdown());
        }
    }

    /// Starts again on the same address and data directory.
    pub fn restart(&mut self) {
        let mut config = server::ServerConfig::new(self.dir.path());
        config.listen = vec![self.addr];
        if let Some(r) = &self.rules {
            config.feedback_rules = server::feedback::rules::parse(r, "rules.toml").unwrap();
        }
        let server = self.rt.block_on(server::Server::start(config)).unwrap();
        self.addr = server.local_addrs()[0];
        self.server = Some(server);
    }

    /// The database of `domain`.
    pub fn db(&self, domain: &str) -> rusqlite::Connection {
        rusqlite::Connection::open(self.dir.path().join(format!("{domain}.sq3"))).unwrap()
    }

    /// Polls `sql` (a count) until it returns `want` or `within` passed.
    pub fn wait_count(&self, domain: &str, sql: &str, want: i64, within: Duration) -> i64 {
        let deadline = std::time::Instant::now() + within;
        loop {
            let got = rusqlite::Connection::open(self.dir.path().join(format!("{domain}.sq3")))
                .and_then(|c| c.query_row(sql, [], |r| r.get::<_, i64>(0)))
                .unwrap_or(-1);
            if got == want || std::time::Instant::now() >= deadline {
                return got;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One integer query.
pub fn query_i64(db: &rusqlite::Connection, sql: &str) -> i64 {
    db.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// Injects rows 1..=`n` on a thread of its own as a steady stream (a
/// pause of 10 ms every 1000 rows) rather than one burst; `inject` sends
/// row `i`. The counter says how many rows are injected so far.
pub fn steady_injector(
    n: i64,
    inject: impl Fn(i64) + Send + 'static,
) -> (
    Arc<std::sync::atomic::AtomicI64>,
    std::thread::JoinHandle<()>,
) {
    use std::sync::atomic::{AtomicI64, Ordering};
    let progress = Arc::new(AtomicI64::new(0));
    let handle = {
        let progress = Arc::clone(&progress);
        std::thread::spawn(move || {
            for i in 1..=n {
                inject(i);
                progress.store(i, Ordering::Relaxed);
                if i % 1000 == 0 {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        })
    };
    (progress, handle)
}
