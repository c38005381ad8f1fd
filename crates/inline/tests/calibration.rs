//! The benchmark's calibration programs: the header-only pair carries a
//! header the real sink recognises and removes it again, leaving the bytes
//! applications receive unchanged; programs attached through tcx leave with
//! their owner.

mod common;

use common::*;
use inline::{netns, Agent, Calibration, CalibrationProgram, Counter, LoadOptions, Role};

/// 200 datagrams of assorted sizes to `port`: all arrive, byte for byte.
fn send_200_and_compare(net: &Net, port: u16) {
    udp_sizes_arrive(net, 200, port - 1000, port);
}

#[test]
fn header_only_push_is_a_valid_loss_header() {
    if !require_root() {
        return;
    }
    let net = Net::new(Topology::Direct);
    let push = netns::run_in(&net.src, || {
        CalibrationProgram::attach(SRC_IF, Role::Source, Calibration::Floor)
    })
    .unwrap()
    .unwrap();
    // The real sink, accepting the loss layout: every packet is a record
    // with sequence 0, and the header is gone before the application.
    let s = settings(&["mode=loss"]);
    let mut sink = netns::run_in(&net.dst, move || {
        Agent::start(DST_IF, Role::Sink, &s, LoadOptions::default())
    })
    .unwrap()
    .unwrap();
    let records: Records = Default::default();
    let r = records.clone();
    sink.read_records(move |m| r.lock().unwrap().push(m))
        .unwrap();
    send_200_and_compare(&net, 7100);
    assert_eq!(sink.counters().unwrap().get(Counter::SinkRecords), 200);
    assert_eq!(sink.stop().unwrap(), 200);
    assert!(records.lock().unwrap().iter().all(|m| m.seq == Some(0)));
    drop(push);
}

#[test]
fn header_only_pair_leaves_bytes_unchanged_and_detaches_on_drop() {
    if !require_root() {
        return;
    }
    let net = Net::new(Topology::Direct);
    let attach = |ns: &str, dev: &'static str, role| {
        netns::run_in(ns, move || {
            CalibrationProgram::attach(dev, role, Calibration::Floor)
        })
        .unwrap()
        .unwrap()
    };
    let push = attach(&net.src, SRC_IF, Role::Source);
    let pop = attach(&net.dst, DST_IF, Role::Sink);
    send_200_and_compare(&net, 7101);
    drop(push);
    drop(pop);
    let hooks = sh_in(&net.src, &["bpftool", "net", "show", "dev", SRC_IF]);
    assert!(!hooks.contains("sg_floor"), "still attached: {hooks}");
}
