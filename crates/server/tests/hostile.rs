//! Hostile, broken and slow clients: whatever one client sends, the server
//! keeps serving, and other clients' rows arrive intact (exact counts and
//! values).

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::noise;
use common::reference::{alltypes_fixes, assert_matches, sqlite_u64};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends `bytes` (in `chunk`-byte writes, `pause` apart), half-closes and
/// waits for the server to close. A server that closes first (a refused
/// client) is not an error.
async fn send(addr: SocketAddr, bytes: Vec<u8>, chunk: usize, pause: Duration) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    for part in bytes.chunks(chunk) {
        if s.write_all(part).await.is_err() {
            return;
        }
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
    }
    let _ = s.shutdown().await;
    let mut sink = Vec::new();
    let _ = s.read_to_end(&mut sink).await;
}

async fn send_all(addr: SocketAddr, bytes: Vec<u8>) {
    send(addr, bytes, usize::MAX, Duration::ZERO).await;
}

/// The reference binary capture split into its header and its frames.
fn capture() -> (Vec<u8>, Vec<Vec<u8>>) {
    let raw = common::vector("0001-ref-alltypes.bin", "ref-alltypes.bin");
    let end = raw.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
    let mut frames = Vec::new();
    let mut at = end;
    while at < raw.len() {
        assert_eq!(&raw[at..at + 2], [0xAA, 0xAA], "frame at {at}");
        let (head, len) = match raw[at + 2] {
            0x01 => (5, u16::from_be_bytes([raw[at + 3], raw[at + 4]]) as usize),
            0x02 => (
                7,
                u32::from_be_bytes(raw[at + 3..at + 7].try_into().unwrap()) as usize,
            ),
            t => panic!("frame type {t}"),
        };
        frames.push(raw[at..at + head + len].to_vec());
        at += head + len;
    }
    (raw[..end].to_vec(), frames)
}

fn assert_capture_stored(dir: &Path) {
    let expected = common::vector_json("0001-ref-alltypes.rows.json", "ref-alltypes.rows.json");
    let expected = expected["vecdomain"].as_object().unwrap().clone();
    let got = common::dump(&common::open_db(dir, "vecdomain"));
    assert_matches(expected, &got, &alltypes_fixes(sqlite_u64), |_, want| {
        want["column_types"].clone()
    });
}

/// A well-behaved client: rows `x` = 0..n, `s` = "v<x>" into `domain`.
/// Rows in every `vec_*` table of a database.
fn vec_rows(dir: &Path, domain: &str) -> i64 {
    let db = common::open_db(dir, domain);
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'vec_%'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(tables.len(), 7, "{tables:?}");
    tables
        .iter()
        .map(|t| {
            db.query_row(&format!("SELECT count(*) FROM \"{t}\""), [], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap()
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mebibyte_of_noise_with_and_without_a_header() {
    let t = common::start().await;
    let (header, _) = capture();
    let header = String::from_utf8(header)
        .unwrap()
        .replace("domain: vecdomain", "domain: noise");
    let after_header = [header.into_bytes(), noise(1 << 20, 0x5eed)].concat();
    let no_header = noise(1 << 20, 0xbad);
    tokio::join!(
        send_all(t.addr, after_header),
        send_all(t.addr, no_header),
        send_all(t.addr, common::good_client("good", 3000)),
    );
    // Still serving afterwards.
    send_all(
        t.addr,
        common::vector("0001-ref-alltypes.bin", "ref-alltypes.bin"),
    )
    .await;
    t.server.shutdown().await;
    common::assert_good_stored(t.dir.path(), "good", 3000);
    assert_capture_stored(t.dir.path());
    assert_eq!(vec_rows(t.dir.path(), "noise"), 0);
    let files: Vec<_> = std::fs::read_dir(t.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sq3"))
        .collect();
    assert_eq!(files.len(), 3, "{files:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_sending_one_byte_at_a_time_loses_nothing() {
    let t = common::start().await;
    let raw = common::vector("0001-ref-alltypes.bin", "ref-alltypes.bin");
    let started = std::time::Instant::now();
    tokio::join!(
        send(t.addr, raw, 1, Duration::from_millis(1)),
        send_all(t.addr, common::good_client("good", 500)),
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    t.server.shutdown().await;
    assert_capture_stored(t.dir.path());
    common::assert_good_stored(t.dir.path(), "good", 500);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_idle_connections_do_not_block_others() {
    const IDLE: usize = 1000;
    // Both ends of every connection live in this process, plus the
    // databases and the other tests of this binary.
    let want = 3 * IDLE as u64;
    let limit = rlimit::increase_nofile_limit(want).unwrap();
    assert!(limit >= want, "open-file limit {limit} < {want}");
    let t = common::start().await;
    let mut idle = Vec::with_capacity(IDLE);
    for i in 0..IDLE {
        let mut s = TcpStream::connect(t.addr).await.unwrap();
        // Some say nothing, some stop inside the header.
        if i % 2 == 1 {
            s.write_all(b"protocol: 5\ndomain: idle\nsender-")
                .await
                .unwrap();
        }
        idle.push(s);
    }
    let accepted = || {
        t.server
            .metrics()
            .connections_accepted
            .load(Ordering::Relaxed)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while accepted() < IDLE as u64 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(accepted(), IDLE as u64);
    send_all(t.addr, common::good_client("busy", 2000)).await;
    let dir = t.dir.path().to_owned();
    let seen = tokio::task::spawn_blocking(move || {
        common::wait_count(
            &dir,
            "busy",
            "SELECT count(*) FROM app_m",
            2000,
            Duration::from_secs(5),
        )
    })
    .await
    .unwrap();
    assert_eq!(seen, 2000, "rows visible while {IDLE} clients idle");
    // The idle ones are all still connected: nothing to read, no EOF.
    let mut byte = [0u8; 1];
    for s in &mut idle {
        assert!(tokio::time::timeout(Duration::ZERO, s.read(&mut byte))
            .await
            .is_err());
    }
    drop(idle);
    t.server.shutdown().await;
    common::assert_good_stored(t.dir.path(), "busy", 2000);
    assert!(!t.dir.path().join("idle.sq3").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_declaring_four_gibibytes_is_skipped() {
    let t = common::start().await;
    let (header, frames) = capture();
    let mut bytes = header;
    bytes.extend_from_slice(&[0xAA, 0xAA, 0x02, 0xFF, 0xFF, 0xFF, 0xFF]);
    bytes.extend(frames.concat());
    tokio::join!(
        send_all(t.addr, bytes),
        send_all(t.addr, common::good_client("good", 1000)),
    );
    t.server.shutdown().await;
    assert_capture_stored(t.dir.path());
    common::assert_good_stored(t.dir.path(), "good", 1000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_between_frames_is_skipped() {
    let t = common::start().await;
    let (header, frames) = capture();
    let mut bytes = header;
    for (i, frame) in frames.iter().enumerate() {
        // Runs of 1..=300 bytes that hold no sync byte.
        let run: Vec<u8> = noise(1 + (i * 37) % 300, i as u64 + 1)
            .into_iter()
            .map(|b| if b == 0xAA { 0x55 } else { b })
            .collect();
        bytes.extend(run);
        bytes.extend_from_slice(frame);
    }
    bytes.extend_from_slice(b"trailing garbage");
    tokio::join!(
        send_all(t.addr, bytes),
        send_all(t.addr, common::good_client("good", 1000)),
    );
    t.server.shutdown().await;
    assert_capture_stored(t.dir.path());
    common::assert_good_stored(t.dir.path(), "good", 1000);
}
