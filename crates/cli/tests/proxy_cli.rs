//! The real `streamgauge proxy` binary in front of a real collection
//! server: SIGKILL of the proxy (and a server restart) in the middle of
//! the streams loses and duplicates nothing; standard-input commands and
//! `streamgauge proxy ctl` pause and resume forwarding.
//!
//! `PROXY_TEST_LOG=FILE` keeps the proxies' debug logs.
//! `PROXY_TEST_SAMPLES` (default 40000) sets the samples per client of the
//! SIGKILL test; `PROXY_TEST_CLIENTS` (default 3) the number of resumable
//! clients.

#![cfg(unix)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SCHEMA: &str = "1 t_m i:int32 s:string";

fn free_addr() -> SocketAddr {
    testkit::free_addr()
}

fn env_num(name: &str, default: i64) -> i64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A collection server on its own runtime.
struct Upstream {
    rt: tokio::runtime::Runtime,
    server: Option<server::Server>,
}

impl Upstream {
    fn start(addr: SocketAddr, dir: &Path) -> Upstream {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let mut config = server::ServerConfig::new(dir);
        config.listen = vec![addr];
        let server = rt.block_on(server::Server::start(config)).unwrap();
        Upstream {
            rt,
            server: Some(server),
        }
    }

    fn stop(mut self) {
        if let Some(s) = self.server.take() {
            self.rt.block_on(s.shutdown());
        }
    }
}

/// A proxy child process, killed when dropped (a failing test leaves no
/// process behind).
struct ProxyChild(Child);

impl Drop for ProxyChild {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl std::ops::Deref for ProxyChild {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for ProxyChild {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

fn spawn_proxy(
    listen: SocketAddr,
    upstream: SocketAddr,
    journal: &Path,
    extra: &[&str],
) -> ProxyChild {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_streamgauge"));
    cmd.args([
        "proxy",
        "-l",
        &listen.port().to_string(),
        "--bind",
        "127.0.0.1",
    ])
    .args(["--upstream", &upstream.to_string(), "--proxy-id", "ptest"])
    .arg("--journal")
    .arg(journal)
    .args(extra)
    .args(match std::env::var("PROXY_TEST_LOG") {
        Ok(f) => vec!["--logfile".to_owned(), f, "-d".to_owned(), "1".to_owned()],
        Err(_) => vec![],
    })
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    let child = ProxyChild(cmd.spawn().unwrap());
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(listen).is_err() {
        assert!(Instant::now() < deadline, "proxy did not start listening");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn header(domain: &str, sender: &str, extra: &str) -> String {
    format!(
        "protocol: 5\ndomain: {domain}\nstart-time: 1700000000\nsender-id: {sender}\napp-name: t\nschema: {SCHEMA}\n{extra}content: text\n\n"
    )
}

fn tuples(from: i64, to: i64) -> Vec<u8> {
    (from..to)
        .flat_map(|i| format!("0.5\t1\t{i}\t{i}\tvalue {i}\n").into_bytes())
        .collect()
}

fn stock_send(addr: SocketAddr, domain: &str, sender: &str, data: &[u8]) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(header(domain, sender, "").as_bytes()).unwrap();
    s.write_all(data).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut back = Vec::new();
    let _ = s.read_to_end(&mut back);
    assert!(back.is_empty());
}

/// A minimal spec §3.6 sender: keeps everything not acknowledged,
/// reconnects after any failure and resumes where the proxy says.
fn resumable_send(
    addr: SocketAddr,
    domain: &str,
    sender: &str,
    data: &[u8],
    within: Duration,
) -> u32 {
    let session = format!("cli-{sender}-{}", std::process::id());
    let total = data.len() as u64;
    let mut acked = 0u64;
    let mut connections = 0;
    let deadline = Instant::now() + within;
    loop {
        assert!(
            Instant::now() < deadline,
            "{sender}: gave up at ack {acked} of {total}"
        );
        let Ok(mut s) = TcpStream::connect(addr) else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        connections += 1;
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let extra = format!(
            "x-streamgauge-session: {session}\nx-streamgauge-offset: {acked}\nx-streamgauge-backchannel: 1\n"
        );
        if s.write_all(header(domain, sender, &extra).as_bytes())
            .is_err()
        {
            continue;
        }
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            continue;
        }
        let resume: u64 = line
            .strip_prefix("streamgauge-resume ")
            .unwrap_or_else(|| panic!("want a resume line, got {line:?}"))
            .trim()
            .parse()
            .unwrap();
        assert!(
            resume >= acked,
            "resume {resume} below the proxy's own ack {acked}"
        );
        // Everything before the resume offset is safe with the proxy.
        acked = resume;
        let shared = Arc::new(AtomicU64::new(acked));
        let reader = {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || {
                let mut line = String::new();
                loop {
                    line.clear();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if let Some(a) = line.strip_prefix("streamgauge-ack ") {
                        let a: u64 = a.trim().parse().unwrap();
                        shared.fetch_max(a, Ordering::SeqCst);
                        if a >= total {
                            return;
                        }
                    }
                }
            })
        };
        let mut at = resume as usize;
        let mut ok = true;
        while at < data.len() {
            let end = (at + (32 << 10)).min(data.len());
            if s.write_all(&data[at..end]).is_err() {
                ok = false;
                break;
            }
            at = end;
            std::thread::sleep(Duration::from_millis(2));
        }
        if ok {
            let _ = s.shutdown(std::net::Shutdown::Write);
        }
        let _ = reader.join();
        acked = shared.load(Ordering::SeqCst);
        if acked >= total {
            return connections;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn seqs(dir: &Path, domain: &str, sender: &str) -> Vec<i64> {
    let Ok(db) = rusqlite::Connection::open_with_flags(
        dir.join(format!("{domain}.sq3")),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    ) else {
        return Vec::new();
    };
    let Ok(mut stmt) = db.prepare(
        "SELECT t.oml_seq FROM t_m t JOIN _senders s ON s.id = t.oml_sender_id WHERE s.name = ?1",
    ) else {
        return Vec::new();
    };
    stmt.query_map([sender], |r| r.get(0))
        .map(|rows| rows.filter_map(Result::ok).collect())
        .unwrap_or_default()
}

fn wait_exactly(dir: &Path, domain: &str, sender: &str, n: i64, within: Duration) {
    let deadline = Instant::now() + within;
    let mut got;
    loop {
        got = seqs(dir, domain, sender);
        if got.len() >= n as usize || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let rows = got.len();
    got.sort_unstable();
    got.dedup();
    assert!(
        rows == n as usize
            && got.len() == n as usize
            && got.first() == Some(&0)
            && got.last() == Some(&(n - 1)),
        "{sender}: {rows} rows, {} distinct, want exactly 0..{n}",
        got.len()
    );
}

#[test]
fn sigkill_of_the_proxy_and_a_server_restart_lose_and_duplicate_nothing() {
    let n = env_num("PROXY_TEST_SAMPLES", 40_000);
    let clients = env_num("PROXY_TEST_CLIENTS", 3);
    let db = tempfile::tempdir().unwrap();
    let journal = tempfile::tempdir().unwrap();
    let up = free_addr();
    let listen = free_addr();
    let mut upstream = Some(Upstream::start(up, db.path()));
    let mut proxy = spawn_proxy(listen, up, journal.path(), &["--control", "none"]);
    let started = Instant::now();
    let senders: Vec<_> = (0..clients)
        .map(|c| {
            std::thread::spawn(move || {
                let data = tuples(0, n);
                resumable_send(
                    listen,
                    "kill",
                    &format!("r{c}"),
                    &data,
                    Duration::from_secs(600),
                )
            })
        })
        .collect();
    stock_send(listen, "kill", "stock", &tuples(0, 5000));
    // SIGKILL the proxy at spread-out moments while the clients send; in
    // round 1 the upstream is down while the proxy restarts.
    // Longer runs spread the kills over more time.
    let scale = (n as u64 / 100_000).max(1);
    let mut round = 0;
    while !senders.iter().all(|s| s.is_finished()) && round < 6 {
        std::thread::sleep(Duration::from_millis((150 + 170 * (round % 3)) * scale));
        proxy.kill().unwrap();
        proxy.wait().unwrap();
        if round == 1 {
            upstream.take().unwrap().stop();
        }
        proxy = spawn_proxy(listen, up, journal.path(), &["--control", "none"]);
        if round == 1 {
            std::thread::sleep(Duration::from_millis(400));
            upstream = Some(Upstream::start(up, db.path()));
        }
        round += 1;
    }
    assert!(
        round >= 2,
        "the clients finished before the proxy was killed twice: raise PROXY_TEST_SAMPLES"
    );
    for s in senders {
        s.join().unwrap();
    }
    for c in 0..clients {
        wait_exactly(
            db.path(),
            "kill",
            &format!("r{c}"),
            n,
            Duration::from_secs(120),
        );
    }
    wait_exactly(db.path(), "kill", "stock", 5000, Duration::from_secs(30));
    eprintln!(
        "{clients} clients x {n} samples, {round} proxy SIGKILLs, one server restart: exact in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    proxy.kill().unwrap();
    let _ = proxy.wait();
    upstream.unwrap().stop();
}

#[test]
fn stdin_commands_and_proxy_ctl_pause_and_resume() {
    let db = tempfile::tempdir().unwrap();
    let journal = tempfile::tempdir().unwrap();
    let up = free_addr();
    let listen = free_addr();
    let control = free_addr();
    let upstream = Upstream::start(up, db.path());
    let mut proxy = spawn_proxy(
        listen,
        up,
        journal.path(),
        &["--forward", "manual", "--control", &control.to_string()],
    );
    let mut stdin = proxy.stdin.take().unwrap();
    let mut stdout = BufReader::new(proxy.stdout.take().unwrap()).lines();
    let ctl = |action: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
            .args(["proxy", "ctl", action, "--control", &control.to_string()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };

    stock_send(listen, "ctl", "a", &tuples(0, 2000));
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        seqs(db.path(), "ctl", "a").is_empty(),
        "manual mode starts paused"
    );
    let status = ctl("status");
    assert_eq!(status["paused"], true);
    assert_eq!(status["sessions"].as_array().unwrap().len(), 1);

    stdin.write_all(b"OMLPROXY-RESUME\n").unwrap();
    assert_eq!(
        stdout.next().unwrap().unwrap(),
        "Received command: OMLPROXY-RESUME"
    );
    wait_exactly(db.path(), "ctl", "a", 2000, Duration::from_secs(20));

    stdin.write_all(b"OMLPROXY-PAUSE\n").unwrap();
    assert_eq!(
        stdout.next().unwrap().unwrap(),
        "Received command: OMLPROXY-PAUSE"
    );
    stock_send(listen, "ctl", "b", &tuples(0, 2000));
    std::thread::sleep(Duration::from_millis(500));
    assert!(seqs(db.path(), "ctl", "b").is_empty(), "paused by stdin");
    assert_eq!(ctl("resume")["paused"], false);
    wait_exactly(db.path(), "ctl", "b", 2000, Duration::from_secs(20));
    assert_eq!(ctl("pause")["paused"], true);

    // A wrong endpoint gives an error that says what to do.
    let out = Command::new(env!("CARGO_BIN_EXE_streamgauge"))
        .args([
            "proxy",
            "ctl",
            "status",
            "--control",
            &free_addr().to_string(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is `streamgauge proxy` running"));

    sigterm(&mut proxy);
    upstream.stop();
}

/// Stops the proxy with SIGTERM (clean shutdown) through the `kill` command.
fn sigterm(child: &mut ProxyChild) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "proxy did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}
