//! Helpers for the filters' unit tests.

use omsp::{OmlType, Value, ValueRef};

use crate::{create, Filter, Property};

/// Creates `operation` over a field of type `ty` with no properties.
pub(crate) fn make(operation: &str, ty: OmlType) -> Box<dyn Filter> {
    make_with(operation, ty, &[])
}

/// Creates `operation` over a field of type `ty` with `(name, value)` properties.
pub(crate) fn make_with(operation: &str, ty: OmlType, props: &[(&str, &str)]) -> Box<dyn Filter> {
    let props: Vec<Property> = props
        .iter()
        .map(|(name, value)| Property {
            name: (*name).into(),
            ty: "string".into(),
            value: (*value).into(),
        })
        .collect();
    match create(operation, "f", ty, &props) {
        Ok(f) => f,
        Err(e) => panic!("{operation}: {e}"),
    }
}

/// Feeds doubles at times 0, 1, 2… and emits at `now`.
pub(crate) fn window(f: &mut dyn Filter, values: &[f64], now: f64) -> Vec<Value> {
    for (i, v) in values.iter().enumerate() {
        f.sample(ValueRef::Double(*v), i as f64);
    }
    emit(f, now)
}

/// Emits one row at `now`, checking it against the declared outputs.
pub(crate) fn emit(f: &mut dyn Filter, now: f64) -> Vec<Value> {
    let mut out = Vec::new();
    f.emit(now, &mut out);
    assert_eq!(out.len(), f.outputs().len());
    for (v, o) in out.iter().zip(f.outputs()) {
        assert_eq!(v.oml_type(), o.ty);
    }
    out
}

/// Doubles as values.
pub(crate) fn doubles(values: &[f64]) -> Vec<Value> {
    values.iter().map(|v| Value::Double(*v)).collect()
}

/// Asserts that two rows are equal, NaN matching NaN.
#[track_caller]
pub(crate) fn assert_row(got: &[Value], want: &[Value]) {
    assert!(
        got.len() == want.len() && got.iter().zip(want).all(|(a, b)| a.same_as(b)),
        "got {got:?}, want {want:?}"
    );
}

/// The `f64` in a `Value::Double`.
pub(crate) fn double(v: &Value) -> f64 {
    match v {
        Value::Double(x) => *x,
        other => panic!("not a double: {other:?}"),
    }
}
