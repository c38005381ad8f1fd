//! Wire constants of the binary encoding.

/// Sync bytes opening every packet.
pub const SYNC: [u8; 2] = [0xAA, 0xAA];
/// Packet type: 16-bit length (OMB_DATA_P).
pub const PACKET_SHORT: u8 = 0x01;
/// Packet type: 32-bit length (OMB_LDATA_P, v3+).
pub const PACKET_LONG: u8 = 0x02;
/// Bytes before the body of a short packet.
pub const SHORT_HEADER_LEN: usize = 5;
/// Bytes before the body of a long packet.
pub const LONG_HEADER_LEN: usize = 7;

/// Legacy `long`: int32 payload.
pub const LONG_T: u8 = 0x01;
/// Mantissa/exponent double, 5-byte payload.
pub const DOUBLE_T: u8 = 0x02;
/// NaN double, 5 ignored payload bytes.
pub const DOUBLE_NAN: u8 = 0x03;
/// String: 1-byte length, bytes.
pub const STRING_T: u8 = 0x04;
/// int32.
pub const INT32_T: u8 = 0x05;
/// uint32.
pub const UINT32_T: u8 = 0x06;
/// int64.
pub const INT64_T: u8 = 0x07;
/// uint64.
pub const UINT64_T: u8 = 0x08;
/// Blob: 4-byte length, bytes.
pub const BLOB_T: u8 = 0x09;
/// guid: 8 bytes.
pub const GUID_T: u8 = 0x0A;
/// false, no payload.
pub const BOOL_FALSE_T: u8 = 0x0B;
/// true, no payload.
pub const BOOL_TRUE_T: u8 = 0x0C;
/// Vector: element type, uint16 count, elements.
pub const VECTOR_T: u8 = 0x0D;
/// Vector element type for booleans (one byte each, `0C` = true).
pub const BOOL_T: u8 = 0x0E;
/// IEEE-754 binary64, big-endian (vector element type).
pub const DOUBLE64_T: u8 = 0x0F;

/// Longest string liboml2 sends and every stock server reads safely.
pub const MAX_STRING_LEN: usize = 254;
