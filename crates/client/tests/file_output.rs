//! A file destination decodes to exactly what was injected.

mod common;

use client::spec::Encoding;
use client::Client;
use common::{decode, file, spec, ENCODINGS};
use omsp::{OmlType, Value, ValueRef};

/// One value of every type; doubles that DOUBLE_T carries exactly.
fn all_types(i: i32) -> Vec<Value> {
    vec![
        Value::Int32(-7 * i),
        Value::UInt32(u32::MAX - i as u32),
        Value::Int64(i64::MIN + i64::from(i)),
        Value::UInt64(u64::MAX),
        Value::Double(100.125 * f64::from(i)),
        Value::String(format!("tab\there nl\nback\\slash é {i}")),
        Value::Blob(vec![0, 1, 0xff, i as u8]),
        Value::Guid(0x0123_4567_89AB_CDEF),
        Value::Bool(i % 2 == 0),
        Value::VecDouble(vec![1.5, -2.25, 1e10, 0.1]),
        Value::VecInt32(vec![-1, 0, i32::MAX]),
        Value::VecUInt32(vec![]),
        Value::VecInt64(vec![i64::MIN, i64::MAX]),
        Value::VecUInt64(vec![0, u64::MAX]),
        Value::VecBool(vec![true, false, true]),
    ]
}

const NAMES: [&str; 15] = [
    "i32", "u32", "i64", "u64", "dbl", "str", "blb", "gid", "bol", "vd", "vi32", "vu32", "vi64",
    "vu64", "vb",
];

#[test]
fn every_type_round_trips_in_text_and_binary() {
    for enc in ENCODINGS {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let client = Client::new(spec("app", vec![file(&path, enc)])).unwrap();
        let types: Vec<(&str, OmlType)> = NAMES
            .iter()
            .zip(all_types(1))
            .map(|(n, v)| (*n, v.oml_type()))
            .collect();
        let mp = client.add_mp("all", &types).unwrap();
        client.start().unwrap();
        let tuples: Vec<Vec<Value>> = (1..=3).map(all_types).collect();
        for t in &tuples {
            let refs: Vec<ValueRef<'_>> = t.iter().map(Value::as_value_ref).collect();
            mp.inject(&refs).unwrap();
        }
        client.close().unwrap();

        let d = decode(&std::fs::read(&path).unwrap());
        assert!(d.errors.is_empty(), "{enc:?}: {:?}", d.errors);
        let h = d.header.clone().unwrap();
        assert_eq!(h.domain.as_deref(), Some("dom"));
        assert_eq!(h.sender_id.as_deref(), Some("sender1"));
        assert_eq!(h.app_name.as_deref(), Some("app"));
        assert_eq!(h.start_time, client.start_time());
        let names: Vec<&str> = h.schemas.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["_experiment_metadata", "_client_instrumentation", "app_all"]
        );
        assert_eq!(h.schemas[2].index, 2);
        let rows = d.stream(2);
        assert_eq!(rows.len(), 3, "{enc:?}");
        let mut last_ts = 0.0;
        for (i, (row, want)) in rows.iter().zip(&tuples).enumerate() {
            assert_eq!(row.seq, i as i64 + 1);
            assert!(row.ts >= last_ts && row.ts < 60.0, "ts {}", row.ts);
            last_ts = row.ts;
            for (got, want) in row.values.iter().zip(want) {
                assert!(got.same_as(want), "{enc:?}: {got:?} != {want:?}");
            }
        }
        // One report after the first sample, and one at close.
        let instr = d.stream(1);
        assert!(!instr.is_empty());
        assert_eq!(instr.last().unwrap().values[0], Value::UInt32(3));
        assert_eq!(
            instr.iter().map(|s| s.seq).collect::<Vec<_>>(),
            (1..=instr.len() as i64).collect::<Vec<_>>()
        );
        let st = client.stats();
        assert_eq!(st.injected, 3);
        assert_eq!(st.destinations[0].source("all").written, 3);
        assert_eq!(st.destinations[0].dropped, 0);
    }
}

#[test]
fn wrong_arity_and_types_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let client = Client::new(spec(
        "app",
        vec![file(&dir.path().join("o"), Encoding::Text)],
    ))
    .unwrap();
    let mp = client
        .add_mp("m", &[("a", OmlType::Int32), ("b", OmlType::String)])
        .unwrap();
    assert!(matches!(
        mp.inject(&[ValueRef::Int32(1), ValueRef::String("x")]),
        Err(client::ClientError::NotStarted)
    ));
    client.start().unwrap();
    assert!(matches!(
        mp.inject(&[ValueRef::Int32(1)]),
        Err(client::ClientError::Arity {
            expected: 2,
            found: 1,
            ..
        })
    ));
    assert!(matches!(
        mp.inject(&[ValueRef::Int32(1), ValueRef::Int32(2)]),
        Err(client::ClientError::Type { .. })
    ));
    assert!(client.add_mp("m", &[("a", OmlType::Int32)]).is_err());
    assert!(client.add_mp("bad-name", &[("a", OmlType::Int32)]).is_err());
    assert!(client.add_mp("x", &[("9a", OmlType::Int32)]).is_err());
    assert!(client.add_mp("y", &[]).is_err());
    client.close().unwrap();
    assert!(matches!(
        mp.inject(&[ValueRef::Int32(1), ValueRef::String("x")]),
        Err(client::ClientError::Closed)
    ));
}

#[test]
fn flushfile_appends_and_dropping_the_client_closes_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out");
    for round in 0..2 {
        let mut dest = file(&path, Encoding::Binary);
        dest.uri = client::spec::Uri::FlushFile(path.clone());
        let client = Client::new(spec("app", vec![dest])).unwrap();
        let mp = client.add_mp("m", &[("x", OmlType::Int32)]).unwrap();
        client.start().unwrap();
        mp.inject(&[ValueRef::Int32(round)]).unwrap();
        drop(client);
        // The Mp handle outlives the client: injects now fail cleanly.
        assert!(mp.inject(&[ValueRef::Int32(9)]).is_err());
    }
    // Two sessions back to back, as liboml2's append mode gives.
    let bytes = std::fs::read(&path).unwrap();
    let second = bytes
        .windows(12)
        .rposition(|w| w == b"protocol: 5\n")
        .unwrap();
    assert!(second > 0);
    assert_eq!(
        decode(&bytes[..second]).stream(2)[0].values,
        [Value::Int32(0)]
    );
    assert_eq!(
        decode(&bytes[second..]).stream(2)[0].values,
        [Value::Int32(1)]
    );
}

#[test]
fn noop_clients_accept_everything_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out");
    let mut s = spec("app", vec![file(&path, Encoding::Text)]);
    s.noop = true;
    let client = Client::new(s).unwrap();
    let mp = client.add_mp("m", &[("x", OmlType::Int32)]).unwrap();
    client.start().unwrap();
    mp.inject(&[ValueRef::Int32(1)]).unwrap();
    assert!(
        mp.inject(&[ValueRef::Double(1.0)]).is_err(),
        "misuse is still reported"
    );
    client.inject_metadata("k", "v").unwrap();
    client.close().unwrap();
    assert!(!path.exists());
    assert_eq!(client.stats().injected, 0);
}

#[test]
fn a_sample_larger_than_a_queue_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let options = client::Options {
        ring_bytes: 4096,
        ..client::Options::default()
    };
    let client = Client::with_options(
        spec("app", vec![file(&dir.path().join("o"), Encoding::Binary)]),
        options,
    )
    .unwrap();
    let mp = client.add_mp("m", &[("b", OmlType::Blob)]).unwrap();
    client.start().unwrap();
    let big = vec![0u8; 10_000];
    assert!(matches!(
        mp.inject(&[ValueRef::Blob(&big)]),
        Err(client::ClientError::SampleTooLarge {
            size: 10_024,
            capacity: 4096
        })
    ));
    mp.inject(&[ValueRef::Blob(&big[..1000])]).unwrap();
    client.close().unwrap();
}
