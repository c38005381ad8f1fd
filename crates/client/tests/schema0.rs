//! Schema 0: measurement points added after start, and metadata.

mod common;

use client::spec::Encoding;
use client::{Client, ClientError};
use common::{decode, file, spec, ENCODINGS};
use omsp::{OmlType, Value, ValueRef};

fn strings(v: &[Value]) -> Vec<&str> {
    v.iter()
        .map(|x| match x {
            Value::String(s) => s.as_str(),
            other => panic!("not a string: {other:?}"),
        })
        .collect()
}

#[test]
fn late_mp_is_declared_through_schema0_with_the_next_index() {
    for enc in ENCODINGS {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let client = Client::new(spec("app", vec![file(&path, enc)])).unwrap();
        let early = client.add_mp("early", &[("x", OmlType::Int32)]).unwrap();
        client.start().unwrap();
        early.inject(&[ValueRef::Int32(1)]).unwrap();
        let late = client
            .add_mp("late", &[("y", OmlType::UInt64), ("z", OmlType::Bool)])
            .unwrap();
        late.inject(&[ValueRef::UInt64(7), ValueRef::Bool(true)])
            .unwrap();
        let later = client.add_mp("later", &[("s", OmlType::String)]).unwrap();
        later.inject(&[ValueRef::String("hi")]).unwrap();
        late.inject(&[ValueRef::UInt64(8), ValueRef::Bool(false)])
            .unwrap();
        client.close().unwrap();

        let d = decode(&std::fs::read(&path).unwrap());
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        let declared: Vec<String> = d.schemas.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            declared,
            ["3 app_late y:uint64 z:bool", "4 app_later s:string"],
            "{enc:?}"
        );
        let decl: Vec<Vec<&str>> = d.stream(0).iter().map(|s| strings(&s.values)).collect();
        assert_eq!(
            decl,
            [
                [".", "schema", "3 app_late y:uint64 z:bool"],
                [".", "schema", "4 app_later s:string"]
            ]
        );
        assert_eq!(
            d.stream(0).iter().map(|s| s.seq).collect::<Vec<_>>(),
            [1, 2]
        );
        let late_rows = d.stream(3);
        assert_eq!(late_rows.len(), 2);
        assert_eq!(late_rows[1].values, [Value::UInt64(8), Value::Bool(false)]);
        assert_eq!(late_rows[1].seq, 2);
        assert_eq!(d.stream(4)[0].values, [Value::String("hi".into())]);
    }
}

#[test]
fn metadata_at_three_levels_is_sent_once() {
    for enc in ENCODINGS {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let client = Client::new(spec("app", vec![file(&path, enc)])).unwrap();
        let mp = client
            .add_mp(
                "ping",
                &[("rtt", OmlType::Double), ("host", OmlType::String)],
            )
            .unwrap();
        client.inject_metadata("appname", "ping\tv1").unwrap();
        client.start().unwrap();
        mp.inject_metadata("unit", "ms", Some("rtt")).unwrap();
        mp.inject_metadata("about", "round trips", None).unwrap();
        mp.inject(&[ValueRef::Double(0.5), ValueRef::String("a")])
            .unwrap();
        assert!(matches!(
            mp.inject_metadata("unit", "x", Some("nope")),
            Err(ClientError::NoSuchField { .. })
        ));
        assert!(matches!(
            client.inject_metadata("bad key", "x"),
            Err(ClientError::InvalidName { .. })
        ));
        assert!(matches!(
            client.inject_metadata("schema", "9 x y:int32"),
            Err(ClientError::ReservedKey(_))
        ));
        assert!(matches!(
            client.inject_metadata("domain", "other"),
            Err(ClientError::ReservedKey(_))
        ));
        client.close().unwrap();

        let d = decode(&std::fs::read(&path).unwrap());
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        let meta: Vec<Vec<&str>> = d.stream(0).iter().map(|s| strings(&s.values)).collect();
        assert_eq!(
            meta,
            [
                vec![".", "appname", "ping\tv1"],
                vec![".app_ping.rtt", "unit", "ms"],
                vec![".app_ping", "about", "round trips"],
            ],
            "{enc:?}"
        );
        assert_eq!(
            d.stream(0).iter().map(|s| s.seq).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        let st = client.stats();
        assert_eq!(st.destinations[0].source("_experiment_metadata").written, 3);
    }
}

#[test]
fn long_binary_strings_are_cut_at_a_character_boundary_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out");
    let client = Client::new(spec("app", vec![file(&path, Encoding::Binary)])).unwrap();
    let mp = client.add_mp("m", &[("s", OmlType::String)]).unwrap();
    client.start().unwrap();
    let long = "é".repeat(200); // 400 bytes
    mp.inject(&[ValueRef::String(&long)]).unwrap();
    client.close().unwrap();
    let d = decode(&std::fs::read(&path).unwrap());
    assert_eq!(d.stream(2)[0].values, [Value::String("é".repeat(127))]);
    assert_eq!(client.stats().destinations[0].truncated_strings, 1);
}

#[test]
fn metadata_goes_out_before_the_rows_injected_after_it() {
    // A reader of the store must never see a row without the metadata
    // (a unit, say) declared before it. Declarations and rows travel
    // through different queues inside the client; the writer must still
    // send them in the order they were made, whenever it happens to look.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out");
    let client = Client::new(spec("app", vec![file(&path, Encoding::Text)])).unwrap();
    let mp = client.add_mp("m", &[("n", OmlType::Int32)]).unwrap();
    client.start().unwrap();
    const N: i32 = 5000;
    for i in 0..N {
        mp.inject_metadata("note", &i.to_string(), Some("n"))
            .unwrap();
        mp.inject(&[ValueRef::Int32(i)]).unwrap();
        if i % 64 == 0 {
            // Let the writer run between declarations, as it does in a
            // real program.
            std::thread::yield_now();
        }
    }
    client.close().unwrap();
    let d = decode(&std::fs::read(&path).unwrap());
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    let mut declared = -1;
    let mut rows = 0;
    // Stream 0 is the metadata (others than ours are the client's own
    // reports).
    let m = d
        .header
        .as_ref()
        .unwrap()
        .schemas
        .iter()
        .find(|s| s.name == "app_m");
    let m = m.expect("app_m declared").index;
    for s in d.samples.iter().filter(|s| s.stream == 0 || s.stream == m) {
        match s.values.as_slice() {
            [Value::String(_), Value::String(k), Value::String(v)] if k == "note" => {
                declared = v.parse().unwrap();
            }
            [Value::Int32(n)] => {
                assert!(
                    declared >= *n,
                    "row {n} went out before its metadata (last declared: {declared})"
                );
                rows += 1;
            }
            other => panic!("unexpected sample {other:?}"),
        }
    }
    assert_eq!(rows, N);
}
