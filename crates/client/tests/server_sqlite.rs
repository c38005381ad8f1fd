//! Against the real collection server: every sample stored, and the
//! client's own accounting agrees with what arrived.

mod common;

use std::time::Duration;

use client::spec::{Encoding, OverloadPolicy};
use client::Client;
use common::{query_i64, spec, tcp, TestServer};
use omsp::{OmlType, ValueRef};

const CLIENTS: usize = 4;
/// Samples per client: 200 000 in the suite; `SG_CLIENT_SAMPLES=1000000`
/// for the 4 × 1 000 000 run (docs/benchmarks.md).
fn samples() -> i64 {
    std::env::var("SG_CLIENT_SAMPLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000)
}

/// The TCP defaults: block, with a 1 s stall limit, 64 MiB budget.
fn default_tcp(addr: std::net::SocketAddr) -> client::spec::DestinationSpec {
    tcp(
        addr,
        Encoding::Binary,
        OverloadPolicy::Block {
            stall_limit: Some(Duration::from_secs(1)),
        },
        client::config::DEFAULT_BUFSIZE,
    )
}

#[test]
fn four_clients_at_full_speed_store_every_sample() {
    let samples = samples();
    let srv = TestServer::start();
    let addr = srv.addr;
    let handles: Vec<_> = (0..CLIENTS)
        .map(|c| {
            std::thread::spawn(move || {
                let mut s = spec("app", vec![default_tcp(addr)]);
                s.id = Some(format!("node{c}"));
                let client = Client::new(s).unwrap();
                let mp = client
                    .add_mp(
                        "m",
                        &[
                            ("i", OmlType::Int32),
                            ("d", OmlType::Double),
                            ("s", OmlType::String),
                        ],
                    )
                    .unwrap();
                client.start().unwrap();
                for i in 0..samples as i32 {
                    mp.inject(&[
                        ValueRef::Int32(i),
                        ValueRef::Double(0.5),
                        ValueRef::String("sixteen-chars..!"),
                    ])
                    .unwrap();
                }
                client.close().unwrap();
                client.stats()
            })
        })
        .collect();
    let stats: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for st in &stats {
        assert_eq!(st.injected, samples as u64);
        assert_eq!(st.dropped_at_inject, 0);
        let d = &st.destinations[0];
        assert_eq!(d.source("m").written, samples as u64, "{d:?}");
        assert_eq!(d.dropped, 0, "{d:?}");
    }

    let want = samples * CLIENTS as i64;
    let got = srv.wait_count(
        "dom",
        "SELECT count(*) FROM app_m",
        want,
        Duration::from_secs(120),
    );
    assert_eq!(got, want);
    let db = srv.db("dom");
    for c in 0..CLIENTS {
        let sender = query_i64(
            &db,
            &format!("SELECT id FROM _senders WHERE name = 'node{c}'"),
        );
        let per = |sql: &str| query_i64(&db, &sql.replace("$S", &sender.to_string()));
        assert_eq!(
            per("SELECT count(*) FROM app_m WHERE oml_sender_id = $S"),
            samples
        );
        assert_eq!(
            per("SELECT count(DISTINCT oml_seq) FROM app_m WHERE oml_sender_id = $S"),
            samples
        );
        assert_eq!(
            per("SELECT max(oml_seq) FROM app_m WHERE oml_sender_id = $S"),
            samples
        );
        assert_eq!(
            per("SELECT count(DISTINCT i) FROM app_m WHERE oml_sender_id = $S"),
            samples
        );
        // _client_instrumentation agrees: everything injected, nothing dropped.
        let instr = |col: &str, agg: &str| {
            per(&format!(
                "SELECT {agg}({col}) FROM _client_instrumentation WHERE oml_sender_id = $S"
            ))
        };
        assert_eq!(instr("measurements_injected", "max"), samples);
        assert_eq!(instr("measurements_dropped", "sum"), 0);
        assert!(instr("oml_seq", "count") >= 2, "a first and a last report");
    }
}
