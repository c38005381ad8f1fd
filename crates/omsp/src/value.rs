//! Typed values, owned ([`Value`]) and borrowed ([`ValueRef`]).

use crate::types::OmlType;

/// One owned field value of a tuple.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `int32` (also legacy `integer`/`long`).
    Int32(i32),
    /// `uint32`.
    UInt32(u32),
    /// `int64`.
    Int64(i64),
    /// `uint64`.
    UInt64(u64),
    /// `double`.
    Double(f64),
    /// `string`.
    String(String),
    /// `blob`.
    Blob(Vec<u8>),
    /// `guid`.
    Guid(u64),
    /// `bool`.
    Bool(bool),
    /// `[double]`.
    VecDouble(Vec<f64>),
    /// `[int32]`.
    VecInt32(Vec<i32>),
    /// `[uint32]`.
    VecUInt32(Vec<u32>),
    /// `[int64]`.
    VecInt64(Vec<i64>),
    /// `[uint64]`.
    VecUInt64(Vec<u64>),
    /// `[bool]`.
    VecBool(Vec<bool>),
}

/// A borrowed field value: what encoders take, so that a caller holding its
/// data elsewhere (a client queue, a database row) need not copy it first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueRef<'a> {
    /// `int32`.
    Int32(i32),
    /// `uint32`.
    UInt32(u32),
    /// `int64`.
    Int64(i64),
    /// `uint64`.
    UInt64(u64),
    /// `double`.
    Double(f64),
    /// `string`.
    String(&'a str),
    /// `blob`.
    Blob(&'a [u8]),
    /// `guid`.
    Guid(u64),
    /// `bool`.
    Bool(bool),
    /// `[double]`.
    VecDouble(&'a [f64]),
    /// `[int32]`.
    VecInt32(&'a [i32]),
    /// `[uint32]`.
    VecUInt32(&'a [u32]),
    /// `[int64]`.
    VecInt64(&'a [i64]),
    /// `[uint64]`.
    VecUInt64(&'a [u64]),
    /// `[bool]`.
    VecBool(&'a [bool]),
}

impl Value {
    /// The zero of a type: 0, 0.0, `false`, or empty. What a filter emits
    /// before it saw a sample and a wrapper gives a field a line lacks.
    pub fn zero(ty: crate::OmlType) -> Value {
        use crate::OmlType as T;
        match ty {
            T::Int32 => Value::Int32(0),
            T::UInt32 => Value::UInt32(0),
            T::Int64 => Value::Int64(0),
            T::UInt64 => Value::UInt64(0),
            T::Double => Value::Double(0.0),
            T::String => Value::String(String::new()),
            T::Blob => Value::Blob(Vec::new()),
            T::Guid => Value::Guid(0),
            T::Bool => Value::Bool(false),
            T::VecDouble => Value::VecDouble(Vec::new()),
            T::VecInt32 => Value::VecInt32(Vec::new()),
            T::VecUInt32 => Value::VecUInt32(Vec::new()),
            T::VecInt64 => Value::VecInt64(Vec::new()),
            T::VecUInt64 => Value::VecUInt64(Vec::new()),
            T::VecBool => Value::VecBool(Vec::new()),
        }
    }

    /// Bytes the value holds outside its own enum slot (a string's, blob's
    /// or vector's contents): what memory bounds in bytes count.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Value::String(s) => s.len(),
            Value::Blob(b) => b.len(),
            Value::VecDouble(v) => v.len() * 8,
            Value::VecInt32(v) => v.len() * 4,
            Value::VecUInt32(v) => v.len() * 4,
            Value::VecInt64(v) => v.len() * 8,
            Value::VecUInt64(v) => v.len() * 8,
            Value::VecBool(v) => v.len(),
            _ => 0,
        }
    }

    /// The schema type this value belongs to.
    pub fn oml_type(&self) -> OmlType {
        self.as_value_ref().oml_type()
    }

    /// Borrows this value.
    pub fn as_value_ref(&self) -> ValueRef<'_> {
        match self {
            Value::Int32(v) => ValueRef::Int32(*v),
            Value::UInt32(v) => ValueRef::UInt32(*v),
            Value::Int64(v) => ValueRef::Int64(*v),
            Value::UInt64(v) => ValueRef::UInt64(*v),
            Value::Double(v) => ValueRef::Double(*v),
            Value::String(v) => ValueRef::String(v),
            Value::Blob(v) => ValueRef::Blob(v),
            Value::Guid(v) => ValueRef::Guid(*v),
            Value::Bool(v) => ValueRef::Bool(*v),
            Value::VecDouble(v) => ValueRef::VecDouble(v),
            Value::VecInt32(v) => ValueRef::VecInt32(v),
            Value::VecUInt32(v) => ValueRef::VecUInt32(v),
            Value::VecInt64(v) => ValueRef::VecInt64(v),
            Value::VecUInt64(v) => ValueRef::VecUInt64(v),
            Value::VecBool(v) => ValueRef::VecBool(v),
        }
    }

    /// Equality that treats two NaNs as equal (tests and round-trip checks).
    pub fn same_as(&self, other: &Value) -> bool {
        fn feq(a: f64, b: f64) -> bool {
            a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()) || a == b
        }
        match (self, other) {
            (Value::Double(a), Value::Double(b)) => feq(*a, *b),
            (Value::VecDouble(a), Value::VecDouble(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| feq(*x, *y))
            }
            _ => self == other,
        }
    }
}

impl ValueRef<'_> {
    /// The schema type this value belongs to.
    pub fn oml_type(&self) -> OmlType {
        match self {
            ValueRef::Int32(_) => OmlType::Int32,
            ValueRef::UInt32(_) => OmlType::UInt32,
            ValueRef::Int64(_) => OmlType::Int64,
            ValueRef::UInt64(_) => OmlType::UInt64,
            ValueRef::Double(_) => OmlType::Double,
            ValueRef::String(_) => OmlType::String,
            ValueRef::Blob(_) => OmlType::Blob,
            ValueRef::Guid(_) => OmlType::Guid,
            ValueRef::Bool(_) => OmlType::Bool,
            ValueRef::VecDouble(_) => OmlType::VecDouble,
            ValueRef::VecInt32(_) => OmlType::VecInt32,
            ValueRef::VecUInt32(_) => OmlType::VecUInt32,
            ValueRef::VecInt64(_) => OmlType::VecInt64,
            ValueRef::VecUInt64(_) => OmlType::VecUInt64,
            ValueRef::VecBool(_) => OmlType::VecBool,
        }
    }

    /// Makes an owned copy.
    pub fn to_value(&self) -> Value {
        match *self {
            ValueRef::Int32(v) => Value::Int32(v),
            ValueRef::UInt32(v) => Value::UInt32(v),
            ValueRef::Int64(v) => Value::Int64(v),
            ValueRef::UInt64(v) => Value::UInt64(v),
            ValueRef::Double(v) => Value::Double(v),
            ValueRef::String(v) => Value::String(v.to_owned()),
            ValueRef::Blob(v) => Value::Blob(v.to_vec()),
            ValueRef::Guid(v) => Value::Guid(v),
            ValueRef::Bool(v) => Value::Bool(v),
            ValueRef::VecDouble(v) => Value::VecDouble(v.to_vec()),
            ValueRef::VecInt32(v) => Value::VecInt32(v.to_vec()),
            ValueRef::VecUInt32(v) => Value::VecUInt32(v.to_vec()),
            ValueRef::VecInt64(v) => Value::VecInt64(v.to_vec()),
            ValueRef::VecUInt64(v) => Value::VecUInt64(v.to_vec()),
            ValueRef::VecBool(v) => Value::VecBool(v.to_vec()),
        }
    }
}

impl<'a> From<&'a Value> for ValueRef<'a> {
    fn from(v: &'a Value) -> Self {
        v.as_value_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OmlType;

    #[test]
    fn zero_has_the_asked_type_and_holds_nothing() {
        for ty in OmlType::ALL {
            let z = Value::zero(ty);
            assert_eq!(z.oml_type(), ty);
            assert_eq!(z.heap_bytes(), 0);
        }
    }
}
