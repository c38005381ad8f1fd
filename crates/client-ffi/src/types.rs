//! The C types of `<oml2/omlc.h>`, with liboml2's layout (spec §8.2).
//!
//! Field order and sizes are ABI: C programs allocate [`OmlValueU`] arrays
//! and [`OmlMPDef`] tables themselves and hand us pointers. `OmlValueT` is
//! a plain `c_int` with named constants rather than a Rust enum, because C
//! may store any integer in it.

use std::ffi::{c_char, c_int, c_long, c_void};

/// `OmlValueT`: the type of a value (a C enum, `int`-sized).
pub type OmlValueT = c_int;

/// `OML_DB_PRIMARY_KEY`.
pub const OML_DB_PRIMARY_KEY: OmlValueT = -3;
/// `OML_INPUT_VALUE`: a filter output of the same type as its input.
pub const OML_INPUT_VALUE: OmlValueT = -2;
/// `OML_UNKNOWN_VALUE`.
pub const OML_UNKNOWN_VALUE: OmlValueT = -1;
/// `OML_DOUBLE_VALUE`.
pub const OML_DOUBLE_VALUE: OmlValueT = 0;
/// `OML_LONG_VALUE` (deprecated; C `long`, sent as int32).
pub const OML_LONG_VALUE: OmlValueT = 1;
/// `OML_PADDING1_VALUE` (unused).
pub const OML_PADDING1_VALUE: OmlValueT = 2;
/// `OML_STRING_VALUE`.
pub const OML_STRING_VALUE: OmlValueT = 3;
/// `OML_INT32_VALUE`.
pub const OML_INT32_VALUE: OmlValueT = 4;
/// `OML_UINT32_VALUE`.
pub const OML_UINT32_VALUE: OmlValueT = 5;
/// `OML_INT64_VALUE`.
pub const OML_INT64_VALUE: OmlValueT = 6;
/// `OML_UINT64_VALUE`.
pub const OML_UINT64_VALUE: OmlValueT = 7;
/// `OML_BLOB_VALUE`.
pub const OML_BLOB_VALUE: OmlValueT = 8;
/// `OML_GUID_VALUE`.
pub const OML_GUID_VALUE: OmlValueT = 9;
/// `OML_BOOL_VALUE`.
pub const OML_BOOL_VALUE: OmlValueT = 10;
/// `OML_VECTOR_DOUBLE_VALUE`.
pub const OML_VECTOR_DOUBLE_VALUE: OmlValueT = 11;
/// `OML_VECTOR_INT32_VALUE`.
pub const OML_VECTOR_INT32_VALUE: OmlValueT = 12;
/// `OML_VECTOR_UINT32_VALUE`.
pub const OML_VECTOR_UINT32_VALUE: OmlValueT = 13;
/// `OML_VECTOR_INT64_VALUE`.
pub const OML_VECTOR_INT64_VALUE: OmlValueT = 14;
/// `OML_VECTOR_UINT64_VALUE`.
pub const OML_VECTOR_UINT64_VALUE: OmlValueT = 15;
/// `OML_VECTOR_BOOL_VALUE`.
pub const OML_VECTOR_BOOL_VALUE: OmlValueT = 16;
/// `OML_LAST_VALUE`: one past the last type.
pub const OML_LAST_VALUE: OmlValueT = 17;

/// `OmlString`: a string value; `size > 0` means `ptr` is owned.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OmlString {
    /// The characters (NUL-terminated when owned).
    pub ptr: *mut c_char,
    /// Characters, without the terminator.
    pub length: usize,
    /// Bytes allocated with `oml_malloc`; 0 = not owned.
    pub size: usize,
    /// Set by the deprecated `omlc_set_const_string`.
    pub is_const: c_int,
}

/// `OmlBlob`: a blob value; `size > 0` means `ptr` is owned.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OmlBlob {
    /// The bytes.
    pub ptr: *mut c_void,
    /// Bytes of data.
    pub length: usize,
    /// Bytes allocated with `oml_malloc`; 0 = not owned.
    pub size: usize,
}

/// `OmlVector`: `nof_elts` elements of `elt_sz` bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OmlVector {
    /// The elements.
    pub ptr: *mut c_void,
    /// Bytes of data.
    pub length: usize,
    /// Bytes allocated with `oml_malloc`; 0 = not owned.
    pub size: usize,
    /// Element count.
    pub nof_elts: u16,
    /// Bytes per element (0 = the natural size of the declared type).
    pub elt_sz: u16,
}

/// `OmlValueU`: one untyped value. The member names follow the C header's
/// (`int32Value` is `int32_value` here).
#[repr(C)]
#[derive(Clone, Copy)]
pub union OmlValueU {
    /// `longValue`.
    pub long_value: c_long,
    /// `doubleValue`.
    pub double_value: f64,
    /// `stringValue`.
    pub string_value: OmlString,
    /// `int32Value`.
    pub int32_value: i32,
    /// `uint32Value`.
    pub uint32_value: u32,
    /// `int64Value`.
    pub int64_value: i64,
    /// `uint64Value`.
    pub uint64_value: u64,
    /// `blobValue`.
    pub blob_value: OmlBlob,
    /// `guidValue`.
    pub guid_value: u64,
    /// `boolValue`.
    pub bool_value: u8,
    /// `vectorValue`.
    pub vector_value: OmlVector,
}

impl OmlValueU {
    /// All bits zero, as `omlc_zero` leaves a value.
    pub fn zeroed() -> OmlValueU {
        OmlValueU {
            vector_value: OmlVector {
                ptr: std::ptr::null_mut(),
                length: 0,
                size: 0,
                nof_elts: 0,
                elt_sz: 0,
            },
        }
    }
}

/// `OmlValue`: a value with its type.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct OmlValue {
    /// `type`.
    pub type_: OmlValueT,
    /// `value`.
    pub value: OmlValueU,
}

/// `OmlMPDef`: one field of a measurement point; tables end with
/// `{NULL, 0}`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OmlMPDef {
    /// Field name.
    pub name: *const c_char,
    /// Field type.
    pub param_types: OmlValueT,
}

/// `OmlMStream`: a measurement stream, as C sees it (informational only;
/// streamgauge's streams live in the client runtime).
#[repr(C)]
pub struct OmlMStream {
    /// `<app>_<mp>`, NUL-terminated.
    pub table_name: [c_char; 64],
    /// The measurement point.
    pub mp: *mut crate::mp::OmlMP,
    /// Unused (NULL).
    pub values: *mut *mut OmlValue,
    /// Unused (NULL).
    pub filters: *mut c_void,
    /// Unused (0): indices are per destination.
    pub index: c_int,
    /// Unused (0).
    pub sample_size: c_int,
    /// Samples per row from `--oml-samples` (1 by default).
    pub sample_thres: c_int,
    /// Seconds per row from `--oml-interval` (0 when sample-based).
    pub sample_interval: f64,
    /// Unused (0).
    pub seq_no: c_long,
    /// Unused.
    pub cond_var: libc::pthread_cond_t,
    /// Unused (0).
    pub filter_thread: libc::pthread_t,
    /// Unused (NULL).
    pub writer: *mut c_void,
    /// Unused (NULL).
    pub next: *mut OmlMStream,
    /// Unused (0).
    pub meta_seq_no: c_long,
    /// Unused (NULL).
    pub writers: *mut *mut c_void,
    /// Unused (0).
    pub nwriters: c_int,
    /// Unused (0).
    pub written: u32,
    /// Unused (0).
    pub dropped: u32,
}

#[cfg(all(target_pointer_width = "64", not(windows)))]
const _: () = {
    assert!(std::mem::size_of::<OmlString>() == 32);
    assert!(std::mem::size_of::<OmlBlob>() == 24);
    assert!(std::mem::size_of::<OmlVector>() == 32);
    assert!(std::mem::size_of::<OmlValueU>() == 32);
    assert!(std::mem::size_of::<OmlValue>() == 40);
    assert!(std::mem::size_of::<OmlMPDef>() == 16);
};

/// The streamgauge type of a field declared with C type `t`, or `None` for
/// types that cannot be a field (`OML_UNKNOWN_VALUE`, padding, …).
/// `OML_LONG_VALUE` fields are int32, as on the wire of the reference.
pub fn oml_type(t: OmlValueT) -> Option<omsp::OmlType> {
    use omsp::OmlType as T;
    Some(match t {
        OML_DOUBLE_VALUE => T::Double,
        OML_LONG_VALUE | OML_INT32_VALUE => T::Int32,
        OML_STRING_VALUE => T::String,
        OML_UINT32_VALUE => T::UInt32,
        OML_INT64_VALUE => T::Int64,
        OML_UINT64_VALUE => T::UInt64,
        OML_BLOB_VALUE => T::Blob,
        OML_GUID_VALUE => T::Guid,
        OML_BOOL_VALUE => T::Bool,
        OML_VECTOR_DOUBLE_VALUE => T::VecDouble,
        OML_VECTOR_INT32_VALUE => T::VecInt32,
        OML_VECTOR_UINT32_VALUE => T::VecUInt32,
        OML_VECTOR_INT64_VALUE => T::VecInt64,
        OML_VECTOR_UINT64_VALUE => T::VecUInt64,
        OML_VECTOR_BOOL_VALUE => T::VecBool,
        _ => return None,
    })
}

/// The name `oml_type_to_s` gives a C type: the schema name, `long` for
/// the deprecated long type, `unknown` otherwise.
pub fn type_name(t: OmlValueT) -> &'static str {
    match t {
        OML_LONG_VALUE => "long",
        _ => oml_type(t).map_or("unknown", omsp::OmlType::name),
    }
}

/// The C type of a schema type name (legacy names included):
/// `long` gives `OML_LONG_VALUE`, `integer` int32, `real`/`float` double.
pub fn type_from_name(name: &str) -> OmlValueT {
    use omsp::OmlType as T;
    if name == "long" {
        return OML_LONG_VALUE;
    }
    match omsp::OmlType::from_name(name) {
        Some(T::Int32) => OML_INT32_VALUE,
        Some(T::UInt32) => OML_UINT32_VALUE,
        Some(T::Int64) => OML_INT64_VALUE,
        Some(T::UInt64) => OML_UINT64_VALUE,
        Some(T::Double) => OML_DOUBLE_VALUE,
        Some(T::String) => OML_STRING_VALUE,
        Some(T::Blob) => OML_BLOB_VALUE,
        Some(T::Guid) => OML_GUID_VALUE,
        Some(T::Bool) => OML_BOOL_VALUE,
        Some(T::VecDouble) => OML_VECTOR_DOUBLE_VALUE,
        Some(T::VecInt32) => OML_VECTOR_INT32_VALUE,
        Some(T::VecUInt32) => OML_VECTOR_UINT32_VALUE,
        Some(T::VecInt64) => OML_VECTOR_INT64_VALUE,
        Some(T::VecUInt64) => OML_VECTOR_UINT64_VALUE,
        Some(T::VecBool) => OML_VECTOR_BOOL_VALUE,
        None => OML_UNKNOWN_VALUE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in OML_DOUBLE_VALUE..OML_LAST_VALUE {
            if t == OML_PADDING1_VALUE {
                assert_eq!(type_name(t), "unknown");
                continue;
            }
            assert_eq!(type_from_name(type_name(t)), t, "{t}");
        }
        assert_eq!(type_from_name("integer"), OML_INT32_VALUE);
        assert_eq!(type_from_name("int"), OML_UNKNOWN_VALUE);
        assert_eq!(type_name(99), "unknown");
    }
}
