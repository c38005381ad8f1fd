//! Streams with windows and filters, and configuration errors at start.

mod common;

use client::spec::{Encoding, FilterSpec, StreamSpec, Window};
use client::{Client, ClientError};
use common::{decode, file, spec};
use omsp::{OmlType, Value, ValueRef};

fn fields() -> [(&'static str, OmlType); 3] {
    [
        ("i", OmlType::Int32),
        ("d", OmlType::Double),
        ("s", OmlType::String),
    ]
}

fn inject(mp: &client::Mp, i: i32) {
    mp.inject(&[
        ValueRef::Int32(i),
        ValueRef::Double(f64::from(i) / 2.0),
        ValueRef::String("x"),
    ])
    .unwrap();
}

fn columns(s: &omsp::Schema) -> Vec<String> {
    s.fields
        .iter()
        .map(|f| format!("{}:{}", f.name, f.ty))
        .collect()
}

#[test]
fn sample_windows_average_numbers_and_flush_the_partial_window_at_close() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out");
    let mut s = spec("app", vec![file(&path, Encoding::Text)]);
    s.default_window = Window::Samples(3);
    let client = Client::new(s).unwrap();
    let mp = client.add_mp("m", &fields()).unwrap();
    client.start().unwrap();
    for i in 1..=7 {
        inject(&mp, i);
    }
    client.close().unwrap();
    let d = decode(&std::fs::read(&path).unwrap());
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    let h = d.header.clone().unwrap();
    assert_eq!(
        columns(&h.schemas[2]),
        [
            "i_avg:double",
            "i_min:double",
            "i_max:double",
            "d_avg:double",
            "d_min:double",
            "d_max:double",
            "s:string"
        ]
    );
    let rows = d.stream(2);
    let avg: Vec<&Value> = rows.iter().map(|r| &r.values[0]).collect();
    assert_eq!(
        avg,
        [
            &Value::Double(2.0),
            &Value::Double(5.0),
            &Value::Double(7.0)
        ]
    );
    assert_eq!(rows.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(rows[1].values[2], Value::Double(6.0));
    assert_eq!(rows[0].values[6], Value::String("x".into()));
}

#[test]
fn explicit_streams_rename_select_and_reorder_columns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out");
    let mut dest = file(&path, Encoding::Text);
    let f = |field: &str, op: Option<&str>, rename: Option<&str>| FilterSpec {
        field: field.into(),
        operation: op.map(Into::into),
        rename: rename.map(Into::into),
        properties: Vec::new(),
    };
    dest.streams = Some(vec![
        StreamSpec {
            mp: "m".into(),
            name: Some("raw".into()),
            window: Window::PerSample,
            filters: vec![f("s", None, Some("label")), f("i", Some("first"), None)],
        },
        StreamSpec {
            mp: "m".into(),
            name: None,
            window: Window::Samples(2),
            filters: vec![f("d", Some("max"), Some("top"))],
        },
    ]);
    let client = Client::new(spec("app", vec![dest])).unwrap();
    let mp = client.add_mp("m", &fields()).unwrap();
    client.start().unwrap();
    for i in 1..=4 {
        inject(&mp, i);
    }
    client.close().unwrap();
    let d = decode(&std::fs::read(&path).unwrap());
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    let h = d.header.clone().unwrap();
    assert_eq!(h.schemas[2].name, "app_raw");
    assert_eq!(columns(&h.schemas[2]), ["label:string", "i:int32"]);
    assert_eq!(h.schemas[3].name, "app_m");
    assert_eq!(columns(&h.schemas[3]), ["top_max:double"]);
    assert_eq!(
        d.stream(2)[3].values,
        [Value::String("x".into()), Value::Int32(4)]
    );
    let maxes: Vec<&Value> = d.stream(3).iter().map(|r| &r.values[0]).collect();
    assert_eq!(maxes, [&Value::Double(1.0), &Value::Double(2.0)]);
}

#[test]
fn configuration_errors_at_start_name_the_valid_choices() {
    let dir = tempfile::tempdir().unwrap();
    let stream = |mp: &str, field: &str, op: &str| StreamSpec {
        mp: mp.into(),
        name: None,
        window: Window::PerSample,
        filters: vec![FilterSpec {
            field: field.into(),
            operation: Some(op.into()),
            rename: None,
            properties: Vec::new(),
        }],
    };
    let start = |st: StreamSpec| {
        let mut dest = file(&dir.path().join("o"), Encoding::Text);
        dest.streams = Some(vec![st]);
        let client = Client::new(spec("app", vec![dest])).unwrap();
        client.add_mp("m", &fields()).unwrap();
        client.add_mp("n", &fields()).unwrap();
        client.start().map(|_| ())
    };
    match start(stream("nope", "i", "first")) {
        Err(ClientError::UnknownMp { mp, valid, .. }) => {
            assert_eq!(mp, "nope");
            assert_eq!(valid, "m, n");
        }
        other => panic!("{other:?}"),
    }
    match start(stream("m", "zz", "first")) {
        Err(ClientError::UnknownField { field, valid, .. }) => {
            assert_eq!(field, "zz");
            assert_eq!(valid, "i, d, s");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        start(stream("m", "i", "bogus")),
        Err(ClientError::Filter { .. })
    ));
    assert!(matches!(
        start(stream("m", "s", "avg")),
        Err(ClientError::Filter { .. })
    ));
}

#[test]
fn late_mp_declares_its_filtered_columns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out");
    let mut s = spec("app", vec![file(&path, Encoding::Binary)]);
    s.default_window = Window::Samples(2);
    let client = Client::new(s).unwrap();
    client.start().unwrap();
    let mp = client.add_mp("late", &[("x", OmlType::UInt32)]).unwrap();
    for i in 0..4 {
        mp.inject(&[ValueRef::UInt32(i)]).unwrap();
    }
    client.close().unwrap();
    let d = decode(&std::fs::read(&path).unwrap());
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    assert_eq!(
        d.schemas[0].to_string(),
        "2 app_late x_avg:double x_min:double x_max:double"
    );
    assert_eq!(d.stream(2).len(), 2);
}
