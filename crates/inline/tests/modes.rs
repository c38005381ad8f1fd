//! The cheaper modes keep the guarantees of the default ones: a sink at
//! XDP, per-CPU sampling and the compact delay layout leave applications'
//! bytes unchanged, measure exactly the packets the source marked, and keep
//! loss exact.

mod common;

use common::*;
use inline::{Counter, LoadOptions, SinkHook};

const XDP: LoadOptions = LoadOptions {
    max_flows: 1000,
    ring_bytes: 1 << 22,
    sink_hook: SinkHook::Xdp,
};

/// 400 datagrams of assorted sizes from port `sport` to `dport`; asserts
/// they all arrive byte for byte.
fn send_400(net: &Net, sport: u16, dport: u16) {
    udp_sizes_arrive(net, 400, sport, dport);
}

#[test]
fn xdp_sink_udp_every_mode() {
    if !require_root() {
        return;
    }
    let net = Net::new(Topology::Direct);
    for (i, mode) in ["both", "loss", "delay", "pdm", "compact"]
        .iter()
        .enumerate()
    {
        let s = settings(&["proto=udp", &format!("mode={mode}")]);
        let (source, sink, records) = agents_with(&net, &s, XDP);
        assert_eq!(sink.program().hook(), SinkHook::Xdp, "veth has native XDP");
        let port = 7700 + i as u16;
        send_400(&net, port - 1000, port);
        let kc = sink.counters().unwrap();
        assert_eq!(kc.get(Counter::SinkRecords), 400, "{mode}: {kc:?}");
        assert_eq!(kc.get(Counter::SinkMarked), 400, "{mode}: {kc:?}");
        assert_eq!(sink.stop().unwrap(), 400);
        source.stop().unwrap();
        let recs = records.lock().unwrap();
        if mode != &"delay" && mode != &"compact" {
            let mut seqs: Vec<u32> = recs.iter().filter_map(|m| m.seq).collect();
            seqs.sort_unstable();
            assert_eq!(seqs, (0..400).collect::<Vec<u32>>(), "{mode}");
        }
        if ["both", "delay", "compact"].contains(mode) {
            assert!(
                recs.iter().all(|m| m
                    .delay_ns()
                    .is_some_and(|d| (0..1_000_000_000).contains(&d))),
                "{mode}: delays out of range"
            );
        }
        assert!(recs
            .iter()
            .all(|m| m.flow.dport == port && m.flow.proto == 17));
    }
}

#[test]
fn xdp_sink_tcp_identical_bytes() {
    if !require_root() {
        return;
    }
    tcp_case(XDP, 7750);
}

#[test]
fn per_cpu_sampling_measures_one_in_n_with_exact_loss() {
    if !require_root() {
        return;
    }
    let net = Net::new(Topology::Direct);
    let s = settings(&["proto=udp", "mode=loss", "sample=10", "sampling=cpu"]);
    let (source, sink, records) = agents(&net, &s);
    send_400(&net, 6760, 7760);
    let sc = source.counters().unwrap();
    let cpus = cpus();
    let marked = sc.get(Counter::SrcInstrumented);
    // Each CPU the sender ran on marks its 1st, 11th, … packet.
    assert!(
        (40..=40 + cpus).contains(&marked),
        "{marked} marked: {sc:?}"
    );
    assert_eq!(sc.get(Counter::SrcSampledOut) + marked, 400, "{sc:?}");
    assert_eq!(sink.stop().unwrap(), marked);
    source.stop().unwrap();
    let mut seqs: Vec<u32> = records
        .lock()
        .unwrap()
        .iter()
        .filter_map(|m| m.seq)
        .collect();
    seqs.sort_unstable();
    assert_eq!(
        seqs,
        (0..marked as u32).collect::<Vec<u32>>(),
        "no gaps: loss stays exact"
    );
}

/// CPUs the sender may run on.
fn cpus() -> u64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
}

#[test]
fn compact_layout_is_8_bytes_and_measures_delay() {
    if !require_root() {
        return;
    }
    let net = Net::impairable();
    net.set_delay(20);
    let s = settings(&["proto=udp", "mode=compact"]);
    let (source, sink, records) = agents(&net, &s);
    send_400(&net, 6770, 7770);
    assert_eq!(sink.stop().unwrap(), 400);
    source.stop().unwrap();
    let recs = records.lock().unwrap();
    for m in recs.iter() {
        assert_eq!(m.seq, None);
        let d = m.delay_ns().unwrap();
        // netem's 20 ms, plus scheduling; the layout's steps are 60 ns.
        assert!((20_000_000..60_000_000).contains(&d), "delay {d} ns");
    }
}

#[test]
fn an_idle_flow_restarts_at_sequence_zero_after_the_flow_timeout() {
    if !require_root() {
        return;
    }
    let net = Net::new(Topology::Direct);
    // Each burst ends with the receiver waiting 0.7 s for more: the flow
    // is idle that long before the next burst.
    for (timeout, port, restarts) in [("0.3", 7790, true), ("30", 7791, false)] {
        let s = settings(&[
            "proto=udp",
            "mode=loss",
            &format!("flow_timeout_s={timeout}"),
        ]);
        let (source, sink, records) = agents(&net, &s);
        send_400(&net, port - 1000, port);
        send_400(&net, port - 1000, port);
        assert_eq!(sink.stop().unwrap(), 800);
        source.stop().unwrap();
        let recs = records.lock().unwrap();
        let mut seqs: Vec<u32> = recs.iter().filter_map(|m| m.seq).collect();
        seqs.sort_unstable();
        let want: Vec<u32> = if restarts {
            (0..800).map(|i| i / 2).collect()
        } else {
            (0..800).collect()
        };
        assert!(
            seqs == want,
            "flow_timeout_s={timeout}: {} records, {} with sequence 0, highest {:?}",
            seqs.len(),
            seqs.iter().filter(|s| **s == 0).count(),
            seqs.last()
        );
    }
}

#[test]
fn delay_layouts_sample_per_flow_with_and_without_the_flow_table() {
    if !require_root() {
        return;
    }
    // A delay-only layout marking every packet keeps no per-flow state
    // (the source skips its flow table); with per-flow sampling it does,
    // and one in N is exact per flow.
    let net = Net::new(Topology::Direct);
    for (i, (mode, sample, marked)) in [
        ("compact", "1", 400),
        ("compact", "4", 100),
        ("delay", "1", 400),
        ("delay", "8", 50),
    ]
    .into_iter()
    .enumerate()
    {
        let s = settings(&[
            "proto=udp",
            &format!("mode={mode}"),
            &format!("sample={sample}"),
        ]);
        let (source, sink, records) = agents(&net, &s);
        let port = 7800 + i as u16;
        send_400(&net, port - 1000, port);
        let sc = source.counters().unwrap();
        assert_eq!(
            sc.get(Counter::SrcInstrumented),
            marked,
            "{mode} 1/{sample}: {sc:?}"
        );
        assert_eq!(
            sc.get(Counter::SrcSampledOut) + marked,
            400,
            "{mode} 1/{sample}: {sc:?}"
        );
        assert_eq!(sink.stop().unwrap(), marked, "{mode} 1/{sample}");
        source.stop().unwrap();
        let recs = records.lock().unwrap();
        assert!(
            recs.iter().all(|m| m.seq.is_none()
                && m.delay_ns()
                    .is_some_and(|d| (0..1_000_000_000).contains(&d))),
            "{mode} 1/{sample}: records without a delay in range"
        );
    }
}
