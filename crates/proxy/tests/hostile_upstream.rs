//! Numbers from the upstream are validated: a resume offset
//! or an acknowledgement that overflows or points past the data the proxy
//! has sent must neither panic, wrap, nor free undelivered data. The proxy
//! drops such a session and delivers everything through the next one.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use common::*;
use omsp::{Decoder, Event};

/// Reads the session header the proxy sends (up to the blank line).
fn read_header(s: &TcpStream) {
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).unwrap() == 0 || line == "\n" {
            return;
        }
    }
}

/// Holds a connection open until the proxy closes it.
fn drain(mut s: TcpStream) {
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut sink = [0u8; 4096];
    while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
}

/// First session: resume beyond anything sent (u64::MAX: overflows when
/// added to the epoch base). Second: a valid resume, then an
/// acknowledgement far past the end. Third: a stock-style receiver.
fn hostile_then_stock(listener: TcpListener) -> Vec<i64> {
    let (mut s, _) = listener.accept().unwrap();
    read_header(&s);
    s.write_all(format!("streamgauge-resume {}\n", u64::MAX).as_bytes())
        .unwrap();
    drain(s);

    let (mut s, _) = listener.accept().unwrap();
    read_header(&s);
    s.write_all(b"streamgauge-resume 0\nstreamgauge-ack 999999999999\n")
        .unwrap();
    drain(s);

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
async fn resume_and_ack_offsets_from_the_network_are_checked() {
    init_log();
    let dirs = Dirs::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let up = listener.local_addr().unwrap();
    let receiver = std::thread::spawn(move || hostile_then_stock(listener));
    let mut config = proxy_config(&dirs.journal(), up);
    config.resume_timeout = Duration::from_millis(300);
    let (proxy, addr) = start_proxy(config).await;
    let n = 5_000;
    tokio::task::spawn_blocking(move || stock_send(addr, "hostile", "a", &tuples(0, n)))
        .await
        .unwrap();
    wait_delivered(&proxy, Duration::from_secs(30)).await;
    let got = tokio::task::spawn_blocking(move || receiver.join().unwrap())
        .await
        .unwrap();
    assert_exactly(got, n, "after two hostile upstream sessions");
    proxy.shutdown().await;
}
