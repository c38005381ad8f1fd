//! `first` (reference): the first value of each window.
//!
//! One column, the bare prefix, of the input type. An empty window repeats
//! the previously emitted value; before any value was ever seen that is the
//! type's zero (`0`, `false`, or empty). Samples of another type than the
//! field's are ignored (the reference discards them with a warning).

use omsp::{OmlType, Value, ValueRef};

use crate::props::Props;
use crate::value::assign;
use crate::{Filter, FilterError, Output, Property};

/// The `first` filter.
pub(crate) struct First {
    /// The single bare-prefix column.
    outputs: [Output; 1],
    /// The field type; samples of other types are ignored.
    input: OmlType,
    /// This window's first value once `seen`, else the last emitted one.
    value: Value,
    /// Whether this window has a value yet.
    seen: bool,
}

impl First {
    /// Creates the filter; it takes any input type and no properties.
    pub(crate) fn new(input: OmlType, props: &[Property]) -> Result<Self, FilterError> {
        Props::new("first", props, &[])?;
        Ok(First {
            outputs: [Output {
                suffix: None,
                ty: input,
            }],
            input,
            value: Value::zero(input),
            seen: false,
        })
    }
}

impl Filter for First {
    fn outputs(&self) -> &[Output] {
        &self.outputs
    }

    fn sample(&mut self, value: ValueRef<'_>, _ts: f64) {
        if !self.seen && value.oml_type() == self.input {
            assign(&mut self.value, value);
            self.seen = true;
        }
    }

    fn emit(&mut self, _now: f64, out: &mut Vec<Value>) {
        out.push(self.value.clone());
        self.seen = false;
    }
}

#[cfg(test)]
mod tests {
    use omsp::{OmlType, Value, ValueRef};

    use crate::testutil::{emit, make};

    #[test]
    fn first_of_each_window_and_repeat_when_empty() {
        let mut f = make("first", OmlType::String);
        assert_eq!(f.outputs()[0].suffix, None);
        assert_eq!(emit(&mut *f, 0.0), [Value::String(String::new())]);
        f.sample(ValueRef::String("a"), 0.0);
        f.sample(ValueRef::String("b"), 0.1);
        assert_eq!(emit(&mut *f, 1.0), [Value::String("a".into())]);
        f.sample(ValueRef::String("c"), 1.5);
        assert_eq!(emit(&mut *f, 2.0), [Value::String("c".into())]);
        assert_eq!(emit(&mut *f, 3.0), [Value::String("c".into())]);
    }

    #[test]
    fn other_types_are_ignored() {
        let mut f = make("first", OmlType::Int32);
        f.sample(ValueRef::Double(2.0), 0.0);
        f.sample(ValueRef::Int32(5), 0.0);
        assert_eq!(emit(&mut *f, 1.0), [Value::Int32(5)]);
    }
}
