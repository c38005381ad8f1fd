//! OMSP connections are accepted, and their headers read, on threads of
//! their own at a lower priority (`header_nice`), and move to the
//! collection runtime once the header is complete: a flood of clients
//! that never finish a header takes the cores only when collection leaves
//! them idle. Checked on the threads the kernel reports, and on what a
//! client that moved stores: every row, whether its header came in one
//! piece with its rows, byte by byte, or just before it closed.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use common::{assert_good_stored, good_client, start_with, thread_fields, wait_count};

const ROWS: i64 = 2_000;

async fn stored(dir: std::path::PathBuf, domain: &'static str) {
    let n = tokio::task::spawn_blocking(move || {
        let n = wait_count(
            &dir,
            domain,
            "SELECT count(*) FROM app_m",
            ROWS,
            Duration::from_secs(20),
        );
        assert_eq!(n, ROWS, "{domain}");
        assert_good_stored(&dir, domain, ROWS);
        n
    })
    .await
    .unwrap();
    assert_eq!(n, ROWS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_are_read_at_low_priority_and_sessions_move_to_collection() {
    let ts = start_with(|c| c.header_nice = 7).await;
    // The runtime's threads start (and set their nice value) on their own
    // schedule: poll until they are there with it, within a deadline.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let nices = loop {
        let nices = thread_fields("sg-accept", 19);
        if !nices.is_empty() && nices.iter().all(|&n| n == 7) {
            break nices;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "sg-accept threads at nice 7 within 10 s: found {nices:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(nices.iter().all(|&n| n == 7), "{nices:?}");
    // Scheduling policy (field 41): SCHED_OTHER (0) below 19.
    assert!(thread_fields("sg-accept", 41).iter().all(|&p| p == 0));
    // The collection runtime (this test's) keeps 0.
    assert_eq!(server::http_runtime::current_nice(), 0);

    let addr = ts.addr;
    let dir = ts.dir.path().to_owned();
    let clients = tokio::task::spawn_blocking(move || {
        // Header and rows in one write, the connection kept open.
        let mut whole = TcpStream::connect(addr).unwrap();
        whole.write_all(&good_client("whole", ROWS)).unwrap();
        // The header a byte at a time, then the rows.
        let bytes = good_client("bytewise", ROWS);
        let end = bytes.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
        let mut slow = TcpStream::connect(addr).unwrap();
        slow.set_nodelay(true).unwrap();
        for b in &bytes[..end] {
            slow.write_all(std::slice::from_ref(b)).unwrap();
        }
        slow.write_all(&bytes[end..]).unwrap();
        // Everything at once, then closed at once.
        let mut closing = TcpStream::connect(addr).unwrap();
        closing.write_all(&good_client("closing", ROWS)).unwrap();
        drop(closing);
        (whole, slow)
    })
    .await
    .unwrap();
    for domain in ["whole", "bytewise", "closing"] {
        stored(dir.clone(), domain).await;
    }
    drop(clients);
    ts.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_header_nice_0_connections_are_served_where_they_are_accepted() {
    let ts = start_with(|c| c.header_nice = 0).await;
    let addr = ts.addr;
    tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&good_client("inplace", ROWS)).unwrap();
    })
    .await
    .unwrap();
    stored(ts.dir.path().to_owned(), "inplace").await;
    ts.server.shutdown().await;
}
