//! Value helpers shared by the filters: numeric conversion, the zero value of
//! a type, and in-place assignment that reuses buffers.

use omsp::{OmlType, Value, ValueRef};

use crate::FilterError;

/// The value as a double, for the aggregating filters: every scalar numeric
/// variant converts (64-bit integers beyond 2^53 round); `bool` and the
/// others are not numeric.
pub(crate) fn to_f64(v: ValueRef<'_>) -> Option<f64> {
    match v {
        ValueRef::Int32(x) => Some(f64::from(x)),
        ValueRef::UInt32(x) => Some(f64::from(x)),
        ValueRef::Int64(x) => Some(x as f64),
        ValueRef::UInt64(x) => Some(x as f64),
        ValueRef::Double(x) => Some(x),
        _ => None,
    }
}

/// Overwrites `dst` with `src`, reusing `dst`'s buffer when both are of the
/// same variable-length type (a `last` filter on a string field then does not
/// allocate per sample).
pub(crate) fn assign(dst: &mut Value, src: ValueRef<'_>) {
    fn refill<T: Clone>(dst: &mut Vec<T>, src: &[T]) {
        dst.clear();
        dst.extend_from_slice(src);
    }
    match (dst, src) {
        (Value::String(d), ValueRef::String(s)) => {
            d.clear();
            d.push_str(s);
        }
        (Value::Blob(d), ValueRef::Blob(s)) => refill(d, s),
        (Value::VecDouble(d), ValueRef::VecDouble(s)) => refill(d, s),
        (Value::VecInt32(d), ValueRef::VecInt32(s)) => refill(d, s),
        (Value::VecUInt32(d), ValueRef::VecUInt32(s)) => refill(d, s),
        (Value::VecInt64(d), ValueRef::VecInt64(s)) => refill(d, s),
        (Value::VecUInt64(d), ValueRef::VecUInt64(s)) => refill(d, s),
        (Value::VecBool(d), ValueRef::VecBool(s)) => refill(d, s),
        (d, s) => *d = s.to_value(),
    }
}

/// Fails with [`FilterError::Input`] unless `ok`.
pub(crate) fn require_input(
    filter: &str,
    ty: OmlType,
    ok: bool,
    accepted: &'static str,
) -> Result<(), FilterError> {
    if ok {
        Ok(())
    } else {
        Err(FilterError::Input {
            filter: filter.to_owned(),
            ty,
            accepted,
        })
    }
}

/// Fails with [`FilterError::Input`] unless `ty` is a scalar numeric type.
pub(crate) fn require_numeric(filter: &str, ty: OmlType) -> Result<(), FilterError> {
    require_input(filter, ty, ty.is_numeric(), NUMERIC)
}

/// How the numeric filters describe their accepted inputs.
pub(crate) const NUMERIC: &str = "a numeric type (int32, uint32, int64, uint64, double)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_conversion_covers_the_numeric_types_only() {
        assert_eq!(to_f64(ValueRef::Int32(-3)), Some(-3.0));
        assert_eq!(to_f64(ValueRef::UInt32(3)), Some(3.0));
        assert_eq!(to_f64(ValueRef::Int64(-1 << 40)), Some(-(2f64.powi(40))));
        assert_eq!(to_f64(ValueRef::UInt64(u64::MAX)), Some(u64::MAX as f64));
        assert_eq!(to_f64(ValueRef::Double(0.5)), Some(0.5));
        assert_eq!(to_f64(ValueRef::Bool(true)), None);
        assert_eq!(to_f64(ValueRef::String("1")), None);
        assert_eq!(to_f64(ValueRef::Guid(1)), None);
    }

    #[test]
    fn assign_reuses_and_replaces() {
        let mut v = Value::String("long previous value".into());
        assign(&mut v, ValueRef::String("x"));
        assert_eq!(v, Value::String("x".into()));
        assign(&mut v, ValueRef::Int32(7));
        assert_eq!(v, Value::Int32(7));
        let mut w = Value::VecUInt64(vec![1, 2, 3]);
        assign(&mut w, ValueRef::VecUInt64(&[9]));
        assert_eq!(w, Value::VecUInt64(vec![9]));
    }
}
