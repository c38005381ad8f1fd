//! Memory bounded in bytes, before authentication: endless
//! headers, floods of connections, thousands of domains and maximum-size
//! packets from many clients. Each test measures the server's resident
//! memory (this process: the server runs in it) and checks that a
//! well-behaved client's rows keep arriving meanwhile, every one stored.
//!
//! The tests take one lock each, so that one test's memory is not counted
//! in another's figure.

mod common;

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use omsp::{Content, Encoder, Header, Schema, Value};
use server::admission::Refused;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Resident memory of this process, in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status");
    kib * 1024
}

/// Threads of this process (writer threads end when their domain closes).
fn threads() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("Threads in /proc/self/status")
}

const MIB: u64 = 1 << 20;

/// Connects from `source` (any 127.0.0.0/8 address is loopback).
async fn connect_from(source: IpAddr, to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(source, 0)).unwrap();
    socket.connect(to).await.unwrap()
}

/// True once the server has closed `s` (EOF or reset) within `within`.
async fn closed_by_server(s: &mut TcpStream, within: Duration) -> bool {
    let mut byte = [0u8; 64];
    loop {
        match tokio::time::timeout(within, s.read(&mut byte)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
        }
    }
}

/// Writes `line` until the server stops reading (closes) or `cap` bytes
/// were written; returns the bytes written.
async fn flood(addr: SocketAddr, head: &[u8], line: impl Fn(u64) -> Vec<u8>, cap: u64) -> u64 {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(head).await.unwrap();
    let mut sent = head.len() as u64;
    let mut i = 0;
    while sent < cap {
        let mut chunk = Vec::with_capacity(64 * 1024);
        while chunk.len() < 60 * 1024 {
            chunk.extend_from_slice(&line(i));
            i += 1;
        }
        let write = tokio::time::timeout(Duration::from_secs(10), s.write_all(&chunk)).await;
        match write {
            Ok(Ok(())) => sent += chunk.len() as u64,
            Ok(Err(_)) => break,
            Err(_) => panic!("server neither read nor closed for 10 s after {sent} bytes"),
        }
    }
    sent
}

async fn good_rows_arrive(t: &common::TestServer, domain: &str, n: i64) {
    let mut s = TcpStream::connect(t.addr).await.unwrap();
    s.write_all(&common::good_client(domain, n)).await.unwrap();
    s.shutdown().await.unwrap();
    assert!(closed_by_server(&mut s, Duration::from_secs(30)).await);
    let dir = t.dir.path().to_owned();
    let domain = domain.to_owned();
    tokio::task::spawn_blocking(move || {
        common::wait_count(
            &dir,
            &domain,
            "SELECT count(*) FROM app_m",
            n,
            Duration::from_secs(10),
        );
        common::assert_good_stored(&dir, &domain, n);
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_header_is_cut_at_its_limits_while_others_store() {
    let _serial = SERIAL.lock().await;
    let t = common::start().await;
    let before = rss();
    let read = || t.server.metrics().bytes_received.load(Ordering::Relaxed);
    // 400 MB of extension keys were 550 MB of server memory before the bound.
    let keys = |i: u64| format!("x-key-{i}: value\n").into_bytes();
    let ((), sent) = tokio::join!(
        good_rows_arrive(&t, "good", 20_000),
        flood(t.addr, b"protocol: 5\ndomain: big\n", keys, 400 * MIB),
    );
    assert!(sent < 400 * MIB, "the server read 400 MB of header");
    assert!(
        read() < 2 * MIB + 20_000 * 64,
        "server read {} bytes",
        read()
    );
    // Known keys repeated are not kept, but the header still ends at its
    // size limit (4 MiB by default).
    let names = |_| b"app-name: again and again and again\n".to_vec();
    let at = read();
    let sent = flood(t.addr, b"protocol: 5\ndomain: big\n", names, 400 * MIB).await;
    assert!(sent < 400 * MIB);
    let taken = read() - at;
    assert!(
        taken <= (4 * MIB) + 128 * 1024,
        "read {taken} bytes of one header"
    );
    let grown = rss().saturating_sub(before);
    eprintln!(
        "endless headers: server read {taken} bytes of the second, RSS grew {} KiB",
        grown / 1024
    );
    assert!(grown < 64 * MIB, "RSS grew by {} MiB", grown / MIB);
    assert!(!t.dir.path().join("big.sq3").exists());
    t.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_a_header_stops_at_64_kib() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens");
    httpkit::secret::write_private(&file, "lab secret\n").unwrap();
    let t = common::start_with(|c| {
        c.auth = Some(server::config::AuthSettings {
            file,
            required: false,
        })
    })
    .await;
    let read = || t.server.metrics().bytes_received.load(Ordering::Relaxed);
    let names = |_| b"app-name: no token yet\n".to_vec();
    let sent = flood(t.addr, b"protocol: 5\ndomain: lab\n", names, 64 * MIB).await;
    assert!(sent < 64 * MIB);
    let limit = server::config::PRE_AUTH_HEADER as u64;
    assert!(
        read() <= limit + 64 * 1024,
        "read {} bytes before refusing",
        read()
    );
    // With the token early, a large header (here 1.5 MiB of schemas) is fine.
    let mut head = "protocol: 5\ndomain: lab\nx-streamgauge-auth: secret\n".to_owned();
    for i in 1..=3000 {
        let fields: Vec<String> = (0..16)
            .map(|j| format!("f{j}_with_a_long_name:int32"))
            .collect();
        head.push_str(&format!("schema: {i} big_{i} {}\n", fields.join(" ")));
    }
    head.push_str("content: text\n\n0.5\t3000\t0\t");
    head.push_str(&vec!["7"; 16].join("\t"));
    head.push('\n');
    assert!(head.len() > 1 << 20);
    let mut s = TcpStream::connect(t.addr).await.unwrap();
    s.write_all(head.as_bytes()).await.unwrap();
    s.shutdown().await.unwrap();
    assert!(closed_by_server(&mut s, Duration::from_secs(30)).await);
    t.server.shutdown().await;
    let db = common::open_db(t.dir.path(), "lab");
    let n: i64 = db
        .query_row("SELECT count(*) FROM big_3000", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_connections_from_one_source_do_not_starve_another() {
    let _serial = SERIAL.lock().await;
    const FLOOD: usize = 10_000;
    const PER_SOURCE: usize = 1000;
    let want = (FLOOD + PER_SOURCE + 500) as u64;
    let limit = rlimit::increase_nofile_limit(want).unwrap();
    assert!(limit >= want, "open-file limit {limit} < {want}");
    let t = common::start_with(|c| c.max_connections_per_source = PER_SOURCE).await;
    let before = rss();
    let hostile: IpAddr = "127.0.0.1".parse().unwrap();
    let mut held = Vec::with_capacity(FLOOD);
    for _ in 0..FLOOD {
        let mut s = connect_from(hostile, t.addr).await;
        // Half stop inside a header, as a slow hostile client would.
        let _ = s.write_all(b"protocol: 5\ndomain: flood\nx-").await;
        held.push(s);
    }
    let metrics = t.server.metrics();
    let refused = || metrics.refused_count(Refused::PerSource);
    let deadline = Instant::now() + Duration::from_secs(30);
    while refused() < (FLOOD - PER_SOURCE) as u64 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(refused(), (FLOOD - PER_SOURCE) as u64);
    assert_eq!(
        metrics.connections_accepted.load(Ordering::Relaxed),
        PER_SOURCE as u64
    );
    // Another source is served, every row stored, while the flood holds on.
    let mut good = connect_from("127.0.0.2".parse().unwrap(), t.addr).await;
    good.write_all(&common::good_client("good", 20_000))
        .await
        .unwrap();
    good.shutdown().await.unwrap();
    assert!(closed_by_server(&mut good, Duration::from_secs(30)).await);
    let grown = rss().saturating_sub(before);
    eprintln!(
        "{FLOOD} connections, {PER_SOURCE} admitted: RSS grew {} KiB ({} KiB per admitted connection)",
        grown / 1024,
        grown / 1024 / PER_SOURCE as u64
    );
    assert!(grown < 160 * MIB, "RSS grew by {} MiB", grown / MIB);
    drop(held);
    t.server.shutdown().await;
    common::assert_good_stored(t.dir.path(), "good", 20_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_domains_are_limited_and_closed_writers_released() {
    let _serial = SERIAL.lock().await;
    const DOMAINS: usize = 2000;
    const MAX: usize = 200;
    let limit = rlimit::increase_nofile_limit(3 * DOMAINS as u64 + 200).unwrap();
    assert!(limit >= 3 * DOMAINS as u64);
    let t = common::start_with(|c| c.max_domains = MAX).await;
    let threads_before = threads();
    let mut held = Vec::with_capacity(DOMAINS);
    for i in 0..DOMAINS {
        let mut s = TcpStream::connect(t.addr).await.unwrap();
        let head = common::text_header(&format!("d{i}"), "s", 1000, &["1 app_m x:int64"]);
        s.write_all(head.as_bytes()).await.unwrap();
        held.push(s);
    }
    // Exactly MAX domains open; the others' clients are closed with a
    // clear error in the log and nothing created.
    // Every connection is watched at once for a second (one after the
    // other, the 200 admitted ones alone took 40 s at 200 ms each).
    let mut checks = tokio::task::JoinSet::new();
    for mut s in held.drain(..) {
        checks.spawn(async move {
            let closed = closed_by_server(&mut s, Duration::from_secs(1)).await;
            (s, closed)
        });
    }
    let mut refused = 0;
    while let Some(checked) = checks.join_next().await {
        let (s, closed) = checked.unwrap();
        refused += usize::from(closed);
        held.push(s);
    }
    assert_eq!(refused, DOMAINS - MAX);
    let created = (0..DOMAINS)
        .filter(|i| t.dir.path().join(format!("d{i}.sq3")).exists())
        .count();
    assert_eq!(created, MAX);
    assert_eq!(t.server.writer_threads(), MAX);
    drop(held);
    // Every writer ends once its clients have left; new domains open again.
    let deadline = Instant::now() + Duration::from_secs(30);
    while t.server.writer_threads() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(t.server.writer_threads(), 0, "writers left running");
    assert!(threads() < threads_before + 16, "threads not released");
    good_rows_arrive(&t, "after", 1000).await;
    t.server.shutdown().await;
}

/// A binary client sending `n` blobs of `size` bytes in `domain`.
fn blob_client(domain: &str, sender: &str, n: u32, size: usize) -> Vec<u8> {
    let mut h = Header::new(domain, sender, "t", 1000, Content::Binary);
    h.schemas
        .push(Schema::parse("1 big b:blob n:int32").unwrap());
    let mut enc = Encoder::new(Content::Binary);
    let mut out = Vec::new();
    enc.header(&h, &mut out);
    for i in 0..n {
        let values = [Value::Blob(vec![i as u8; size]), Value::Int32(i as i32)];
        enc.tuple(
            &mut out,
            1,
            i64::from(i) + 1,
            0.5,
            values.iter().map(Value::as_value_ref),
        )
        .unwrap();
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maximum_size_packets_from_many_clients_stay_within_the_byte_bounds() {
    let _serial = SERIAL.lock().await;
    const CLIENTS: usize = 6;
    const BLOBS: u32 = 12;
    const SIZE: usize = 8 << 20;
    let t = common::start().await;
    let before = rss();
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let sampler = {
        let peak = std::sync::Arc::clone(&peak);
        tokio::spawn(async move {
            loop {
                peak.fetch_max(rss(), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    let mut clients = Vec::new();
    for c in 0..CLIENTS {
        let bytes = blob_client("blobs", &format!("c{c}"), BLOBS, SIZE);
        let addr = t.addr;
        clients.push(tokio::spawn(async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(&bytes).await.unwrap();
            s.shutdown().await.unwrap();
            let mut rest = Vec::new();
            let _ = s.read_to_end(&mut rest).await;
        }));
    }
    good_rows_arrive(&t, "good", 20_000).await;
    for c in clients {
        c.await.unwrap();
    }
    sampler.abort();
    t.server.shutdown().await;
    let db = common::open_db(t.dir.path(), "blobs");
    let (n, bytes): (i64, i64) = db
        .query_row("SELECT count(*), sum(length(b)) FROM big", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(n, (CLIENTS as u32 * BLOBS) as i64);
    assert_eq!(bytes, n * SIZE as i64);
    // The clients' own encoded copies (6 × 96 MiB) are counted too.
    let clients_own = (CLIENTS as u64) * u64::from(BLOBS) * SIZE as u64;
    let grown = peak.load(Ordering::Relaxed).saturating_sub(before);
    eprintln!(
        "{CLIENTS} clients × {BLOBS} × {} MiB blobs: peak RSS {} MiB above the start, of which {} MiB are the clients' own buffers",
        SIZE >> 20,
        grown / MIB,
        clients_own / MIB
    );
    assert!(
        grown < clients_own + 256 * MIB,
        "server held {} MiB beyond the clients' buffers",
        grown.saturating_sub(clients_own) / MIB
    );
}
