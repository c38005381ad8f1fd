//! `--oml-samples` / `--oml-interval` apply to `_client_instrumentation`
//! too, as in liboml2: its default stream is averaged, with
//! the reference's `<field>_avg/_min/_max` columns.

mod common;

use std::time::Duration;

use client::spec::{Encoding, Window};
use client::Client;
use common::{decode, file, spec};
use omsp::{OmlType, Value, ValueRef};

fn run(window: Window) -> common::Decoded {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out");
    let mut s = spec("app", vec![file(&path, Encoding::Text)]);
    s.default_window = window;
    s.instr_interval = Some(Duration::from_millis(20));
    let client = Client::new(s).unwrap();
    let mp = client.add_mp("m", &[("v", OmlType::Int32)]).unwrap();
    client.start().unwrap();
    for i in 0..40 {
        mp.inject(&[ValueRef::Int32(i)]).unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
    client.close().unwrap();
    decode(&std::fs::read(&path).unwrap())
}

#[test]
fn samples_window_averages_the_instrumentation_stream() {
    let d = run(Window::Samples(3));
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    let h = d.header.clone().unwrap();
    let instr = h
        .schemas
        .iter()
        .find(|s| s.name == "_client_instrumentation")
        .unwrap();
    let names: Vec<&str> = instr.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        &names[..3],
        [
            "measurements_injected_avg",
            "measurements_injected_min",
            "measurements_injected_max"
        ]
    );
    assert_eq!(names.len(), 18);
    assert!(instr.fields.iter().all(|f| f.ty == OmlType::Double));
    let rows = d.stream(instr.index);
    assert!(!rows.is_empty(), "averaged instrumentation rows are sent");
    for r in &rows {
        assert_eq!(r.values.len(), 18);
        let (Value::Double(avg), Value::Double(min), Value::Double(max)) =
            (&r.values[0], &r.values[1], &r.values[2])
        else {
            panic!("{:?}", r.values)
        };
        assert!(min <= avg && avg <= max, "{:?}", r.values);
    }
}

#[test]
fn without_a_window_the_counters_are_sent_as_they_are() {
    let d = run(Window::PerSample);
    let h = d.header.clone().unwrap();
    let instr = h
        .schemas
        .iter()
        .find(|s| s.name == "_client_instrumentation")
        .unwrap();
    assert_eq!(instr.fields[0].name, "measurements_injected");
    assert_eq!(instr.fields[0].ty, OmlType::UInt32);
    assert!(!d.stream(instr.index).is_empty());
}
