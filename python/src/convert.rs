//! Python values to typed OML values, checked against an MP's fields.

use omsp::{OmlType, ValueRef};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyDict, PyList, PyString, PyTuple};
use smallvec::SmallVec;

use crate::errors::raise;

/// True for what `inject` reads as a whole sample rather than one value:
/// a tuple, a dict, or a dataclass instance.
pub(crate) fn is_container(v: &Bound<'_, PyAny>) -> bool {
    v.is_instance_of::<PyTuple>()
        || v.is_instance_of::<PyDict>()
        || v.hasattr(pyo3::intern!(v.py(), "__dataclass_fields__"))
            .unwrap_or(false)
}

/// Fields held inline (no allocation) per inject; more spill to the heap.
const INLINE: usize = 12;

/// The Python objects of one sample, in field order.
pub(crate) struct Args<'py> {
    items: SmallVec<[Bound<'py, PyAny>; INLINE]>,
    types: &'py [OmlType],
    mp: &'py str,
    names: &'py [String],
}

/// One converted value; vectors own their elements.
enum Slot<'a> {
    Scalar(ValueRef<'a>),
    VecDouble(Vec<f64>),
    VecInt32(Vec<i32>),
    VecUInt32(Vec<u32>),
    VecInt64(Vec<i64>),
    VecUInt64(Vec<u64>),
    VecBool(Vec<bool>),
}

impl Slot<'_> {
    fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Slot::Scalar(v) => *v,
            Slot::VecDouble(v) => ValueRef::VecDouble(v),
            Slot::VecInt32(v) => ValueRef::VecInt32(v),
            Slot::VecUInt32(v) => ValueRef::VecUInt32(v),
            Slot::VecInt64(v) => ValueRef::VecInt64(v),
            Slot::VecUInt64(v) => ValueRef::VecUInt64(v),
            Slot::VecBool(v) => ValueRef::VecBool(v),
        }
    }
}

impl<'py> Args<'py> {
    /// Collects the values of `sample` (sequence, dict or object with one
    /// attribute per field) and checks the arity.
    pub(crate) fn from_sample(
        mp: &'py str,
        names: &'py [String],
        types: &'py [OmlType],
        sample: &Bound<'py, PyAny>,
    ) -> PyResult<Args<'py>> {
        let items: SmallVec<[Bound<'py, PyAny>; INLINE]> = if let Ok(t) =
            sample.downcast::<PyTuple>()
        {
            t.iter().collect()
        } else if let Ok(l) = sample.downcast::<PyList>() {
            l.iter().collect()
        } else if let Ok(d) = sample.downcast::<PyDict>() {
            let mut out = SmallVec::with_capacity(names.len());
            for n in names {
                match d.get_item(n)? {
                    Some(v) => out.push(v),
                    None => {
                        return Err(raise(
                            "TypeError",
                            format!("measurement point {mp:?}: the sample has no field {n:?}"),
                        ))
                    }
                }
            }
            if d.len() > names.len() {
                return Err(raise(
                    "TypeError",
                    format!(
                        "measurement point {mp:?} has fields {names:?}; the sample has {} keys",
                        d.len()
                    ),
                ));
            }
            out
        } else if sample.is_instance_of::<PyString>() || sample.is_instance_of::<PyBytes>() {
            return Err(raise(
                "TypeError",
                format!("measurement point {mp:?}: a sample is a tuple, list, dict or dataclass, not a string"),
            ));
        } else {
            let mut out = SmallVec::with_capacity(names.len());
            for n in names {
                out.push(sample.getattr(n.as_str()).map_err(|_| {
                    raise(
                        "TypeError",
                        format!("measurement point {mp:?}: the sample has no attribute {n:?}"),
                    )
                })?);
            }
            out
        };
        if items.len() != types.len() {
            return Err(raise(
                "TypeError",
                format!(
                    "measurement point {mp:?} has {} fields but {} values were injected",
                    types.len(),
                    items.len()
                ),
            ));
        }
        Ok(Args {
            items,
            types,
            mp,
            names,
        })
    }

    /// Converts and hands the typed values to `f`.
    pub(crate) fn with_values<R>(&self, f: impl FnOnce(&[ValueRef<'_>]) -> R) -> PyResult<R> {
        let mut slots: SmallVec<[Slot<'_>; INLINE]> = SmallVec::with_capacity(self.items.len());
        for (i, (item, &ty)) in self.items.iter().zip(self.types).enumerate() {
            slots.push(convert(item, ty).map_err(|e| self.type_error(i, ty, item, &e))?);
        }
        let refs: SmallVec<[ValueRef<'_>; INLINE]> = slots.iter().map(Slot::as_ref).collect();
        Ok(f(&refs))
    }

    fn type_error(&self, i: usize, ty: OmlType, item: &Bound<'_, PyAny>, e: &PyErr) -> PyErr {
        let found = item
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "?".into());
        raise(
            "TypeError",
            format!(
                "field {:?} of {:?} is {} but a {found} value was injected ({})",
                self.names[i],
                self.mp,
                ty.name(),
                e
            ),
        )
    }
}

fn convert<'a>(item: &'a Bound<'_, PyAny>, ty: OmlType) -> PyResult<Slot<'a>> {
    let v = match ty {
        OmlType::Int32 => ValueRef::Int32(int(item)?),
        OmlType::UInt32 => ValueRef::UInt32(int(item)?),
        OmlType::Int64 => ValueRef::Int64(int(item)?),
        OmlType::UInt64 => ValueRef::UInt64(int(item)?),
        OmlType::Guid => ValueRef::Guid(int(item)?),
        OmlType::Double => ValueRef::Double(item.extract::<f64>()?),
        OmlType::String => ValueRef::String(item.downcast::<PyString>()?.to_str()?),
        OmlType::Blob => {
            if item.is_instance_of::<PyByteArray>() {
                // A bytearray may change while borrowed: ask for bytes.
                return Err(pyo3::exceptions::PyTypeError::new_err(
                    "use bytes(...) for a blob",
                ));
            }
            ValueRef::Blob(item.downcast::<PyBytes>()?.as_bytes())
        }
        OmlType::Bool => ValueRef::Bool(item.downcast::<PyBool>()?.is_true()),
        OmlType::VecDouble => return Ok(Slot::VecDouble(seq(item)?)),
        OmlType::VecInt32 => return Ok(Slot::VecInt32(seq(item)?)),
        OmlType::VecUInt32 => return Ok(Slot::VecUInt32(seq(item)?)),
        OmlType::VecInt64 => return Ok(Slot::VecInt64(seq(item)?)),
        OmlType::VecUInt64 => return Ok(Slot::VecUInt64(seq(item)?)),
        OmlType::VecBool => return Ok(Slot::VecBool(seq(item)?)),
    };
    Ok(Slot::Scalar(v))
}

/// An integer: Python `int` (not `float`, not `bool`… `bool` is an `int`
/// subclass and is accepted, as in Python arithmetic).
fn int<'py, T: FromPyObject<'py>>(item: &Bound<'py, PyAny>) -> PyResult<T> {
    item.extract::<T>()
}

/// A vector: any sequence but `str`/`bytes`.
fn seq<'py, T: FromPyObject<'py>>(item: &Bound<'py, PyAny>) -> PyResult<Vec<T>> {
    if let Ok(t) = item.downcast::<PyTuple>() {
        return t.iter().map(|x| x.extract::<T>()).collect();
    }
    item.extract::<Vec<T>>()
}
