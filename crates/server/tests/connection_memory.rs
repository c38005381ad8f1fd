//! What a connection costs the server in heap memory before it has sent
//! much: nothing is reserved ahead of the data. A counting global
//! allocator measures the bytes the server holds (live allocations) for
//! 200 connections that are idle, stopped inside their header, or stopped
//! 10 bytes into a binary packet that declares 100 MB.
//!
//! The clients are blocking std sockets, which allocate nothing, so the
//! live bytes that appear belong to the server. The scenarios share one
//! allocator counter, so they run one after the other in one test.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use omsp::{Content, Encoder, Header, Schema};

/// The system allocator, counting the bytes allocated and not yet freed.
/// (A global allocator is `unsafe` by definition; this one only forwards.)
struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);

#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const CONNECTIONS: usize = 200;
const KIB: i64 = 1024;

/// Live heap bytes once they have stopped changing (the server's tasks
/// have handled what arrived), within a deadline.
fn settled_live() -> i64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = LIVE.load(Ordering::Relaxed);
    let mut stable_since = Instant::now();
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        let now = LIVE.load(Ordering::Relaxed);
        if now != last {
            last = now;
            stable_since = Instant::now();
        } else if stable_since.elapsed() >= Duration::from_millis(300) {
            break;
        }
    }
    last
}

/// Polls `done` until it holds, or fails after 20 s.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Opens [`CONNECTIONS`] connections that each send `bytes` and then stay
/// silent; returns the server's live heap bytes per connection once it
/// has read everything.
fn cost_per_connection(addr: SocketAddr, metrics: &server::metrics::Metrics, bytes: &[u8]) -> i64 {
    let mut clients = Vec::with_capacity(CONNECTIONS);
    let accepted = metrics.connections_accepted.load(Ordering::Relaxed);
    let received = metrics.bytes_received.load(Ordering::Relaxed);
    let before = settled_live();
    for _ in 0..CONNECTIONS {
        let mut s = TcpStream::connect(addr).unwrap();
        if !bytes.is_empty() {
            s.write_all(bytes).unwrap();
        }
        clients.push(s);
    }
    let total = (bytes.len() * CONNECTIONS) as u64;
    wait_until("the server to accept and read every connection", || {
        metrics.connections_accepted.load(Ordering::Relaxed) >= accepted + CONNECTIONS as u64
            && metrics.bytes_received.load(Ordering::Relaxed) >= received + total
    });
    let after = settled_live();
    let open = metrics.open();
    drop(clients);
    wait_until("the connections to close", || {
        metrics.open() + CONNECTIONS as u64 <= open
    });
    (after - before) / CONNECTIONS as i64
}

/// A header for binary content (one schema), then the first 10 bytes of a
/// packet whose header declares a body of `declared` bytes.
fn binary_packet_start(declared: u32) -> Vec<u8> {
    let mut header = Header::new("memory", "sender", "app", 0, Content::Binary);
    header
        .schemas
        .push(Schema::parse("1 app_mp x:int32").unwrap());
    let mut out = Vec::new();
    Encoder::new(Content::Binary).header(&header, &mut out);
    out.extend_from_slice(&[0xAA, 0xAA, 0x02]);
    out.extend_from_slice(&declared.to_be_bytes());
    out.extend_from_slice(&[0u8; 10]);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_hold_memory_in_proportion_to_what_they_sent() {
    let t = common::start_with(|c| {
        // Declared packets up to 128 MiB are accepted as such, so the
        // 100 MB packet below is waited for, not refused.
        c.limits.max_packet = 128 << 20;
        c.max_connections_per_source = 4 * CONNECTIONS;
    })
    .await;
    let addr = t.addr;
    let metrics = std::sync::Arc::clone(t.server.metrics());
    let figures = tokio::task::spawn_blocking(move || {
        let idle = cost_per_connection(addr, &metrics, b"");
        let mid_header = cost_per_connection(
            addr,
            &metrics,
            b"protocol: 5\ndomain: memory\nsender-id: s1\napp-name: a",
        );
        let packet = cost_per_connection(addr, &metrics, &binary_packet_start(100_000_000));
        (idle, mid_header, packet)
    })
    .await
    .unwrap();
    let (idle, mid_header, packet) = figures;
    println!(
        "heap per connection: idle {idle} B, mid-header {mid_header} B, \
         10 bytes into a declared 100 MB packet {packet} B"
    );
    // Before, every accepted connection reserved a 64 KiB read buffer and
    // room for a 1024-row batch (about 130 KiB) before reading a byte.
    assert!(idle < 8 * KIB, "an idle connection holds {idle} bytes");
    assert!(
        mid_header < 8 * KIB,
        "a connection inside its header holds {mid_header} bytes"
    );
    assert!(
        packet < 16 * KIB,
        "10 bytes into a declared 100 MB packet a connection holds {packet} bytes"
    );
    t.server.shutdown().await;
}
