//! Applications receive identical bytes, and every instrumented packet is
//! measured, for UDP and TCP, direct and through a router.

mod common;

use std::time::Duration;

use common::traffic::{udp_receiver, udp_send};
use common::*;
use inline::Counter;

fn udp_case(topology: Topology, mode: &str) {
    if !require_root() {
        return;
    }
    let net = Net::new(topology);
    let (source, sink, records) = agents(&net, &settings(&["proto=udp", &format!("mode={mode}")]));
    let rx = udp_receiver(&net.dst, 7000, Duration::from_millis(700));
    let sizes: Vec<usize> = (0..500).map(|i| 1 + (i * 37) % 1400).collect();
    let sent = udp_send(
        &net.src,
        6000,
        DST_ADDR,
        7000,
        &sizes,
        Duration::from_micros(200),
    );
    let got = rx.join().unwrap();
    assert_eq!(got.count, sizes.len());
    assert_eq!(got.digest.as_ref(), sent.as_ref(), "payload bytes differ");
    let sc = source.counters().unwrap();
    let kc = sink.counters().unwrap();
    assert_eq!(sc.get(Counter::SrcInstrumented), 500, "{sc:?}");
    assert_eq!(kc.get(Counter::SinkRecords), 500, "{kc:?}");
    assert_eq!(sink.stop().unwrap(), 500);
    source.stop().unwrap();
    let recs = records.lock().unwrap();
    let mut seqs: Vec<u32> = recs.iter().filter_map(|m| m.seq).collect();
    seqs.sort_unstable();
    if mode != "delay" {
        assert_eq!(seqs, (0..500).collect::<Vec<u32>>());
    }
    assert!(recs
        .iter()
        .all(|m| m.flow.sport == 6000 && m.flow.dport == 7000 && m.flow.proto == 17));
    if mode == "both" || mode == "delay" {
        assert!(recs.iter().all(|m| m
            .delay_ns()
            .is_some_and(|d| (0..1_000_000_000).contains(&d))));
    }
}

#[test]
fn udp_direct_both_options() {
    udp_case(Topology::Direct, "both");
}

#[test]
fn udp_via_router_each_mode() {
    for mode in ["delay", "loss", "pdm"] {
        udp_case(Topology::Router, mode);
    }
}

#[test]
fn tcp_identical_bytes_and_every_packet_measured() {
    if !require_root() {
        return;
    }
    tcp_case(inline::LoadOptions::default(), 7100);
}
