//! A user-space L2 relay between two interfaces of a "wire" namespace that
//! delays and drops frames travelling from the source side, standing in for
//! `tc netem` on kernels built without it (CONFIG_NET_SCH_NETEM unset, as on
//! the CI machine). Frames are copied unchanged (extension headers included);
//! only UDP, TCP and Destination Options packets are ever dropped. Drops are decided by a
//! seeded PRNG and counted, so the ground truth is exact.
#![allow(unsafe_code)]

use std::collections::VecDeque;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Impairments applied from `a` to `b`; `b` to `a` is copied as is.
#[derive(Debug, Default)]
pub struct Impair {
    /// Added one-way delay.
    pub delay: Mutex<Duration>,
    /// Drop probability in parts per million.
    pub loss_ppm: AtomicU64,
    /// Frames dropped so far by the PRNG.
    pub dropped: AtomicU64,
    /// Frames lost in the relay itself: its receive socket overflowed (the
    /// kernel counts them) or a re-send failed. Those frames never reach
    /// the sink either, so they are drops of the path as much as the
    /// PRNG's; on a loaded machine they happen.
    pub overflow: AtomicU64,
}

fn packet_socket(ifindex: i32) -> OwnedFd {
    let proto = (libc::ETH_P_ALL as u16).to_be();
    // SAFETY: plain socket(2) call; the result is checked before use.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, i32::from(proto)) };
    assert!(
        fd >= 0,
        "AF_PACKET socket: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: fd is a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: sockaddr_ll is plain data; zero is a valid initial value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto;
    sll.sll_ifindex = ifindex;
    // SAFETY: sll is a valid sockaddr_ll of the given length.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        )
    };
    assert_eq!(rc, 0, "bind AF_PACKET: {}", std::io::Error::last_os_error());
    // Room for a whole test burst, so a relay thread that is scheduled out
    // for a while does not lose frames (FORCE: above rmem_max, as root).
    let rcvbuf: libc::c_int = 32 << 20;
    // SAFETY: rcvbuf is a valid int for SO_RCVBUFFORCE.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&rcvbuf as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as u32,
        );
    }
    let tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 100_000,
    };
    // SAFETY: tv is a valid timeval for SO_RCVTIMEO.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as u32,
        );
    }
    fd
}

/// Receive one frame that arrived on the interface (not one we sent).
fn recv(fd: &OwnedFd, buf: &mut [u8]) -> Option<usize> {
    // SAFETY: as above; recvfrom writes at most buf.len() bytes and a sockaddr_ll.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
    let n = unsafe {
        libc::recvfrom(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            0,
            (&mut sll as *mut libc::sockaddr_ll).cast(),
            &mut len,
        )
    };
    (n > 0 && sll.sll_pkttype != libc::PACKET_OUTGOING).then_some(n as usize)
}

/// Send one frame; whether the kernel took it.
fn send(fd: &OwnedFd, frame: &[u8]) -> bool {
    // SAFETY: the socket is bound to its interface; send reads frame.len() bytes.
    let n = unsafe { libc::send(fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
    n == frame.len() as isize
}

/// Frames the kernel dropped because the socket's receive buffer was full,
/// since the last call (reading the statistics resets them).
fn socket_drops(fd: &OwnedFd) -> u64 {
    // SAFETY: tpacket_stats is plain data; getsockopt writes at most len bytes.
    let mut st: libc::tpacket_stats = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tpacket_stats>() as u32;
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            (&mut st as *mut libc::tpacket_stats).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        u64::from(st.tp_drops)
    } else {
        0
    }
}

/// Whether the relay may drop a frame: IPv6 carrying UDP, TCP or a
/// Destination Options header (our instrumented packets) right behind the
/// IPv6 header. Everything else passes: neighbour discovery, and MLD
/// reports behind a hop-by-hop header, whose drops would be counted as
/// losses that no measured flow can show.
fn droppable(frame: &[u8]) -> bool {
    frame.len() > 20 && frame[12] == 0x86 && frame[13] == 0xdd && matches!(frame[20], 6 | 17 | 60)
}

/// Frames waiting for their release time.
type Queue = VecDeque<(Instant, Vec<u8>)>;

/// The relay threads; stop on drop.
pub struct Relay {
    pub impair: Arc<Impair>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Relay {
    /// Start relaying between interfaces `a` and `b` of namespace `ns`.
    pub fn start(ns: &str, a: &str, b: &str) -> Relay {
        let impair = Arc::new(Impair::default());
        let stop = Arc::new(AtomicBool::new(false));
        let file = inline::netns::open(ns).unwrap();
        let (fa, fb) = inline::netns::run_in_file(&file, || {
            (
                packet_socket(inline::ifindex(a).unwrap()),
                packet_socket(inline::ifindex(b).unwrap()),
            )
        })
        .unwrap();
        let fa = Arc::new(fa);
        let fb = Arc::new(fb);
        let queue: Arc<Mutex<Queue>> = Arc::default();
        let mut threads = Vec::new();
        // a -> queue (impaired)
        {
            let (fa, q, imp, stop) = (fa.clone(), queue.clone(), impair.clone(), stop.clone());
            threads.push(std::thread::spawn(move || {
                let mut rng = 0x9E37_79B9_7F4A_7C15u64;
                let mut buf = vec![0u8; 65_536];
                while !stop.load(Ordering::Relaxed) {
                    imp.overflow.fetch_add(socket_drops(&fa), Ordering::Relaxed);
                    let Some(n) = recv(&fa, &mut buf) else {
                        continue;
                    };
                    let frame = &buf[..n];
                    if droppable(frame) {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        if rng % 1_000_000 < imp.loss_ppm.load(Ordering::Relaxed) {
                            imp.dropped.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                    }
                    let due = Instant::now() + *imp.delay.lock().unwrap();
                    q.lock().unwrap().push_back((due, frame.to_vec()));
                }
            }));
        }
        // queue -> b
        {
            let (fb, q, imp, stop) = (fb.clone(), queue, impair.clone(), stop.clone());
            threads.push(std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let next = q.lock().unwrap().front().map(|(due, _)| *due);
                    match next {
                        Some(due) if due <= Instant::now() => {
                            let (_, frame) = q.lock().unwrap().pop_front().unwrap();
                            if !send(&fb, &frame) && droppable(&frame) {
                                imp.overflow.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        Some(due) => std::thread::sleep(
                            (due - Instant::now()).min(Duration::from_micros(200)),
                        ),
                        None => std::thread::sleep(Duration::from_micros(100)),
                    }
                }
            }));
        }
        // b -> a, unchanged
        {
            let (fa, fb, stop) = (fa, fb, stop.clone());
            threads.push(std::thread::spawn(move || {
                let mut buf = vec![0u8; 65_536];
                while !stop.load(Ordering::Relaxed) {
                    if let Some(n) = recv(&fb, &mut buf) {
                        let _ = send(&fa, &buf[..n]);
                    }
                }
            }));
        }
        Relay {
            impair,
            stop,
            threads,
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
