//! Run-time reconfiguration through the maps (as `streamgauge inline ctl`
//! does), sampling, skip counters and recovery from a killed agent.

mod common;

use std::time::Duration;

use common::traffic::{udp_receiver, udp_send};
use common::*;
use inline::{netns, Agent, Counter, LoadOptions, ProgramMaps, Role, Settings};

/// `ctl`-style access: find the attached program from its interface.
fn ctl(ns: &str, ifname: &'static str, role: Role, f: impl FnOnce(&ProgramMaps) + Send) {
    netns::run_in(ns, move || f(&ProgramMaps::find(ifname, role).unwrap())).unwrap();
}

#[test]
fn sampling_and_filter_changes_apply_at_run_time() {
    if !require_root() {
        return;
    }
    let net = Net::new(Topology::Direct);
    let (source, sink, _records) = agents(&net, &settings(&["proto=udp"]));
    let burst = |port: u16, n: usize| {
        let rx = udp_receiver(&net.dst, port, Duration::from_millis(400));
        udp_send(
            &net.src,
            6400,
            DST_ADDR,
            port,
            &vec![64; n],
            Duration::from_micros(100),
        );
        assert_eq!(rx.join().unwrap().count, n);
    };
    burst(7400, 100);
    assert_eq!(
        source.counters().unwrap().get(Counter::SrcInstrumented),
        100
    );

    // One in 10, changed from "another process" through the interface.
    ctl(&net.src, SRC_IF, Role::Source, |maps| {
        let mut s = Settings::from_config(&maps.config().unwrap());
        s.set("sample", "10").unwrap();
        maps.set_config(&s.to_config()).unwrap();
    });
    burst(7400, 100);
    let c = source.counters().unwrap();
    assert_eq!(c.get(Counter::SrcInstrumented), 110, "{c:?}");
    assert_eq!(c.get(Counter::SrcSampledOut), 90);

    // Minimum interval of 50 ms with packets 100 us apart: few marked.
    let mut s = settings(&["proto=udp", "min_interval_us=50000"]);
    source.reconfigure(&s).unwrap();
    burst(7401, 200);
    let marked = source.counters().unwrap().get(Counter::SrcInstrumented) - 110;
    assert!(
        (1..=3).contains(&marked),
        "{marked} marked with a 50 ms interval over ~20 ms"
    );

    // A port filter that does not match: nothing more is marked.
    s.set_all(["min_interval_us=0", "dport=9999"]).unwrap();
    source.reconfigure(&s).unwrap();
    let before = source.counters().unwrap().get(Counter::SrcMatched);
    burst(7402, 50);
    assert_eq!(source.counters().unwrap().get(Counter::SrcMatched), before);

    // Paused sink: the header stays (the stack skips the unknown option).
    ctl(&net.dst, DST_IF, Role::Sink, |maps| {
        let mut s = Settings::from_config(&maps.config().unwrap());
        s.set("enabled", "false").unwrap();
        maps.set_config(&s.to_config()).unwrap();
    });
    s.set("dport", "any").unwrap();
    source.reconfigure(&s).unwrap();
    let rec_before = sink.counters().unwrap().get(Counter::SinkRecords);
    burst(7403, 20);
    assert_eq!(
        sink.counters().unwrap().get(Counter::SinkRecords),
        rec_before
    );
}

#[test]
fn the_source_runs_its_loaded_configuration_until_another_is_written() {
    if !require_root() {
        return;
    }
    // The source alone: the receiving interface counts each frame with
    // the header in it.
    let net = Net::new(Topology::Direct);
    let s = settings(&["mode=loss", "proto=udp"]);
    let source = netns::run_in(&net.src, move || {
        Agent::start(SRC_IF, Role::Source, &s, LoadOptions::default())
    })
    .unwrap()
    .unwrap();
    assert_header_bytes_per_frame(&net, 7450, 8, "loaded with mode=loss");

    // Other values marked as the loaded ones: the program still runs the
    // configuration it was specialised for, so the map's values are not
    // what it reads on that path.
    let both = settings(&["mode=both", "proto=udp"]).to_config();
    let maps = source.program().maps();
    maps.set_loaded_config(&both).unwrap();
    assert_header_bytes_per_frame(&net, 7451, 8, "map says both, marked as loaded");

    // Any ordinary write (as `inline ctl` and the control API make) takes
    // the general path, which reads the map: now the 32-byte layout.
    maps.set_config(&both).unwrap();
    assert_header_bytes_per_frame(&net, 7452, 32, "written mode=both");
    assert_eq!(maps.config().unwrap().loaded, 0);
    let c = source.counters().unwrap();
    assert_eq!(c.get(Counter::SrcInstrumented), 600, "{c:?}");
}

#[test]
fn oversized_and_fragmented_packets_pass_unmarked() {
    if !require_root() {
        return;
    }
    let net = Net::new(Topology::Direct);
    let (source, sink, _records) = agents(&net, &settings(&[]));
    let rx = udp_receiver(&net.dst, 7500, Duration::from_millis(500));
    // 1452 bytes fill a 1500-byte MTU exactly; 3000 bytes are fragmented.
    udp_send(
        &net.src,
        6500,
        DST_ADDR,
        7500,
        &[1452, 1452, 3000, 100],
        Duration::from_millis(2),
    );
    assert_eq!(rx.join().unwrap().count, 4);
    let c = source.counters().unwrap();
    assert_eq!(c.get(Counter::SrcMtu), 2, "{c:?}");
    assert_eq!(c.get(Counter::SrcFragment), 3, "{c:?}");
    assert_eq!(c.get(Counter::SrcInstrumented), 1, "{c:?}");
    assert_eq!(sink.counters().unwrap().get(Counter::SinkRecords), 1);
}

#[test]
fn a_killed_agents_attachment_is_replaced_and_detach_is_clean() {
    if !require_root() {
        return;
    }
    let net = Net::new(Topology::Direct);
    let start = || {
        netns::run_in(&net.src, || {
            Agent::start(
                SRC_IF,
                Role::Source,
                &Settings::default(),
                LoadOptions::default(),
            )
        })
        .unwrap()
        .unwrap()
    };
    let killed = start();
    let stale_id = killed.program().prog_id();
    // As after SIGKILL: nothing detaches.
    std::mem::forget(killed);
    let query =
        || netns::run_in(&net.src, || inline::query(SRC_IF, Role::Source).unwrap()).unwrap();
    assert_eq!(query(), Some(stale_id));
    let agent = start();
    let id = agent.program().prog_id();
    assert_ne!(id, stale_id);
    assert_eq!(query(), Some(id));
    agent.stop().unwrap();
    assert_eq!(query(), None);
}
