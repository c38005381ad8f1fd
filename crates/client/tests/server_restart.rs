//! The server is shut down and restarted on the same port mid-stream: the
//! client reconnects, resends its header, and nothing is stored twice; the
//! samples missing are at most those in flight (in socket buffers) when the
//! server went away.

mod common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use client::spec::{Encoding, OverloadPolicy};
use client::Client;
use common::{query_i64, spec, tcp, TestServer};
use omsp::{OmlType, ValueRef};

const SAMPLES: i64 = 300_000;

#[test]
fn restart_mid_stream_gives_no_duplicates_and_bounded_gaps() {
    for enc in [Encoding::Binary, Encoding::Text] {
        run(enc);
    }
}

/// The largest buffer the kernel gives a TCP socket (`net.ipv4.<name>`).
fn kernel_max(name: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/sys/net/ipv4/{name}"))
        .ok()
        .and_then(|s| s.split_whitespace().nth(2)?.parse().ok())
        .unwrap_or(8 << 20)
}

fn run(enc: Encoding) {
    let mut srv = TestServer::start();
    let policy = OverloadPolicy::Block {
        stall_limit: Some(Duration::from_secs(1)),
    };
    let client = Client::new(spec("app", vec![tcp(srv.addr, enc, policy, 64 << 20)])).unwrap();
    let mp = client
        .add_mp("m", &[("i", OmlType::Int64), ("s", OmlType::String)])
        .unwrap();
    client.inject_metadata("note", "before start").unwrap();
    client.start().unwrap();
    // A steady stream rather than one burst: ~3 s in all.
    let (progress, injector) = common::steady_injector(SAMPLES, move |i| {
        mp.inject(&[ValueRef::Int64(i), ValueRef::String("payload")])
            .unwrap();
    });
    while progress.load(Ordering::Relaxed) < SAMPLES / 3 {
        std::thread::sleep(Duration::from_millis(5));
    }
    srv.stop();
    let down = Instant::now();
    std::thread::sleep(Duration::from_millis(300));
    srv.restart();
    eprintln!("{enc:?}: server down for {:?}", down.elapsed());
    injector.join().unwrap();
    client.close().unwrap();
    let st = client.stats();
    let d = &st.destinations[0];
    assert!(d.connections >= 2, "reconnected: {d:?}");
    assert_eq!(
        d.source("m").dropped,
        0,
        "the queue absorbed the outage: {d:?}"
    );
    assert_eq!(d.source("m").written, SAMPLES as u64);

    let count = |sql: &str| query_i64(&srv.db("dom"), sql);
    // Wait until every sample is stored, or the count has settled (the
    // server commits at least every second).
    let mut stored = -1;
    let mut since = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let n = count("SELECT count(*) FROM app_m");
        if n == SAMPLES {
            stored = n;
            break;
        }
        if n != stored {
            stored = n;
            since = Instant::now();
        } else if since.elapsed() > Duration::from_millis(2500) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let distinct = count("SELECT count(DISTINCT oml_seq) FROM app_m");
    let distinct_i = count("SELECT count(DISTINCT i) FROM app_m");
    assert_eq!(stored, distinct, "{enc:?}: a seq stored twice");
    assert_eq!(stored, distinct_i, "{enc:?}: a sample stored twice");
    assert_eq!(
        count("SELECT count(*) FROM app_m WHERE oml_seq <> i"),
        0,
        "seq follows inject order"
    );
    let lost = SAMPLES - stored;
    // In flight = in socket buffers (ours and the server's) when the server
    // went away: at most the kernel's largest send plus receive buffer.
    let bytes_per_tuple = d.bytes_written as f64 / d.emitted as f64;
    let lost_bytes = lost as f64 * bytes_per_tuple;
    let bound = (kernel_max("tcp_wmem") + kernel_max("tcp_rmem")) as f64;
    eprintln!(
        "{enc:?}: stored {stored} of {SAMPLES}, lost in flight {lost} (~{lost_bytes:.0} bytes, bound {bound})"
    );
    assert!(lost_bytes <= bound, "{enc:?}: lost {lost}");
    // Both sessions declared everything: the metadata row exists (once per
    // connection, as liboml2 replays it on every reconnection).
    let meta = count("SELECT count(*) FROM _experiment_metadata WHERE key = 'note'");
    assert!(meta >= 1, "metadata stored");
    let senders = count("SELECT count(*) FROM _senders");
    assert_eq!(senders, 1, "one sender id across reconnections");
}
