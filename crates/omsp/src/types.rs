//! OML value types as they appear in schemas.

use std::fmt;

/// The type of one field of a measurement stream.
///
/// Every type name the reference server accepts maps onto one of these; legacy
/// aliases (`integer`, `long`, `real`, `float`) are folded into their canonical
/// type when parsed, so a schema always prints back in canonical form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OmlType {
    /// Signed 32-bit integer (`int32`; legacy `integer`, `long`).
    Int32,
    /// Unsigned 32-bit integer (`uint32`).
    UInt32,
    /// Signed 64-bit integer (`int64`).
    Int64,
    /// Unsigned 64-bit integer (`uint64`).
    UInt64,
    /// IEEE-754 double (`double`; legacy `real`, `float`).
    Double,
    /// Byte string, UTF-8 in streamgauge (`string`).
    String,
    /// Opaque bytes (`blob`, v3+).
    Blob,
    /// 64-bit globally unique identifier (`guid`, v4+).
    Guid,
    /// Boolean (`bool`, v4+).
    Bool,
    /// Vector of doubles (`[double]`, v5).
    VecDouble,
    /// Vector of signed 32-bit integers (`[int32]`, v5).
    VecInt32,
    /// Vector of unsigned 32-bit integers (`[uint32]`, v5).
    VecUInt32,
    /// Vector of signed 64-bit integers (`[int64]`, v5).
    VecInt64,
    /// Vector of unsigned 64-bit integers (`[uint64]`, v5).
    VecUInt64,
    /// Vector of booleans (`[bool]`, v5).
    VecBool,
}

impl OmlType {
    /// All canonical types, in the order of the reference's type table.
    pub const ALL: [OmlType; 15] = [
        OmlType::Int32,
        OmlType::UInt32,
        OmlType::Int64,
        OmlType::UInt64,
        OmlType::Double,
        OmlType::String,
        OmlType::Blob,
        OmlType::Guid,
        OmlType::Bool,
        OmlType::VecDouble,
        OmlType::VecInt32,
        OmlType::VecUInt32,
        OmlType::VecInt64,
        OmlType::VecUInt64,
        OmlType::VecBool,
    ];

    /// Parses a schema type name, accepting the legacy aliases.
    ///
    /// Returns `None` for names the reference rejects too (`int`, `[string]`,
    /// `[blob]`, `[guid]`, anything unknown). Names are case-sensitive.
    pub fn from_name(name: &str) -> Option<OmlType> {
        Some(match name {
            "int32" | "integer" | "long" => OmlType::Int32,
            "uint32" => OmlType::UInt32,
            "int64" => OmlType::Int64,
            "uint64" => OmlType::UInt64,
            "double" | "real" | "float" => OmlType::Double,
            "string" => OmlType::String,
            "blob" => OmlType::Blob,
            "guid" => OmlType::Guid,
            "bool" => OmlType::Bool,
            "[double]" => OmlType::VecDouble,
            "[int32]" => OmlType::VecInt32,
            "[uint32]" => OmlType::VecUInt32,
            "[int64]" => OmlType::VecInt64,
            "[uint64]" => OmlType::VecUInt64,
            "[bool]" => OmlType::VecBool,
            _ => return None,
        })
    }

    /// The canonical name, as written in schemas and stored in `table_<name>` rows.
    pub fn name(self) -> &'static str {
        match self {
            OmlType::Int32 => "int32",
            OmlType::UInt32 => "uint32",
            OmlType::Int64 => "int64",
            OmlType::UInt64 => "uint64",
            OmlType::Double => "double",
            OmlType::String => "string",
            OmlType::Blob => "blob",
            OmlType::Guid => "guid",
            OmlType::Bool => "bool",
            OmlType::VecDouble => "[double]",
            OmlType::VecInt32 => "[int32]",
            OmlType::VecUInt32 => "[uint32]",
            OmlType::VecInt64 => "[int64]",
            OmlType::VecUInt64 => "[uint64]",
            OmlType::VecBool => "[bool]",
        }
    }

    /// True for the vector types (protocol v5).
    pub fn is_vector(self) -> bool {
        matches!(
            self,
            OmlType::VecDouble
                | OmlType::VecInt32
                | OmlType::VecUInt32
                | OmlType::VecInt64
                | OmlType::VecUInt64
                | OmlType::VecBool
        )
    }

    /// True for the scalar numeric types (the ones `avg`, `sum`… accept).
    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            OmlType::Int32 | OmlType::UInt32 | OmlType::Int64 | OmlType::UInt64 | OmlType::Double
        )
    }

    /// The lowest protocol version that can carry this type.
    pub fn min_protocol(self) -> u8 {
        match self {
            OmlType::Int32 | OmlType::Double | OmlType::String => 1,
            OmlType::UInt32 | OmlType::Int64 | OmlType::UInt64 => 2,
            OmlType::Blob => 3,
            OmlType::Guid | OmlType::Bool => 4,
            _ => 5,
        }
    }
}

impl fmt::Display for OmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_names_round_trip() {
        for t in OmlType::ALL {
            assert_eq!(OmlType::from_name(t.name()), Some(t));
        }
    }

    #[test]
    fn legacy_aliases_fold_and_rejected_names_stay_rejected() {
        assert_eq!(OmlType::from_name("long"), Some(OmlType::Int32));
        assert_eq!(OmlType::from_name("integer"), Some(OmlType::Int32));
        assert_eq!(OmlType::from_name("float"), Some(OmlType::Double));
        assert_eq!(OmlType::from_name("real"), Some(OmlType::Double));
        for bad in ["int", "[string]", "[blob]", "[guid]", "int99", "Int32", ""] {
            assert_eq!(OmlType::from_name(bad), None, "{bad}");
        }
    }
}
