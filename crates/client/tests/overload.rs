//! Overload policies against a server that accepts and never reads: every
//! sample is either delivered or counted as dropped, exactly.

mod common;

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use client::spec::{Encoding, OverloadPolicy};
use client::{Client, Options};
use common::{decode, spec, tcp};
use omsp::{OmlType, Value, ValueRef};

/// A listener that accepts one connection and reads nothing until told to
/// (by the client having closed), then returns everything it received.
struct Stalled {
    addr: SocketAddr,
    conn: JoinHandle<TcpStream>,
}

impl Stalled {
    fn start() -> Stalled {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let conn = std::thread::spawn(move || l.accept().unwrap().0);
        Stalled { addr, conn }
    }

    /// Reads the whole session (the client has closed its end).
    fn received(self) -> Vec<u8> {
        let mut s = self.conn.join().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).unwrap();
        out
    }
}

const SAMPLES: i64 = 200_000;

/// Injects SAMPLES into a stalled destination with `policy`, closes, and
/// checks that delivered + dropped = injected, exactly, per measurement point.
fn exact_accounting(policy: OverloadPolicy, enc: Encoding) -> (client::Stats, Vec<i64>) {
    let stalled = Stalled::start();
    let options = Options {
        close_timeout: Duration::from_millis(500),
        ..Options::default()
    };
    let client = Client::with_options(
        spec("app", vec![tcp(stalled.addr, enc, policy, 64 << 10)]),
        options,
    )
    .unwrap();
    let mp = client
        .add_mp("m", &[("i", OmlType::Int64), ("s", OmlType::String)])
        .unwrap();
    client.start().unwrap();
    let began = Instant::now();
    for i in 1..=SAMPLES {
        mp.inject(&[ValueRef::Int64(i), ValueRef::String("payload-payload")])
            .unwrap();
    }
    let inject_time = began.elapsed();
    client.close().unwrap();
    let st = client.stats();
    let bytes = stalled.received();
    let d = decode(&bytes);
    // The session may end inside a tuple (given up at close); nothing else.
    assert!(d.errors.len() <= 1, "{policy:?}: {:?}", d.errors);
    let delivered: Vec<i64> = d
        .stream(2)
        .iter()
        .map(|s| match s.values[0] {
            Value::Int64(i) => i,
            _ => panic!(),
        })
        .collect();
    let dest = &st.destinations[0];
    let m = dest.source("m");
    eprintln!(
        "{policy:?} {enc:?}: injected {} in {inject_time:?}, dropped at inject {}, emitted {}, written {}, dropped {}, delivered {}",
        st.injected, st.dropped_at_inject, m.emitted, m.written, m.dropped, delivered.len()
    );
    assert_eq!(st.injected, SAMPLES as u64);
    assert_eq!(m.written, delivered.len() as u64, "written = delivered");
    assert_eq!(
        st.dropped_at_inject + m.dropped + m.written,
        SAMPLES as u64,
        "every sample delivered or counted as dropped"
    );
    assert!(
        m.dropped + st.dropped_at_inject > 0,
        "a stalled server forces drops"
    );
    // Delivered samples keep their order, and their seq is their inject number.
    assert!(delivered.windows(2).all(|w| w[0] < w[1]));
    for s in d.stream(2) {
        let Value::Int64(i) = s.values[0] else {
            panic!()
        };
        assert_eq!(s.seq, i, "drops leave seq gaps, nothing else moves");
    }
    // The instrumentation reports agree with the counters.
    let instr = d.stream(1);
    let reported: u64 = instr
        .iter()
        .map(|s| match s.values[1] {
            Value::UInt32(n) => u64::from(n),
            _ => panic!(),
        })
        .sum();
    assert!(
        reported
            <= m.dropped + st.dropped_at_inject + dest.source("_client_instrumentation").dropped
    );
    (st, delivered)
}

#[test]
fn drop_oldest_counts_every_drop() {
    for enc in [Encoding::Binary, Encoding::Text] {
        let (_, delivered) = exact_accounting(OverloadPolicy::DropOldest, enc);
        // The oldest are dropped: what arrives ends with the latest samples.
        assert!(!delivered.is_empty());
    }
}

#[test]
fn drop_newest_counts_every_drop() {
    for enc in [Encoding::Binary, Encoding::Text] {
        let (_, delivered) = exact_accounting(OverloadPolicy::DropNewest, enc);
        // The newest are dropped: what arrives starts with the first samples.
        assert_eq!(delivered.first(), Some(&1));
    }
}

#[test]
fn block_with_stall_limit_does_not_block_forever() {
    let policy = OverloadPolicy::Block {
        stall_limit: Some(Duration::from_millis(300)),
    };
    let began = Instant::now();
    let (st, delivered) = exact_accounting(policy, Encoding::Binary);
    assert!(
        began.elapsed() < Duration::from_secs(30),
        "took {:?}",
        began.elapsed()
    );
    // Blocking never drops at inject.
    assert_eq!(st.dropped_at_inject, 0);
    assert_eq!(
        delivered.first(),
        Some(&1),
        "the first samples went out before the stall"
    );
}
