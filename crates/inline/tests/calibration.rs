//! The benchmark's calibration programs: the header-only pair carries a
//! header the real sink recognises and removes it again, leaving the bytes
//! applications receive unchanged; programs attached through tcx leave with
//! their owner.

mod common;

use common::*;
use inline::{
    netns, Agent, Calibration, CalibrationProgram, Counter, LoadOptions, Mode, Role, SinkHook,
};

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

#[test]
fn measurement_floor_push_numbers_each_flow_like_the_source() {
    if !require_root() {
        return;
    }
    let net = Net::new(Topology::Direct);
    let push = netns::run_in(&net.src, || {
        CalibrationProgram::attach(
            SRC_IF,
            Role::Source,
            Calibration::MeasurementFloor(Mode::Loss),
        )
    })
    .unwrap()
    .unwrap();
    // The real sink reads its header as our loss layout: one flow,
    // sequence numbers 0 to 199, each once.
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
    send_200_and_compare(&net, 7102);
    assert_eq!(sink.stop().unwrap(), 200);
    let mut seqs: Vec<u32> = records
        .lock()
        .unwrap()
        .iter()
        .filter_map(|m| m.seq)
        .collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (0..200).collect::<Vec<u32>>());
    drop(push);
}

#[test]
fn measurement_floor_pair_leaves_bytes_unchanged_and_drains_its_records() {
    if !require_root() {
        return;
    }
    // Every layout at both sink hooks. The sink takes only a header of its
    // layout's length (8, 16, 24 or 32 bytes), so records reaching the
    // reader show that both sides carried that length.
    let layouts = [
        Mode::Loss,
        Mode::Both,
        Mode::Delay,
        Mode::Pdm,
        Mode::Compact,
    ];
    for (i, layout) in layouts.into_iter().enumerate() {
        for (j, hook) in [SinkHook::Tc, SinkHook::Xdp].into_iter().enumerate() {
            let floor = Calibration::MeasurementFloor(layout);
            let net = Net::new(Topology::Direct);
            let push = netns::run_in(&net.src, move || {
                CalibrationProgram::attach(SRC_IF, Role::Source, floor)
            })
            .unwrap()
            .unwrap();
            let pop = netns::run_in(&net.dst, move || {
                CalibrationProgram::attach_at(DST_IF, Role::Sink, floor, hook)
            })
            .unwrap()
            .unwrap();
            assert_eq!(push.records_read(), None);
            send_200_and_compare(&net, 7110 + 2 * i as u16 + j as u16);
            std::thread::sleep(inline::POLL_INTERVAL * 5);
            // Full batches of 16 reach the reader; a partial one per CPU
            // waits in the program (no timer: a calibration needs none).
            let read = pop.records_read().unwrap();
            assert!(
                read > 0 && read <= 200 && read % 16 == 0,
                "{layout:?} at {hook:?}: {read}"
            );
            assert_eq!(pop.ring_drops(), Some(0), "{layout:?} at {hook:?}");
            drop(push);
            drop(pop);
            let hooks = sh_in(&net.dst, &["bpftool", "net", "show", "dev", DST_IF]);
            assert!(!hooks.contains("sg_mfloor"), "still attached: {hooks}");
        }
    }
}

#[test]
fn measurement_floor_header_has_its_layouts_length() {
    if !require_root() {
        return;
    }
    // The push alone: the receiving kernel skips the unknown option and
    // delivers the datagrams, and the receiving interface counts each
    // frame with the header in it.
    for (i, (layout, hlen)) in [
        (Mode::Loss, 8u64),
        (Mode::Pdm, 16),
        (Mode::Delay, 24),
        (Mode::Both, 32),
        (Mode::Compact, 8),
    ]
    .into_iter()
    .enumerate()
    {
        let net = Net::new(Topology::Direct);
        let push = netns::run_in(&net.src, move || {
            CalibrationProgram::attach(SRC_IF, Role::Source, Calibration::MeasurementFloor(layout))
        })
        .unwrap()
        .unwrap();
        assert_header_bytes_per_frame(&net, 7130 + i as u16, hlen, &format!("{layout:?}"));
        drop(push);
    }
}
