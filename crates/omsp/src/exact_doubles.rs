//! Extension: exact doubles (spec §3.8).
//!
//! The reference's binary DOUBLE_T keeps 30 mantissa bits. A streamgauge
//! sender offers DOUBLE64_T in its header; a receiver that reads it
//! (streamgauge's server) confirms with one back-channel line, and from
//! then on the sender writes scalar doubles and timestamps as DOUBLE64_T on
//! that connection. Each value carries its own type code, so a stream that
//! switches in the middle decodes as written. A stock receiver never
//! confirms and keeps getting DOUBLE_T.
//!
//! ```
//! use omsp::exact_doubles::{offered, CONFIRMATION, KEY, OFFER};
//! use omsp::session::Line;
//! use omsp::{Content, Header};
//!
//! let mut h = Header::new("d", "s", "app", 0, Content::Binary);
//! assert!(!offered(&h));
//! h.extra.push((KEY.into(), OFFER.into()));
//! assert!(offered(&h));
//! assert!(Line::parse(CONFIRMATION.trim_end()).unwrap().confirms_exact_doubles());
//! ```

use crate::header::Header;

/// Header key of the offer.
pub const KEY: &str = "x-streamgauge-doubles";
/// Its value: the encoding offered.
pub const OFFER: &str = "double64";
/// The receiver's answer, a whole back-channel line (what
/// [`Line::Doubles`](crate::session::Line::Doubles) of [`OFFER`] writes).
pub const CONFIRMATION: &str = "streamgauge-doubles double64\n";

/// True if the header offers exact doubles (the last occurrence of the key
/// counts, §4.2; other values are offers this receiver does not know).
pub fn offered(h: &Header) -> bool {
    h.extra
        .iter()
        .rev()
        .find(|(k, _)| k == KEY)
        .is_some_and(|(_, v)| v == OFFER)
}
