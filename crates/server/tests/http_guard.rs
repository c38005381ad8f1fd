//! The HTTP endpoints (`--http`) against hostile web pages and slow
//! clients: a foreign `Host` or `Origin` is refused (DNS rebinding), and
//! thousands of half-sent requests neither hold descriptors beyond the
//! header timeout nor keep measurement clients out.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{assert_good_stored, good_client, replay_async, start_with, wait_count};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_names_are_refused() {
    let t = start_with(|c| {
        c.http_listen = Some("127.0.0.1:0".parse().unwrap());
        c.http_allowed_hosts = vec!["collector.testbed".into()];
    })
    .await;
    let http = t.server.http_addr().unwrap();
    tokio::task::spawn_blocking(move || {
        httpkit::probe::assert_host_checks(
            http,
            "/api/v1/domains",
            "/control/lab/probe",
            r#"{"action":"pause"}"#,
            &["collector.testbed:8080"],
        );
    })
    .await
    .unwrap();
    t.server.shutdown().await;
}

/// Descriptors this process has open.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

const SLOW: usize = 2000;
const ROWS: i64 = 5000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_requests_do_not_starve_collection() {
    // Both ends of every connection live in this process.
    httpkit::raise_fd_limit().unwrap();
    let header_timeout = Duration::from_secs(2);
    let t = start_with(|c| {
        c.http_listen = Some("127.0.0.1:0".parse().unwrap());
        c.http_budget.header_timeout = header_timeout;
    })
    .await;
    let http = t.server.http_addr().unwrap();
    // Open the domain's database first, so that the baseline counts it.
    replay_async(t.addr, good_client("warm", 1)).await;
    assert_eq!(
        wait_count(
            t.dir.path(),
            "warm",
            "SELECT count(*) FROM app_m",
            1,
            Duration::from_secs(20)
        ),
        1
    );
    let baseline = open_fds();

    let started = Instant::now();
    let slow = tokio::task::spawn_blocking(move || {
        (0..SLOW)
            .map(|_| {
                let mut s = TcpStream::connect(http).unwrap();
                s.write_all(b"GET /api/v1/domains HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                    .unwrap();
                s
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    let opened = started.elapsed();
    let peak = open_fds();
    // A measurement client streams while they are all open.
    replay_async(t.addr, good_client("lab", ROWS)).await;
    let stored = wait_count(
        t.dir.path(),
        "lab",
        "SELECT count(*) FROM app_m",
        ROWS,
        Duration::from_secs(60),
    );
    assert_eq!(stored, ROWS, "rows lost while HTTP was under attack");
    assert_good_stored(t.dir.path(), "lab", ROWS);

    // Every slow connection is closed by the server: refused beyond the
    // cap at once, the rest after the header timeout.
    let closed_by = tokio::task::spawn_blocking(move || {
        let mut held_longest = Duration::ZERO;
        for mut s in slow {
            s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            let mut buf = [0u8; 512];
            loop {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => continue,
                }
            }
            held_longest = held_longest.max(started.elapsed());
        }
        held_longest
    })
    .await
    .unwrap();
    assert!(
        closed_by >= header_timeout
            && closed_by < header_timeout + opened + Duration::from_secs(10),
        "slow connections closed after {closed_by:?} (header timeout {header_timeout:?}, \
         opening them took {opened:?})"
    );

    // Descriptors back to where they were (a few may still be closing).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = open_fds();
        if now <= baseline + 8 {
            eprintln!(
                "{SLOW} half-sent requests opened in {opened:?}; descriptors {baseline} before, \
                 {peak} with them open, {now} after; all closed {closed_by:?} after the first"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{now} descriptors open, {baseline} before the attack"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    t.server.shutdown().await;
}
