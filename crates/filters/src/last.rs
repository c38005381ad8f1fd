//! `last` (reference): the last value of each window.
//!
//! One column, `<prefix>_last`, of the input type. An empty window repeats
//! the previously emitted value; before any value was ever seen that is the
//! type's zero. Samples of another type than the field's are ignored.

use omsp::{OmlType, Value, ValueRef};

use crate::props::Props;
use crate::value::assign;
use crate::{Filter, FilterError, Output, Property};

/// The `last` filter.
pub(crate) struct Last {
    /// The `_last` column.
    outputs: [Output; 1],
    /// The field type; samples of other types are ignored.
    input: OmlType,
    /// The latest value seen, in this window or before.
    value: Value,
}

impl Last {
    /// Creates the filter; it takes any input type and no properties.
    pub(crate) fn new(input: OmlType, props: &[Property]) -> Result<Self, FilterError> {
        Props::new("last", props, &[])?;
        Ok(Last {
            outputs: [Output::named("last", input)],
            input,
            value: Value::zero(input),
        })
    }
}

impl Filter for Last {
    fn outputs(&self) -> &[Output] {
        &self.outputs
    }

    fn sample(&mut self, value: ValueRef<'_>, _ts: f64) {
        if value.oml_type() == self.input {
            assign(&mut self.value, value);
        }
    }

    fn emit(&mut self, _now: f64, out: &mut Vec<Value>) {
        out.push(self.value.clone());
    }
}

#[cfg(test)]
mod tests {
    use omsp::{OmlType, Value, ValueRef};

    use crate::testutil::{emit, make};

    #[test]
    fn last_of_each_window_and_repeat_when_empty() {
        let mut f = make("last", OmlType::VecInt32);
        assert_eq!(f.outputs()[0].suffix.as_deref(), Some("last"));
        assert_eq!(emit(&mut *f, 0.0), [Value::VecInt32(vec![])]);
        f.sample(ValueRef::VecInt32(&[1, 2]), 0.0);
        f.sample(ValueRef::VecInt32(&[3]), 0.5);
        assert_eq!(emit(&mut *f, 1.0), [Value::VecInt32(vec![3])]);
        assert_eq!(emit(&mut *f, 2.0), [Value::VecInt32(vec![3])]);
        f.sample(ValueRef::String("ignored"), 2.5);
        f.sample(ValueRef::VecInt32(&[4, 5]), 2.6);
        assert_eq!(emit(&mut *f, 3.0), [Value::VecInt32(vec![4, 5])]);
    }
}
