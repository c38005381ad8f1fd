//! What the storage-failure tests need: a small tmpfs as data directory
//! (unmounted by a drop guard), a file that fills it, the server's log
//! lines, and a resumable sender that writes from one thread while another
//! reads its acknowledgements; for PostgreSQL, a database in a tablespace
//! on such a tmpfs; our proxy in front of a server; the stock liboml2
//! client `tests/c/flood.c`. Shared by the `disk_full*.rs`,
//! `pg_disk_full*.rs` and `pg_read_only.rs` tests, which each use part
//! of it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::common::resume::header_for;

/// How long any one condition may take before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// A tmpfs mounted on a fresh directory; unmounted when dropped.
pub struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (`20m`).
    pub fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let opts = format!("size={size}");
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &opts, "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap()
            .success();
        assert!(ok, "mount -t tmpfs -o {opts} failed");
        Tmpfs { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `mount -o remount,<opts>`; true if it worked.
    pub fn remount(&self, opts: &str) -> bool {
        Command::new("mount")
            .args(["-o", &format!("remount,{opts}")])
            .arg(self.dir.path())
            .status()
            .unwrap()
            .success()
    }

    /// Fills the file system with a file (returned) until it refuses more.
    pub fn fill(&self) -> PathBuf {
        let path = self.path().join("filler");
        let mut f = std::fs::File::create(&path).unwrap();
        for size in [1 << 20, 4096, 1] {
            let chunk = vec![0xa5u8; size];
            loop {
                match f.write(&chunk) {
                    Ok(n) if n == chunk.len() => {}
                    Ok(_) => break,
                    Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
                    Err(e) => panic!("filling {}: {e}", path.display()),
                }
            }
        }
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = self.remount("rw");
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Every log line of this test process (`info` and up), for tests that
/// check what the server said and how often.
pub fn log() -> &'static Mutex<Vec<u8>> {
    static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&buf);
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || Tee(Arc::clone(&sink)))
            .with_env_filter("info")
            .init();
        buf
    })
}

/// Log lines are kept and also shown on stderr.
struct Tee(Arc<Mutex<Vec<u8>>>);

impl Write for Tee {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        std::io::stderr().write(b)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Log lines about `domain` that contain `what`.
pub fn count(domain: &str, what: &str) -> usize {
    let log = log().lock().unwrap();
    String::from_utf8_lossy(&log)
        .lines()
        .filter(|l| {
            l.contains(what)
                && (l.contains(&format!("domain={domain} "))
                    || l.contains(&format!("domain=\"{domain}\"")))
        })
        .count()
}

/// Log lines that contain every one of `parts`.
pub fn count_lines(parts: &[&str]) -> usize {
    let log = log().lock().unwrap();
    String::from_utf8_lossy(&log)
        .lines()
        .filter(|l| parts.iter().all(|p| l.contains(p)))
        .count()
}

/// Waits until `cond` holds; fails the test after [`DEADLINE`].
pub fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + DEADLINE;
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Tuples `from..to` of the test schema (`1 t_m i:int32 s:string`), each
/// with a 200-byte string so that a few thousand fill a disk.
pub fn tuples(from: i64, to: i64) -> Vec<u8> {
    let pad = "x".repeat(200);
    (from..to)
        .flat_map(|i| format!("0.5\t1\t{i}\t{i}\t{pad} {i}\n").into_bytes())
        .collect()
}

/// One connection of a resumable session: data goes out from a thread,
/// acknowledgements are read by another.
pub struct Connection {
    /// For shutting the socket down from the test.
    socket: TcpStream,
    /// The resume offset the server answered.
    pub resume: u64,
    /// The highest acknowledgement read so far.
    pub acked: Arc<AtomicU64>,
    sender: Option<JoinHandle<()>>,
    reader: Option<JoinHandle<()>>,
}

impl Connection {
    /// Connects and sends the header; `None` if the server closed the
    /// connection instead of answering a resume line.
    pub fn open(addr: SocketAddr, domain: &str, session: &str, offset: u64) -> Option<Connection> {
        let mut s = TcpStream::connect(addr).ok()?;
        s.set_read_timeout(Some(DEADLINE)).unwrap();
        s.write_all(header_for(domain, session, offset).as_bytes())
            .ok()?;
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut line = String::new();
        r.read_line(&mut line).ok()?;
        let resume = line
            .strip_prefix("streamgauge-resume ")?
            .trim()
            .parse()
            .ok()?;
        let acked = Arc::new(AtomicU64::new(resume));
        let seen = Arc::clone(&acked);
        let reader = std::thread::spawn(move || loop {
            let mut line = String::new();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if let Some(n) = line.strip_prefix("streamgauge-ack ") {
                seen.fetch_max(n.trim().parse().unwrap(), Ordering::SeqCst);
            }
        });
        Some(Connection {
            socket: s,
            resume,
            acked,
            sender: None,
            reader: Some(reader),
        })
    }

    /// [`Connection::open`] until the server answers (a sender reconnecting).
    pub fn open_retrying(addr: SocketAddr, domain: &str, session: &str, offset: u64) -> Connection {
        let end = Instant::now() + 2 * DEADLINE;
        loop {
            if let Some(c) = Connection::open(addr, domain, session, offset) {
                return c;
            }
            assert!(Instant::now() < end, "session {session}: never resumed");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Sends `bytes` from a thread, then half-closes.
    pub fn send(&mut self, bytes: Vec<u8>) {
        self.write(bytes, true);
    }

    /// Sends `bytes` from a thread; more may follow.
    pub fn send_part(&mut self, bytes: Vec<u8>) {
        self.write(bytes, false);
    }

    fn write(&mut self, bytes: Vec<u8>, last: bool) {
        if let Some(t) = self.sender.take() {
            let _ = t.join();
        }
        let mut s = self.socket.try_clone().unwrap();
        self.sender = Some(std::thread::spawn(move || {
            if s.write_all(&bytes).is_ok() && last {
                let _ = s.shutdown(Shutdown::Write);
            }
        }));
    }

    pub fn acked(&self) -> u64 {
        self.acked.load(Ordering::SeqCst)
    }

    /// Waits until everything up to `end` is acknowledged.
    pub fn wait_acked(&self, end: u64) {
        wait_for(&format!("ack {end}"), || self.acked() >= end);
        assert_eq!(self.acked(), end);
    }

    /// The path breaks: the socket is shut down both ways.
    pub fn cut(mut self) {
        let _ = self.socket.shutdown(Shutdown::Both);
        self.join();
    }

    fn join(&mut self) {
        for t in [self.sender.take(), self.reader.take()]
            .into_iter()
            .flatten()
        {
            let _ = t.join();
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        let _ = self.socket.shutdown(Shutdown::Both);
        self.join();
    }
}

/// `oml_seq` of every stored row, in storage order.
pub fn seqs(dir: &Path, domain: &str) -> Vec<i64> {
    let db = crate::common::open_db(dir, domain);
    let mut stmt = db
        .prepare("SELECT oml_seq FROM t_m ORDER BY oml_tuple_id")
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The offset stored for `session` (what a resume would answer).
pub fn stored_offset(dir: &Path, domain: &str, session: &str) -> u64 {
    let db = crate::common::open_db(dir, domain);
    db.query_row(
        "SELECT data_offset FROM _streamgauge_sessions WHERE session = ?1",
        [session],
        |r| r.get::<_, i64>(0),
    )
    .map_or(0, |o| o as u64)
}

/// A PostgreSQL cluster whose database `domain` lives in a tablespace on
/// a small tmpfs (the WAL does not), and the server options to reach it.
/// The cluster is stopped before the tmpfs is unmounted: its files are
/// on it (fields drop in order).
pub struct SmallTablespace {
    pub cluster: pgtemp::Cluster,
    pub fs: Tmpfs,
    pub opts: server::PgOptions,
}

impl SmallTablespace {
    /// Starts a cluster, mounts a tmpfs of `size` and creates `domain`
    /// in a tablespace on it (the server finds the database and uses it).
    pub fn create(size: &str, domain: &str) -> SmallTablespace {
        let cluster = pgtemp::Cluster::start().unwrap_or_else(|e| panic!("{e}"));
        cluster.watch_process(std::process::id()).unwrap();
        let fs = Tmpfs::mount(size);
        let ok = Command::new("chown")
            .args(["postgres:postgres"])
            .arg(fs.path())
            .status()
            .unwrap()
            .success();
        assert!(ok, "chown postgres {}", fs.path().display());
        let location = fs.path().display().to_string();
        cluster.psql(
            "postgres",
            &format!("CREATE TABLESPACE small OWNER oml LOCATION '{location}'"),
        );
        cluster.psql(
            "postgres",
            &format!("CREATE DATABASE \"{domain}\" OWNER oml TABLESPACE small"),
        );
        let opts = server::PgOptions {
            host: "127.0.0.1".into(),
            port: cluster.port,
            user: "oml".into(),
            ..server::PgOptions::default()
        };
        SmallTablespace { cluster, fs, opts }
    }

    /// Rows of `sql` in `domain`; none while the query fails (before the
    /// server created the table).
    pub fn rows<T>(&self, domain: &str, sql: &str, f: impl Fn(&postgres::Row) -> T) -> Vec<T> {
        self.cluster
            .client(domain)
            .query(sql, &[])
            .map(|rows| rows.iter().map(f).collect())
            .unwrap_or_default()
    }
}

/// The streamgauge proxy in front of `server`, journaling in a fresh
/// temporary directory (returned with it), retrying quickly.
pub async fn proxy_to(server: SocketAddr) -> (proxy::Proxy, tempfile::TempDir) {
    let journal = tempfile::tempdir().unwrap();
    let mut c = proxy::ProxyConfig::new(journal.path(), server.to_string());
    c.listen = vec!["127.0.0.1:0".parse().unwrap()];
    c.control = None;
    c.backoff = (Duration::from_millis(50), Duration::from_millis(500));
    (proxy::Proxy::start(c).await.unwrap(), journal)
}

/// `tests/c/flood.c` built against the reference's headers and library
/// (`prefix`) into `dir`.
pub fn flood(prefix: &Path, dir: &Path) -> PathBuf {
    let exe = dir.join("flood");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/flood.c");
    let out = Command::new("cc")
        .arg("-I")
        .arg(prefix.join("include"))
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(prefix.join("lib"))
        .args(["-loml2", "-locomm", "-lm"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cc {}: {}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// A running `flood` client; killed if the test ends before it does.
pub struct Flood(pub std::process::Child);

impl Flood {
    /// Starts `flood` (from [`flood`]) sending `n` rows as sender `s1` of
    /// `domain` to `uri` with a 1 MB buffer; it sends its first 5 000 rows
    /// and waits for [`Flood::go`]. The stock programs misbehave under the
    /// test harness's environment: a clean one, with the reference library.
    pub fn start(exe: &Path, prefix: &Path, cwd: &Path, n: i64, uri: &str, domain: &str) -> Flood {
        let child = Command::new(exe)
            .arg(n.to_string())
            .args([
                "--oml-collect",
                uri,
                "--oml-id",
                "s1",
                "--oml-domain",
                domain,
            ])
            .args(["--oml-text", "--oml-bufsize", "1000000"])
            .current_dir(cwd)
            .env_clear()
            .env("LD_LIBRARY_PATH", prefix.join("lib"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        Flood(child)
    }

    /// Lets it inject the rest of its rows and close.
    pub fn go(&mut self) {
        let mut go = self.0.stdin.take().unwrap();
        go.write_all(b"go\n").unwrap();
    }

    pub fn finished(&mut self) -> bool {
        self.0.try_wait().unwrap().is_some()
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What a stock sender may rely on across an outage (docs/storage.md,
/// "Senders without acknowledgements"), for `(i, s)` rows of `flood`
/// in storage order: the rows stored `before` it kept in front, no row
/// twice, every row intact.
pub fn assert_flood_rows(before: &[(i64, String)], stored: &[(i64, String)]) {
    assert_eq!(
        stored[..before.len()],
        before[..],
        "rows stored before the outage"
    );
    let mut seen = std::collections::HashSet::new();
    let pad = "x".repeat(200);
    for (i, s) in stored {
        assert!(seen.insert(*i), "row {i} stored twice");
        assert_eq!(*s, format!("{pad} {i}"), "row {i} damaged");
    }
}
