//! The reference oml2-proxy-server in front of our collection server
//!: a stock-style text client's session, buffered by the
//! stock proxy while it is paused and replayed on `OMLPROXY-RESUME`, is
//! stored by our server row by row with its values.
//!
//! Two documented defects of the stock proxy are worked around, not
//! tested (spec §9, §11): it parses at most one message per TCP chunk, so
//! the client writes each line on its own with a pause; and it truncates
//! downstream ports of 10000 and above, so our server listens below that.

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// `n` distinct free loopback ports below 10000: the stock proxy cuts
/// longer downstream ports, and it binds its own ports without
/// SO_REUSEADDR, so a port in the ephemeral range can be refused to it
/// while another test's closed connections sit in TIME-WAIT on it (a
/// probe with std's listener, which sets SO_REUSEADDR, would not see that).
/// Below 10000 no connection takes its local port.
fn low_port_addrs(n: usize) -> Vec<SocketAddr> {
    let start = std::process::id() % 4999;
    let addrs: Vec<SocketAddr> = (0..4999)
        .map(|i| SocketAddr::from(([127, 0, 0, 1], 5000 + ((start + i) % 4999) as u16)))
        .filter(|a| TcpListener::bind(a).is_ok())
        .take(n)
        .collect();
    assert_eq!(addrs.len(), n, "{n} free ports below 10000");
    addrs
}

/// Kills the stock proxy when the test ends, however it ends.
struct Stock(Child);

impl Drop for Stock {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until a socket listens on `addr`'s port, without connecting: the
/// stock proxy would take a probe connection for a client session, and
/// with two sessions it sometimes forwards only the empty one on resume.
fn wait_listening(addr: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !listening(addr.port()) {
        assert!(Instant::now() < deadline, "nothing listens on {addr}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether /proc/net/tcp{,6} lists a socket in LISTEN state on `port`.
fn listening(port: u16) -> bool {
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|table| {
        std::fs::read_to_string(table)
            .unwrap_or_default()
            .lines()
            .skip(1)
            .any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                // local_address is ADDR:PORT in hex; state 0A is LISTEN.
                cols.len() > 3
                    && cols[3] == "0A"
                    && cols[1].rsplit(':').next() == Some(&format!("{port:04X}"))
            })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stock_proxy_replays_a_session_into_our_server() {
    let Some(prefix) = testkit::oml_reference() else {
        return;
    };
    let dirs = Dirs::new();
    let ports = low_port_addrs(3);
    let (up, listen, control) = (ports[0], ports[1], ports[2]);
    let server = start_server(up, &dirs.db()).await;
    let work = tempfile::tempdir().unwrap();
    // A clean environment, as for the stock server (reference_live).
    let _stock = Stock(
        Command::new(prefix.join("bin/oml2-proxy-server"))
            .env_clear()
            .args(["-l", &listen.port().to_string()])
            .args(["-c", &control.port().to_string()])
            .args(["-a", "127.0.0.1", "-p", &up.port().to_string()])
            .args(["--logfile", "proxy.log"])
            .current_dir(work.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start oml2-proxy-server"),
    );
    wait_listening(listen);
    wait_listening(control);
    let n = 20;
    tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(listen).unwrap();
        s.set_nodelay(true).unwrap();
        s.write_all(header("viastock", "a", "").as_bytes()).unwrap();
        for line in String::from_utf8(tuples(0, n)).unwrap().lines() {
            // The stock proxy parses one message per TCP chunk: a pause
            // long enough that a loaded machine still reads each line alone.
            std::thread::sleep(Duration::from_millis(100));
            s.write_all(format!("{line}\n").as_bytes()).unwrap();
        }
        std::thread::sleep(Duration::from_millis(200));
        let mut c = TcpStream::connect(control).unwrap();
        c.write_all(b"OMLPROXY-RESUME\n").unwrap();
        std::thread::sleep(Duration::from_millis(200));
    })
    .await
    .unwrap();
    let db = dirs.db();
    let got = tokio::task::spawn_blocking(move || {
        wait_rows(
            &db,
            "viastock",
            "t_m",
            "a",
            n as usize,
            Duration::from_secs(20),
        )
    })
    .await
    .unwrap();
    if got.len() < n as usize {
        let log = std::fs::read_to_string(work.path().join("proxy.log")).unwrap_or_default();
        panic!(
            "{} of {n} rows arrived through the stock proxy; its log:\n{log}",
            got.len()
        );
    }
    assert_exactly(got, n, "stock proxy into our server");
    let conn = rusqlite::Connection::open(dirs.db().join("viastock.sq3")).unwrap();
    let values: Vec<(i64, String)> = conn
        .prepare("SELECT i, s FROM t_m ORDER BY oml_seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let want: Vec<(i64, String)> = (0..n).map(|i| (i, format!("value {i}"))).collect();
    assert_eq!(values, want);
    server.shutdown().await;
}
