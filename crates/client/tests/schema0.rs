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
