//! The `Filter` contract, through the public API: every filter, over every
//! input type it takes, emits exactly its declared columns, whatever it is fed.

use filters::{catalogue, column_name, create, FilterError, Property};
use omsp::{OmlType, Value};
use proptest::prelude::*;

/// Raw material for one value; [`value_of`] shapes it into a type.
#[derive(Debug, Clone)]
struct Raw {
    int: i64,
    float: f64,
    text: String,
    list: Vec<i64>,
    /// Use the type at this index of `OmlType::ALL` instead of the field's.
    other_type: Option<usize>,
}

fn raw() -> impl Strategy<Value = Raw> {
    (
        prop_oneof![any::<i64>(), -5i64..50],
        prop_oneof![any::<f64>(), -1e3f64..1e3],
        "[a-z]{0,6}",
        prop::collection::vec(any::<i64>(), 0..4),
        prop::option::weighted(0.1, 0..OmlType::ALL.len()),
    )
        .prop_map(|(int, float, text, list, other_type)| Raw {
            int,
            float,
            text,
            list,
            other_type,
        })
}

/// A value of type `ty` built from `raw` (or of another type, sometimes).
fn value_of(ty: OmlType, raw: &Raw) -> Value {
    let ty = raw.other_type.map_or(ty, |i| OmlType::ALL[i]);
    let ints = || raw.list.iter().copied();
    match ty {
        OmlType::Int32 => Value::Int32(raw.int as i32),
        OmlType::UInt32 => Value::UInt32(raw.int as u32),
        OmlType::Int64 => Value::Int64(raw.int),
        OmlType::UInt64 => Value::UInt64(raw.int as u64),
        OmlType::Double => Value::Double(raw.float),
        OmlType::String => Value::String(raw.text.clone()),
        OmlType::Blob => Value::Blob(raw.text.clone().into_bytes()),
        OmlType::Guid => Value::Guid(raw.int as u64),
        OmlType::Bool => Value::Bool(raw.int % 2 == 0),
        OmlType::VecDouble => Value::VecDouble(ints().map(|x| x as f64).collect()),
        OmlType::VecInt32 => Value::VecInt32(ints().map(|x| x as i32).collect()),
        OmlType::VecUInt32 => Value::VecUInt32(ints().map(|x| x as u32).collect()),
        OmlType::VecInt64 => Value::VecInt64(ints().collect()),
        OmlType::VecUInt64 => Value::VecUInt64(ints().map(|x| x as u64).collect()),
        OmlType::VecBool => Value::VecBool(ints().map(|x| x > 0).collect()),
    }
}

/// One step of a run: a sample after `dt` seconds, or an emit.
#[derive(Debug, Clone)]
enum Op {
    Sample(Raw, f64),
    Emit(f64),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            4 => (raw(), 0.0f64..2.0).prop_map(|(r, dt)| Op::Sample(r, dt)),
            1 => (0.0f64..2.0).prop_map(Op::Emit),
        ],
        0..60,
    )
}

fn prop(name: &str, value: &str) -> Property {
    Property {
        name: name.into(),
        ty: "string".into(),
        value: value.into(),
    }
}

/// The property sets each filter is exercised with.
fn property_sets(name: &str) -> Vec<Vec<Property>> {
    let mut sets = vec![vec![]];
    match name {
        "histogram" => {
            sets.push(vec![prop("bins", "5")]);
            sets.push(vec![
                prop("bins", "3"),
                prop("min", "-10"),
                prop("max", "10"),
            ]);
        }
        "quantile" => sets.push(vec![prop("q", "0.01,0.5,0.999"), prop("accuracy", "0.05")]),
        _ => {}
    }
    sets
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_emit_matches_the_declared_outputs(steps in ops()) {
        for info in catalogue() {
            for props in property_sets(info.name) {
                for ty in OmlType::ALL {
                    let mut f = match create(info.name, "f", ty, &props) {
                        Ok(f) => f,
                        Err(FilterError::Input { .. }) => continue,
                        Err(e) => panic!("{}({ty}): {e}", info.name),
                    };
                    let outputs = f.outputs().to_vec();
                    prop_assert!(!outputs.is_empty());
                    let mut now = 0.0;
                    let mut out = Vec::new();
                    for step in steps.iter().chain([&Op::Emit(0.5)]) {
                        match step {
                            Op::Sample(raw, dt) => {
                                now += dt;
                                let v = value_of(ty, raw);
                                f.sample(v.as_value_ref(), now);
                            }
                            Op::Emit(dt) => {
                                now += dt;
                                out.clear();
                                f.emit(now, &mut out);
                                prop_assert_eq!(out.len(), outputs.len(), "{}({})", info.name, ty);
                                for (v, o) in out.iter().zip(&outputs) {
                                    prop_assert_eq!(v.oml_type(), o.ty, "{}({})", info.name, ty);
                                }
                                prop_assert_eq!(f.outputs(), &outputs[..]);
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn quantiles_stay_within_the_accuracy(
        values in prop::collection::vec(
            prop_oneof![-1e6f64..1e6, 1e-3f64..10.0, (0i32..100).prop_map(f64::from)],
            1..400,
        ),
    ) {
        let mut f = create("quantile", "x", OmlType::Double, &[prop("q", "0.1,0.5,0.9,0.99")]).unwrap();
        for v in &values {
            f.sample(omsp::ValueRef::Double(*v), 0.0);
        }
        let mut out = Vec::new();
        f.emit(1.0, &mut out);
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        for (q, got) in [0.1, 0.5, 0.9, 0.99].iter().zip(&out) {
            let Value::Double(got) = got else { panic!("{got:?}") };
            let want = sorted[(q * (sorted.len() - 1) as f64).floor() as usize];
            prop_assert!((got - want).abs() <= 0.01 * want.abs() * (1.0 + 1e-9), "q{}: {} vs {}", q, got, want);
        }
    }
}

#[test]
fn the_reference_example_schema() {
    // `--oml-samples 3` on `i:int32 d:double s:string` (spec §8.6).
    let mut columns = Vec::new();
    for (field, ty) in [
        ("i", OmlType::Int32),
        ("d", OmlType::Double),
        ("s", OmlType::String),
    ] {
        let op = filters::default_operation(ty, true);
        let f = create(op, field, ty, &[]).unwrap();
        for o in f.outputs() {
            columns.push(format!("{}:{}", column_name(field, o), o.ty));
        }
    }
    assert_eq!(
        columns.join(" "),
        "i_avg:double i_min:double i_max:double d_avg:double d_min:double d_max:double s:string"
    );
}
