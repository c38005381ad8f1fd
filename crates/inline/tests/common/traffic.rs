//! Traffic generators running on threads inside namespaces.

use std::io::{Read, Write};
use std::net::{Ipv6Addr, SocketAddr, SocketAddrV6, TcpListener, TcpStream, UdpSocket};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use inline::netns;
use ring::digest::{Context, Digest, SHA256};

fn addr(a: &str, port: u16) -> SocketAddr {
    SocketAddr::V6(SocketAddrV6::new(
        a.parse::<Ipv6Addr>().unwrap(),
        port,
        0,
        0,
    ))
}

/// Deterministic payload bytes for datagram/chunk `i`.
pub fn payload(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|j| ((i * 131 + j * 7) % 251) as u8).collect()
}

/// What a receiver got.
pub struct Received {
    pub count: usize,
    pub bytes: usize,
    pub digest: Digest,
}

/// Start a UDP receiver in `ns` on `port`; it returns after `idle` without data.
pub fn udp_receiver(ns: &str, port: u16, idle: Duration) -> JoinHandle<Received> {
    let file = netns::open(ns).unwrap();
    let (ready_tx, ready_rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        netns::enter_file(&file, "dst").unwrap();
        let sock = UdpSocket::bind(addr("::", port)).unwrap();
        sock.set_read_timeout(Some(idle)).unwrap();
        large_receive_buffer(&sock);
        ready_tx.send(()).unwrap();
        let mut ctx = Context::new(&SHA256);
        let (mut count, mut bytes) = (0, 0);
        let mut buf = vec![0u8; 65_536];
        while let Ok(n) = sock.recv(&mut buf) {
            ctx.update(&buf[..n]);
            count += 1;
            bytes += n;
        }
        Received {
            count,
            bytes,
            digest: ctx.finish(),
        }
    });
    ready_rx.recv().unwrap();
    h
}

/// 16 MiB of receive buffer (SO_RCVBUFFORCE: the tests run as root), so
/// that a receiver thread the scheduler leaves waiting on a busy machine
/// (a test run beside a build, load 4 on 2 cores) loses no datagram to a
/// full socket buffer: these tests count what the kernel delivers through
/// our programs, not how fast a starved thread reads. The default (about
/// 200 KiB, a few hundred of these datagrams) overflowed in such a run.
fn large_receive_buffer(sock: &UdpSocket) {
    use nix::sys::socket::{setsockopt, sockopt::RcvBufForce};
    setsockopt(sock, RcvBufForce, &(16 << 20)).expect("SO_RCVBUFFORCE (root)");
}

/// Send `sizes.len()` datagrams from `ns` (source port `sport`) paced by `gap`; returns their digest.
pub fn udp_send(
    ns: &str,
    sport: u16,
    dst: &str,
    dport: u16,
    sizes: &[usize],
    gap: Duration,
) -> Digest {
    let sizes = sizes.to_vec();
    let dst = dst.to_owned();
    netns::run_in(ns, move || {
        let sock = UdpSocket::bind(addr("::", sport)).unwrap();
        sock.connect(addr(&dst, dport)).unwrap();
        let mut ctx = Context::new(&SHA256);
        let start = Instant::now();
        for (i, len) in sizes.iter().enumerate() {
            let p = payload(i, *len);
            ctx.update(&p);
            sock.send(&p).unwrap();
            if !gap.is_zero() {
                let due = start + gap * (i as u32 + 1);
                while Instant::now() < due {
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
        }
        ctx.finish()
    })
    .unwrap()
}

/// Start a TCP receiver in `ns` on `port` that reads one connection to EOF.
pub fn tcp_receiver(ns: &str, port: u16) -> JoinHandle<Received> {
    let file = netns::open(ns).unwrap();
    let (ready_tx, ready_rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        netns::enter_file(&file, "dst").unwrap();
        let l = TcpListener::bind(addr("::", port)).unwrap();
        ready_tx.send(()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut ctx = Context::new(&SHA256);
        let (mut count, mut bytes) = (0, 0);
        let mut buf = vec![0u8; 65_536];
        loop {
            let n = s.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            ctx.update(&buf[..n]);
            count += 1;
            bytes += n;
        }
        Received {
            count,
            bytes,
            digest: ctx.finish(),
        }
    });
    ready_rx.recv().unwrap();
    h
}

/// Send `chunks` chunks of `len` bytes over TCP from `ns`; returns their digest.
pub fn tcp_send(ns: &str, dst: &str, dport: u16, chunks: usize, len: usize) -> Digest {
    let dst = dst.to_owned();
    netns::run_in(ns, move || {
        let mut s = TcpStream::connect_timeout(&addr(&dst, dport), Duration::from_secs(5)).unwrap();
        let mut ctx = Context::new(&SHA256);
        for i in 0..chunks {
            let p = payload(i, len);
            ctx.update(&p);
            s.write_all(&p).unwrap();
        }
        s.shutdown(std::net::Shutdown::Write).unwrap();
        ctx.finish()
    })
    .unwrap()
}
