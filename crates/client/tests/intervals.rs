//! Interval windows: emitted on the writer's clock, with no thread per
//! stream. (Alone in its test binary, so that the thread count is its own.)

mod common;

use std::time::Duration;

use client::spec::{Encoding, FilterSpec, StreamSpec, Window};
use client::Client;
use common::{decode, file, spec};
use omsp::{OmlType, Value, ValueRef};

fn columns(s: &omsp::Schema) -> Vec<String> {
    s.fields
        .iter()
        .map(|f| format!("{}:{}", f.name, f.ty))
        .collect()
}

#[test]
fn interval_windows_emit_on_the_writer_clock_without_a_thread_per_stream() {
    let threads = || {
        std::fs::read_dir("/proc/self/task")
            .map(|d| d.count())
            .unwrap_or(0)
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out");
    let mut dest = file(&path, Encoding::Binary);
    dest.streams = Some(
        (0..10)
            .map(|k| StreamSpec {
                mp: "m".into(),
                name: Some(format!("every{k}")),
                window: Window::Interval(Duration::from_millis(100)),
                filters: vec![FilterSpec {
                    field: "i".into(),
                    operation: Some("sum".into()),
                    rename: None,
                    properties: Vec::new(),
                }],
            })
            .collect(),
    );
    let client = Client::new(spec("app", vec![dest])).unwrap();
    let mp = client.add_mp("m", &[("i", OmlType::Int32)]).unwrap();
    let before = threads();
    client.start().unwrap();
    let during = threads();
    for i in 1..=40 {
        mp.inject(&[ValueRef::Int32(i)]).unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
    client.close().unwrap();
    if before > 0 {
        assert_eq!(
            during - before,
            2,
            "one writer and one sender, whatever the stream count"
        );
    }
    let d = decode(&std::fs::read(&path).unwrap());
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    let h = d.header.clone().unwrap();
    assert_eq!(h.schemas.len(), 12);
    assert_eq!(h.schemas[2].name, "app_every0");
    assert_eq!(columns(&h.schemas[2]), ["i_sum:double"]);
    for index in 2..12 {
        let rows = d.stream(index);
        assert!(rows.len() >= 3, "stream {index}: {} rows", rows.len());
        // Every sample is in exactly one window (the last one flushed at close).
        let total: f64 = rows
            .iter()
            .map(|r| match r.values[0] {
                Value::Double(x) => x,
                _ => panic!(),
            })
            .sum();
        assert_eq!(total, (1..=40).sum::<i32>() as f64, "stream {index}");
        assert!(rows.windows(2).all(|w| w[1].ts > w[0].ts));
    }
}
