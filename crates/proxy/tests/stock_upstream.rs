//! An upstream that does not speak spec §3.6 (a stock oml2-server: it
//! ignores the session keys and never writes back): the proxy falls back
//! to plain forwarding after the resume timeout, at tuple boundaries.

mod common;

use std::io::Read;
use std::net::TcpListener;
use std::time::Duration;

use common::*;
use omsp::{Decoder, Event};

/// A receiver that behaves like the stock server on the wire: reads a
/// session to its end, never answers. Returns the sequence numbers decoded.
fn stock_receiver(listener: TcpListener) -> Vec<i64> {
    let (mut s, _) = listener.accept().unwrap();
    let mut bytes = Vec::new();
    s.read_to_end(&mut bytes).unwrap();
    Decoder::decode_all(&bytes)
        .into_iter()
        .filter_map(|e| match e {
            Ok(Event::Sample(s)) if s.stream == 1 => Some(s.seq),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_upstream_gets_plain_forwarding_after_the_timeout() {
    let dirs = Dirs::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let up = listener.local_addr().unwrap();
    let receiver = std::thread::spawn(move || stock_receiver(listener));
    let mut config = proxy_config(&dirs.journal(), up);
    config.resume_timeout = Duration::from_millis(300);
    let (proxy, addr) = start_proxy(config).await;
    let n = 20_000;
    tokio::task::spawn_blocking(move || stock_send(addr, "plain", "a", &tuples(0, n)))
        .await
        .unwrap();
    wait_delivered(&proxy, Duration::from_secs(20)).await;
    let got = tokio::task::spawn_blocking(move || receiver.join().unwrap())
        .await
        .unwrap();
    assert_exactly(got, n, "plain forwarding");
    proxy.shutdown().await;
}
