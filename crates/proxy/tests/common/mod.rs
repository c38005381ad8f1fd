//! Test helpers: a real collection server on loopback, a proxy in front of
//! it, stock and resumable (spec §3.6) test senders, and SQLite checks.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use proxy::{Proxy, ProxyConfig};
use server::{Server, ServerConfig};

pub const SCHEMA: &str = "1 t_m i:int32 s:string";
pub const START: i64 = 1_700_000_000;

pub fn init_log() {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .try_init();
}

/// A free loopback port that stays free for the server a test starts on
/// it (see `testkit::free_port`).
pub fn free_addr() -> SocketAddr {
    testkit::free_addr()
}

/// Starts a server on `addr` storing into `dir`.
pub async fn start_server(addr: SocketAddr, dir: &Path) -> Server {
    init_log();
    let mut config = ServerConfig::new(dir);
    config.listen = vec![addr];
    Server::start(config).await.unwrap()
}

/// A proxy config for tests: loopback, no control endpoint, fast backoff.
pub fn proxy_config(journal: &Path, upstream: SocketAddr) -> ProxyConfig {
    init_log();
    let mut c = ProxyConfig::new(journal, upstream.to_string());
    c.listen = vec!["127.0.0.1:0".parse().unwrap()];
    c.control = None;
    c.backoff = (Duration::from_millis(50), Duration::from_millis(500));
    c.segment_size = 64 << 10;
    c.quota = 64 << 20;
    c
}

pub async fn start_proxy(config: ProxyConfig) -> (Proxy, SocketAddr) {
    let p = Proxy::start(config).await.unwrap();
    let addr = p.local_addrs()[0];
    (p, addr)
}

/// A text header with `schemas`, plus extra lines before `content`.
pub fn header(domain: &str, sender: &str, extra: &str) -> String {
    format!(
        "protocol: 5\ndomain: {domain}\nstart-time: {START}\nsender-id: {sender}\napp-name: t\nschema: 0 _experiment_metadata subject:string key:string value:string\nschema: {SCHEMA}\n{extra}content: text\n\n"
    )
}

/// Tuples `from..to` of stream 1 as text lines (seq = i).
pub fn tuples(from: i64, to: i64) -> Vec<u8> {
    (from..to)
        .flat_map(|i| format!("0.5\t1\t{i}\t{i}\tvalue {i}\n").into_bytes())
        .collect()
}

/// A stock client: header, tuples, close; waits for the proxy to close.
pub fn stock_send(addr: SocketAddr, domain: &str, sender: &str, data: &[u8]) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(header(domain, sender, "").as_bytes()).unwrap();
    for chunk in data.chunks(7919) {
        s.write_all(chunk).unwrap();
    }
    s.shutdown(std::net::Shutdown::Write).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut back = Vec::new();
    let _ = s.read_to_end(&mut back);
    assert!(back.is_empty(), "a stock client gets nothing back");
}

/// The oml_seq column of `table` for `sender` (by name), in insertion order.
pub fn seqs(dir: &Path, domain: &str, table: &str, sender: &str) -> Vec<i64> {
    let path = dir.join(format!("{domain}.sq3"));
    let Ok(db) =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return Vec::new();
    };
    let sql = format!(
        "SELECT t.oml_seq FROM \"{table}\" t JOIN _senders s ON s.id = t.oml_sender_id \
         WHERE s.name = ?1 ORDER BY t.oml_tuple_id"
    );
    let Ok(mut stmt) = db.prepare(&sql) else {
        return Vec::new();
    };
    stmt.query_map([sender], |r| r.get(0))
        .map(|rows| rows.filter_map(Result::ok).collect())
        .unwrap_or_default()
}

/// Polls until `table` holds `want` rows of `sender` (or the time is up).
pub fn wait_rows(
    dir: &Path,
    domain: &str,
    table: &str,
    sender: &str,
    want: usize,
    within: Duration,
) -> Vec<i64> {
    let deadline = Instant::now() + within;
    loop {
        let got = seqs(dir, domain, table, sender);
        if got.len() >= want || Instant::now() >= deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Asserts the sequence numbers are exactly `0..n`, each once.
pub fn assert_exactly(mut got: Vec<i64>, n: i64, what: &str) {
    let len = got.len();
    got.sort_unstable();
    let dups = got.windows(2).filter(|w| w[0] == w[1]).count();
    got.dedup();
    let missing = n as usize - got.iter().filter(|&&s| (0..n).contains(&s)).count();
    assert!(
        len == n as usize && dups == 0 && missing == 0,
        "{what}: {len} rows for {n} tuples, {dups} duplicates, {missing} missing"
    );
}

/// A sender speaking spec §3.6 (as our clients will): it keeps every byte
/// not yet acknowledged, reconnects after any failure, and resumes where
/// the receiver says. Its data declares stream 2 through schema 0 halfway.
pub struct ResumableSender {
    /// The receiver.
    pub addr: SocketAddr,
    /// Session id.
    pub session: String,
    /// Sender id (the `_senders` name).
    pub sender: String,
    /// Domain.
    pub domain: String,
    /// The whole session's data.
    pub data: Vec<u8>,
    /// Data offset just after the schema-0 declaration of stream 2.
    pub decl_end: u64,
    /// Highest acknowledged offset.
    pub acked: u64,
    /// Connections made.
    pub connections: u32,
}

/// The schema-0 declaration of stream 2.
pub const LATE_SCHEMA: &str = "2 t_late x:int32";

impl ResumableSender {
    /// `n` tuples of stream 1 with seq 0..n; halfway, stream 2 is declared
    /// and gets one tuple per ten of stream 1 from then on.
    pub fn new(addr: SocketAddr, domain: &str, sender: &str, n: i64) -> ResumableSender {
        let mut data = tuples(0, n / 2);
        data.extend_from_slice(format!("0.5\t0\t1\t.\tschema\t{LATE_SCHEMA}\n").as_bytes());
        let decl_end = data.len() as u64;
        let mut late = 0;
        for i in n / 2..n {
            data.extend_from_slice(&tuples(i, i + 1));
            if i % 10 == 0 {
                data.extend_from_slice(format!("0.6\t2\t{late}\t{late}\n").as_bytes());
                late += 1;
            }
        }
        ResumableSender {
            addr,
            session: format!("test-{sender}-{}", std::process::id()),
            sender: sender.into(),
            domain: domain.into(),
            data,
            decl_end,
            acked: 0,
            connections: 0,
        }
    }

    /// Tuples of stream 2 the data holds.
    pub fn late_tuples(&self, n: i64) -> i64 {
        (n / 2..n).filter(|i| i % 10 == 0).count() as i64
    }

    fn header(&self, offset: u64) -> String {
        let mut extra = String::new();
        if offset >= self.decl_end {
            extra.push_str(&format!("schema: {LATE_SCHEMA}\n"));
        }
        extra.push_str(&format!(
            "x-streamgauge-session: {}\nx-streamgauge-offset: {offset}\nx-streamgauge-backchannel: 1\n",
            self.session
        ));
        header(&self.domain, &self.sender, &extra)
    }

    /// One connection: sends from the resume offset in `chunk`-byte writes
    /// with `pause` between them, closes at the end and waits for the last
    /// ack. Returns Ok once everything is acknowledged.
    fn attempt(&mut self, chunk: usize, pause: Duration) -> Result<(), String> {
        let mut s = TcpStream::connect(self.addr).map_err(|e| e.to_string())?;
        self.connections += 1;
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(self.header(self.acked).as_bytes())
            .map_err(|e| e.to_string())?;
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut line = String::new();
        r.read_line(&mut line).map_err(|e| e.to_string())?;
        let resume: u64 = line
            .strip_prefix("streamgauge-resume ")
            .ok_or_else(|| format!("want a resume line, got {line:?}"))?
            .trim()
            .parse()
            .unwrap();
        assert!(
            resume >= self.acked,
            "receiver asks for {resume}, below its own ack {}",
            self.acked
        );
        assert!(resume <= self.data.len() as u64);
        // Everything before the resume offset is safe with the receiver.
        self.acked = self.acked.max(resume);
        // Acks arrive on another thread while this one sends.
        let acked = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(self.acked));
        let total = self.data.len() as u64;
        let reader = {
            let acked = std::sync::Arc::clone(&acked);
            std::thread::spawn(move || {
                let mut line = String::new();
                loop {
                    line.clear();
                    match r.read_line(&mut line) {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    if let Some(a) = line.strip_prefix("streamgauge-ack ") {
                        let a: u64 = a.trim().parse().unwrap();
                        acked.fetch_max(a, std::sync::atomic::Ordering::SeqCst);
                        if a >= total {
                            return;
                        }
                    }
                }
            })
        };
        let mut at = resume as usize;
        let mut result = Ok(());
        while at < self.data.len() {
            let end = (at + chunk).min(self.data.len());
            if let Err(e) = s.write_all(&self.data[at..end]) {
                result = Err(e.to_string());
                break;
            }
            at = end;
            std::thread::sleep(pause);
        }
        if result.is_ok() {
            let _ = s.shutdown(std::net::Shutdown::Write);
        }
        let _ = reader.join();
        self.acked = acked.load(std::sync::atomic::Ordering::SeqCst);
        if self.acked >= total {
            Ok(())
        } else {
            result.and(Err(format!("closed at ack {} of {total}", self.acked)))
        }
    }

    /// Sends everything, reconnecting (every 100 ms, up to `within`) after
    /// failures.
    pub fn run(&mut self, chunk: usize, pause: Duration, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            match self.attempt(chunk, pause) {
                Ok(()) => return,
                Err(e) => {
                    assert!(Instant::now() < deadline, "sender gave up: {e}");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }
}

/// A fresh temporary directory path holder.
pub struct Dirs {
    pub db: tempfile::TempDir,
    pub journal: tempfile::TempDir,
}

impl Dirs {
    pub fn new() -> Dirs {
        Dirs {
            db: tempfile::tempdir().unwrap(),
            journal: tempfile::tempdir().unwrap(),
        }
    }
    pub fn db(&self) -> PathBuf {
        self.db.path().to_owned()
    }
    pub fn journal(&self) -> PathBuf {
        self.journal.path().to_owned()
    }
}

/// Waits until the proxy has delivered every journal.
pub async fn wait_delivered(p: &Proxy, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let s = p.status();
        if s["sessions"].as_array().is_some_and(|a| a.is_empty()) {
            return;
        }
        assert!(Instant::now() < deadline, "not delivered: {s:#}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Asserts that `sender` of `domain` has rows `0..n` in table `t_m` of
/// `db`, each once, waiting up to 10 s for the writer.
pub fn assert_stored(db: &Path, domain: &str, sender: &str, n: i64, what: &str) {
    let got = wait_rows(
        db,
        domain,
        "t_m",
        sender,
        n as usize,
        Duration::from_secs(10),
    );
    assert_exactly(got, n, what);
}
