//! Option modes, default option types and header sizes (see `spec/inline.md`).

/// The one-way delay option: two NTP timestamps (24-byte header).
pub const MODE_DELAY: u8 = 1;
/// The loss option: a 32-bit per-flow sequence number (8-byte header).
pub const MODE_LOSS: u8 = 2;
/// The RFC 8250 Performance and Diagnostic Metrics option (16-byte header).
/// Exclusive: when set, the other bits are ignored.
pub const MODE_PDM: u8 = 4;
/// With [`MODE_DELAY`]: the compact delay option, a 32-bit truncated
/// timestamp in an 8-byte header (fits a UDP socket's headroom).
pub const MODE_COMPACT: u8 = 8;

/// RFC 4727 experimental option type with action bits `00` (skip if
/// unrecognised) and the "may change en route" bit clear.
pub const DEFAULT_DELAY_TYPE: u8 = 0x1E;
/// RFC 4727 experimental option type with action bits `00` and the
/// "may change en route" bit set.
pub const DEFAULT_LOSS_TYPE: u8 = 0x3E;
/// RFC 8250 PDM option type (fixed by IANA).
pub const PDM_TYPE: u8 = 0x0F;
/// IPv6 next-header value of the Destination Options header.
pub const NEXTHDR_DEST: u8 = 60;

/// Extension header length for the delay option alone.
pub const DELAY_HDR_LEN: usize = 24;
/// Extension header length for the loss option alone.
pub const LOSS_HDR_LEN: usize = 8;
/// Extension header length for both options in one header.
pub const COMBINED_HDR_LEN: usize = 32;
/// Extension header length in PDM mode.
pub const PDM_HDR_LEN: usize = 16;
/// Extension header length of the compact delay option.
pub const COMPACT_HDR_LEN: usize = 8;
/// The compact option carries NTP timestamp bits 8–39: steps of 2^-24 s.
pub const COMPACT_SHIFT: u32 = 8;

/// Bytes a source adds to an instrumented packet in `mode`.
pub const fn header_len(mode: u8) -> usize {
    if mode & MODE_PDM != 0 {
        PDM_HDR_LEN
    } else if mode & MODE_COMPACT != 0 {
        COMPACT_HDR_LEN
    } else if mode & (MODE_DELAY | MODE_LOSS) == MODE_DELAY | MODE_LOSS {
        COMBINED_HDR_LEN
    } else if mode & MODE_DELAY != 0 {
        DELAY_HDR_LEN
    } else if mode & MODE_LOSS != 0 {
        LOSS_HDR_LEN
    } else {
        0
    }
}
