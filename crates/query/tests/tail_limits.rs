//! What live tails hold is given back when their clients go away, and how
//! many may be open at once is capped.
//!
//! The server runs in this process, so its descriptors and threads are
//! this process's: `/proc/self/fd` and `/proc/self/task`.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;

/// Opens `path` on a plain socket and reads the response head; returns
/// the socket (the stream goes on) and the head.
fn open(srv: &Server, path: &str) -> (TcpStream, String) {
    let addr = srv.base.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut b).unwrap(), 1, "closed before the head");
        head.push(b[0]);
    }
    (s, String::from_utf8(head).unwrap())
}

/// Held by each test: they count the process's descriptors and threads,
/// which another test's server running alongside would move.
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ALONE.lock().unwrap_or_else(|p| p.into_inner())
}

fn count(dir: &str) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

/// Polls `cond` until it holds or `limit` passes; the time it took.
fn within(limit: Duration, mut cond: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    loop {
        if cond() {
            return Some(start.elapsed());
        }
        if start.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// 300 tails, 200 of them with a filter no row matches (each its own
/// shared reader and connections, never anything to send), then every
/// client closes: the heartbeat notices, and the descriptors and threads
/// come back to what they were before.
#[test]
fn abandoned_tails_give_back_descriptors_and_threads() {
    let _alone = alone();
    let (dir, db) = sqlite("lab1");
    let mut state = sqlite_state(dir.path());
    state.max_tails = 1000;
    let srv = Server::start(state);
    // A first request, so that what the server keeps for good is in the
    // baseline.
    assert_eq!(srv.json("/api/v1/domains").0, 200);
    let (fds0, threads0) = (count("/proc/self/fd"), count("/proc/self/task"));
    let mut clients = Vec::new();
    for k in 0..300 {
        let path = if k < 200 {
            format!(
                "/api/v1/domains/lab1/streams/m_all/tail?where=i32%3E{}",
                1_000_000 + k
            )
        } else {
            "/api/v1/domains/lab1/streams/m_all/tail?fields=i32".to_owned()
        };
        let (s, head) = open(&srv, &path);
        assert!(head.starts_with("HTTP/1.1 200"), "tail {k}: {head}");
        clients.push(s);
    }
    // Every tail holds its connections (200 distinct readers and 300
    // tails on SQLite: well over 500 descriptors beyond our 300 sockets).
    let held = within(Duration::from_secs(10), || {
        count("/proc/self/fd") >= fds0 + 300 + 500
    });
    let (fds1, threads1) = (count("/proc/self/fd"), count("/proc/self/task"));
    assert!(held.is_some(), "tails hold {} descriptors", fds1 - fds0);
    // SQLite keeps the descriptor of a closed connection (to reuse it)
    // while another connection of the process holds a lock on the file,
    // as the writer does for as long as it is open; with the writer
    // closed, every connection a tail closes gives its descriptor back.
    drop(db);
    drop(clients);
    let closed = Instant::now();
    let fds = within(Duration::from_secs(5), || count("/proc/self/fd") <= fds0);
    let fds2 = count("/proc/self/fd");
    // Threads of the blocking pool idle out after tokio's keep-alive of
    // 10 s; nothing holds them longer.
    let threads = within(Duration::from_secs(15), || {
        count("/proc/self/task") <= threads0 + 2
    });
    eprintln!(
        "descriptors: {fds0} before, {fds1} with 300 tails, {fds2} {fds:?} after the \
         clients closed; threads: {threads0} before, {threads1} with tails, {} {:?} after",
        count("/proc/self/task"),
        closed.elapsed()
    );
    assert!(
        fds.is_some(),
        "descriptors: {fds0} before, {fds2} 5 s after closing"
    );
    assert!(
        threads.is_some(),
        "threads: {threads0} before, {} 15 s after closing",
        count("/proc/self/task")
    );
}

/// Beyond `max_tails`, 503 with `Retry-After`; a slot comes back when a
/// client goes away.
#[test]
fn tails_beyond_the_cap_are_refused_until_one_ends() {
    let _alone = alone();
    let (dir, _db) = sqlite("lab1");
    let mut state = sqlite_state(dir.path());
    state.max_tails = 2;
    let srv = Server::start(state);
    let path = "/api/v1/domains/lab1/streams/m_all/tail";
    let (a, head) = open(&srv, path);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let (_b, head) = open(&srv, &format!("{path}?where=i32%3E5"));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let (s, v) = srv.json(path);
    assert_eq!(s, 503, "{v}");
    assert_eq!(v["error"]["code"], "too_many_tails", "{v}");
    assert_eq!(v["error"]["details"]["max_tails"], 2, "{v}");
    let (_c, head) = open(&srv, path);
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    assert!(
        head.to_ascii_lowercase().contains("\r\nretry-after: 2\r\n"),
        "{head}"
    );
    // Queries other than tails are not counted.
    assert_eq!(srv.json("/api/v1/domains").0, 200);
    drop(a);
    let again = within(Duration::from_secs(10), || {
        open(&srv, path).1.starts_with("HTTP/1.1 200")
    });
    assert!(again.is_some(), "no tail admitted 10 s after one closed");
    eprintln!("a slot came back {again:?} after its client closed");
}

/// An idle tail writes a comment line every second: what finds out a
/// client that vanished without closing its connection.
#[test]
fn idle_tails_send_a_heartbeat_every_second() {
    let _alone = alone();
    let (dir, _db) = sqlite("lab1");
    let srv = Server::start(sqlite_state(dir.path()));
    let (mut s, head) = open(
        &srv,
        "/api/v1/domains/lab1/streams/m_all/tail?where=i32%3E1000000",
    );
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let start = Instant::now();
    let mut body = Vec::new();
    let mut buf = [0u8; 256];
    // Chunked: each heartbeat is a chunk holding ":\n".
    while body.windows(4).filter(|w| w == b":\n\r\n").count() < 2 {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "stream closed");
        body.extend_from_slice(&buf[..n]);
        assert!(start.elapsed() < Duration::from_secs(10), "{body:?}");
    }
    let took = start.elapsed();
    assert!(
        took < Duration::from_secs(4),
        "two heartbeats took {took:?}"
    );
}
