//! A hostile client of the proxy: an endless header is cut at the decoder's
//! header limits (the proxy keeps a raw copy of the header until it is
//! complete, so that copy is bounded too), and other clients' rows are
//! journaled and delivered meanwhile.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::*;

/// Writes endless `x-key-N: value` lines; returns the bytes written before
/// the proxy closed the connection.
fn endless_header(addr: std::net::SocketAddr, cap: u64) -> u64 {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"protocol: 5\ndomain: big\n").unwrap();
    let mut sent = 0u64;
    let mut i = 0u64;
    while sent < cap {
        let mut chunk = Vec::with_capacity(64 * 1024);
        while chunk.len() < 60 * 1024 {
            chunk.extend_from_slice(format!("x-key-{i}: value\n").as_bytes());
            i += 1;
        }
        match s.write_all(&chunk) {
            Ok(()) => sent += chunk.len() as u64,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                panic!("the proxy neither read nor closed for 10 s after {sent} bytes")
            }
            Err(_) => break,
        }
    }
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    sent
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_header_is_cut_while_others_are_delivered() {
    let dirs = Dirs::new();
    let up = free_addr();
    let config = proxy_config(&dirs.journal(), up);
    let max_header = config.limits.max_header as u64;
    let (proxy, addr) = start_proxy(config).await;
    let server = start_server(up, &dirs.db()).await;
    let hostile = tokio::task::spawn_blocking(move || endless_header(addr, 400 << 20));
    let n = 5000;
    tokio::task::spawn_blocking(move || stock_send(addr, "good", "a", &tuples(0, n)))
        .await
        .unwrap();
    let sent = hostile.await.unwrap();
    // Kernel socket buffers take a few MiB more than the proxy reads.
    assert!(
        sent < max_header + (16 << 20),
        "{sent} bytes of header accepted"
    );
    wait_delivered(&proxy, Duration::from_secs(30)).await;
    let got = wait_rows(
        &dirs.db(),
        "good",
        "t_m",
        "a",
        n as usize,
        Duration::from_secs(10),
    );
    assert_exactly(got, n, "good client next to an endless header");
    assert!(!dirs.db().join("big.sq3").exists());
    proxy.shutdown().await;
    server.shutdown().await;
}
