//! Loopback TCP helpers for the interop tests: a relay that records what a
//! client really sent on each connection while forwarding it unchanged,
//! and a replay that sends a recorded stream in one write.
//!
//! The stock client's live runs are unreliable (spec §11): now and then
//! its data never reach the socket, or reach it before its header. A test
//! that only looks at the server cannot tell that from a server that lost
//! data; with the bytes the client sent in hand, it can.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One connection as the relay saw it.
#[derive(Clone, Default)]
pub struct Recorded {
    /// Every byte the client sent, in order.
    pub bytes: Vec<u8>,
    /// The client closed its side and everything was forwarded.
    pub done: bool,
    /// The client's address.
    peer: Option<SocketAddr>,
}

/// A relay on a free loopback port in front of `upstream`.
pub struct Relay {
    addr: SocketAddr,
    conns: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
}

impl Relay {
    /// Starts accepting; each connection is forwarded to `upstream`.
    pub fn start(upstream: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let conns: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (conns.clone(), stop.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let index = {
                    let mut all = c.lock().unwrap();
                    all.push(Recorded {
                        peer: client.peer_addr().ok(),
                        ..Recorded::default()
                    });
                    all.len() - 1
                };
                let c = c.clone();
                std::thread::spawn(move || forward(client, upstream, &c, index));
            }
        });
        Relay { addr, conns, stop }
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every connection a client made before this call, once all of them
    /// are closed (or `within` has passed: then as they are).
    ///
    /// A connection can still wait in the listen queue after its client
    /// exited: a marker connection made now is accepted after all of
    /// them, so once it shows up every earlier one is in the list.
    pub fn connections(&self, within: Duration) -> Vec<Recorded> {
        let deadline = Instant::now() + within;
        let marker = TcpStream::connect(self.addr).unwrap();
        let mark = marker.local_addr().unwrap();
        let is_marker = |c: &Recorded| c.peer == Some(mark);
        while !self.conns.lock().unwrap().iter().any(is_marker) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        drop(marker);
        loop {
            let now = self.conns.lock().unwrap().clone();
            if now.iter().all(|c| c.done) || Instant::now() >= deadline {
                return now.into_iter().filter(|c| !is_marker(c)).collect();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// Copies `client` to `upstream` (recording it) and back, until the
/// client closes its side.
fn forward(client: TcpStream, upstream: SocketAddr, conns: &Mutex<Vec<Recorded>>, index: usize) {
    let finish = || conns.lock().unwrap()[index].done = true;
    let Ok(server) = TcpStream::connect(upstream) else {
        finish();
        return;
    };
    let (mut from_server, mut to_client) =
        (server.try_clone().unwrap(), client.try_clone().unwrap());
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut from_server, &mut to_client);
        let _ = to_client.shutdown(Shutdown::Write);
    });
    let (mut from_client, mut to_server) = (client, server);
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from_client.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                conns.lock().unwrap()[index]
                    .bytes
                    .extend_from_slice(&buf[..n]);
                if to_server.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to_server.shutdown(Shutdown::Write);
    finish();
}

/// Sends `bytes` to `addr` in one write, closes the sending side and waits
/// (up to 20 s) for the server to close the connection: by then it has
/// read everything.
pub fn replay(addr: SocketAddr, bytes: &[u8]) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(bytes).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut sink = Vec::new();
    let _ = s.read_to_end(&mut sink);
}
