//! Helpers of the scale-out tests: servers on one PostgreSQL, stock-like
//! text clients started at one instant, and the rows as stored per sender.
//! Test files include it next to `mod common;`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use server::{Backend, PgOptions, Server};

/// A server on loopback storing into PostgreSQL at `port` as `oml`.
pub async fn server(port: u16) -> (Server, SocketAddr, tempfile::TempDir) {
    let opts = PgOptions {
        host: "127.0.0.1".into(),
        port,
        user: "oml".into(),
        ..PgOptions::default()
    };
    let t = crate::common::start_with(move |c| c.backend = Backend::Postgres(opts)).await;
    (t.server, t.addr, t.dir)
}

/// One text-mode client: who it is, where it goes, what it sends.
#[derive(Debug, Clone)]
pub struct Client {
    /// Server to connect to.
    pub addr: SocketAddr,
    /// Domain.
    pub domain: String,
    /// `sender-id`.
    pub sender: String,
    /// Its one schema, with index 1 (`1 <name> <fields>`).
    pub schema: String,
    /// Sequence numbers `1..=rows`; each row's value is `seq` in every field.
    pub rows: u64,
}

impl Client {
    /// Header and rows, as a stock text-mode client sends them.
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = format!(
            "protocol: 5\ndomain: {}\nstart-time: 1700000000\nsender-id: {}\n\
             app-name: t\nschema: {}\ncontent: text\n\n",
            self.domain, self.sender, self.schema
        );
        let fields = self.schema.split_whitespace().count() - 2;
        for seq in 1..=self.rows {
            out.push_str(&format!("{}.5\t1\t{seq}", seq));
            for _ in 0..fields {
                out.push_str(&format!("\t{seq}"));
            }
            out.push('\n');
        }
        out.into_bytes()
    }
}

/// `n` clients `<prefix>0`… of one stream `1 <table> x:int32 y:double`,
/// sent alternately to `addrs[0]` and `addrs[1]`.
pub fn alternating(
    addrs: [SocketAddr; 2],
    domain: &str,
    prefix: &str,
    table: &str,
    n: usize,
    rows: u64,
) -> Vec<Client> {
    (0..n)
        .map(|i| Client {
            addr: addrs[i % 2],
            domain: domain.to_owned(),
            sender: format!("{prefix}{i}"),
            schema: format!("1 {table} x:int32 y:double"),
            rows,
        })
        .collect()
}

/// Sends `bytes`, half-closes, and waits until the server closes (it has
/// then handed every row to its writer).
pub fn send(addr: SocketAddr, bytes: &[u8]) {
    try_send(addr, bytes).unwrap();
}

/// [`send`], returning a failure (a connection refused or reset).
pub fn try_send(addr: SocketAddr, bytes: &[u8]) -> std::io::Result<()> {
    let mut s = TcpStream::connect(addr)?;
    s.write_all(bytes)?;
    s.shutdown(std::net::Shutdown::Write)?;
    s.set_read_timeout(Some(Duration::from_secs(120)))?;
    let mut sink = Vec::new();
    let _ = s.read_to_end(&mut sink);
    Ok(())
}

/// Starts every client on its own thread; they connect at one instant.
pub fn at_once(clients: Vec<Client>) -> Vec<JoinHandle<()>> {
    let start = Arc::new(Barrier::new(clients.len()));
    clients
        .into_iter()
        .map(|c| {
            let start = Arc::clone(&start);
            let bytes = c.bytes();
            std::thread::spawn(move || {
                start.wait();
                send(c.addr, &bytes);
            })
        })
        .collect()
}

/// Joins client threads without blocking the async runtime.
pub async fn join(threads: Vec<JoinHandle<()>>) {
    tokio::task::spawn_blocking(move || {
        for t in threads {
            t.join().unwrap();
        }
    })
    .await
    .unwrap();
}

/// Runs `f` with a connection to `domain` at `port`, off the runtime.
pub fn with_db<T: Send + 'static>(
    port: u16,
    domain: &str,
    f: impl FnOnce(&mut postgres::Client) -> T + Send + 'static,
) -> T {
    let domain = domain.to_owned();
    pgtemp::blocking(move || {
        let mut c = postgres::Config::new()
            .host("127.0.0.1")
            .port(port)
            .user("oml")
            .dbname(&domain)
            .connect(postgres::NoTls)
            .unwrap();
        f(&mut c)
    })
}

/// `oml_seq` of every row of `table`, per sender name, in storage order.
pub fn seqs(port: u16, domain: &str, table: &str) -> BTreeMap<String, Vec<i64>> {
    let sql = format!(
        "SELECT s.name, t.oml_seq::int8 FROM \"{table}\" t \
         JOIN _senders s ON s.id = t.oml_sender_id ORDER BY t.oml_tuple_id"
    );
    with_db(port, domain, move |c| {
        let mut out: BTreeMap<String, Vec<i64>> = BTreeMap::new();
        for r in c.query(&sql, &[]).unwrap() {
            out.entry(r.get(0)).or_default().push(r.get(1));
        }
        out
    })
}

/// `_senders` as name → id.
pub fn senders(port: u16, domain: &str) -> BTreeMap<String, i32> {
    with_db(port, domain, |c| {
        c.query("SELECT name, id FROM _senders", &[])
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    })
}

/// `1..=n` as stored sequence numbers.
pub fn one_to(n: u64) -> Vec<i64> {
    (1..=n as i64).collect()
}

/// A free loopback port (see `testkit::free_port`).
pub fn free_port() -> u16 {
    testkit::free_port()
}

/// A program serving on a loopback port (the stock oml2-server, HAProxy),
/// killed when dropped.
pub struct Listening {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
}

impl Listening {
    /// Spawns `cmd` without input or output and waits until it accepts
    /// connections on `port`.
    pub fn spawn(mut cmd: Command, port: u16) -> Listening {
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "{cmd:?} did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Listening { child, addr }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The haproxy binary; `None` is a recorded skip (a failure under CI).
pub fn haproxy() -> Option<PathBuf> {
    let found = ["/usr/sbin/haproxy", "/usr/bin/haproxy"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    if found.is_none() {
        testkit::skip(
            "haproxy is not installed (Debian package haproxy; scripts/setup.sh installs it)",
        );
    }
    found
}

/// HAProxy in the foreground with the documented TCP-mode frontend,
/// round-robin over `backends` (the documented `balance source` would send
/// every loopback client to one server), stopped when dropped.
pub struct Haproxy {
    /// The process and its frontend address.
    pub proc: Listening,
    /// Holds the configuration file.
    _dir: tempfile::TempDir,
}

impl Haproxy {
    pub fn start(bin: &PathBuf, backends: &[SocketAddr]) -> Haproxy {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut cfg = format!(
            "global\n    maxconn 1000\n\
             defaults\n    mode tcp\n    timeout connect 5s\n    timeout client 1h\n    timeout server 1h\n\
             frontend omsp\n    bind 127.0.0.1:{port}\n    default_backend collectors\n\
             backend collectors\n    balance roundrobin\n"
        );
        for (i, b) in backends.iter().enumerate() {
            cfg.push_str(&format!("    server c{i} {b}\n"));
        }
        let path = dir.path().join("haproxy.cfg");
        std::fs::write(&path, cfg).unwrap();
        let mut cmd = Command::new(bin);
        cmd.arg("-db").arg("-f").arg(&path);
        let proc = Listening::spawn(cmd, port);
        Haproxy { proc, _dir: dir }
    }
}
