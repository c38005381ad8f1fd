//! Resumable sessions and the back-channel (spec §3.6–§3.8), without I/O.
//!
//! A sender (client, or proxy towards its upstream) asks for a back-channel
//! with extension keys in its header ([`Offer`]); the receiver (server, or
//! proxy towards its clients) answers with [`Line`]s on the same
//! connection: where to resume, acknowledgements, control messages, the
//! exact-doubles confirmation. Server, proxy and client all read and write
//! these through this one module, so the three cannot drift apart on the
//! wire.
//!
//! ```
//! use omsp::session::{Line, Offer, SessionRequest};
//! use omsp::{Content, Header};
//!
//! let offer = Offer { session: Some(SessionRequest { id: "app-1".into(), offset: 42 }), feedback: false };
//! let mut h = Header::new("d", "s", "app", 0, Content::Binary);
//! h.extra.extend(offer.keys());
//! assert_eq!(Offer::from_header(&h), Ok(Some(offer)));
//!
//! assert_eq!(Line::Resume(42).to_string(), "streamgauge-resume 42\n");
//! assert_eq!(Line::parse("streamgauge-ack 50"), Ok(Line::Ack(50)));
//! ```

#[cfg(feature = "claim")]
pub mod claim;
mod line;
mod offer;

pub use line::{Line, SessionLineError};
pub use offer::{Offer, OfferError, SessionRequest};

/// Header key naming the session.
pub const KEY_SESSION: &str = "x-streamgauge-session";
/// Header key: data offset of the connection's first data byte, as the
/// sender counts it.
pub const KEY_OFFSET: &str = "x-streamgauge-offset";
/// Header key: the back-channel version the sender speaks.
pub const KEY_BACKCHANNEL: &str = "x-streamgauge-backchannel";
/// Header key: the sender accepts control messages (spec §3.7).
pub const KEY_FEEDBACK: &str = "x-streamgauge-feedback";
/// The only back-channel version there is.
pub const BACKCHANNEL_VERSION: &str = "1";
/// Longest session id, in bytes.
pub const MAX_ID: usize = 128;

/// Whether `id` is a valid session id: 1–128 bytes of `[A-Za-z0-9_.:-]`.
pub fn is_valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_ID && id.bytes().all(is_id_byte)
}

/// A byte allowed in a session id. Senders that build ids from names
/// (application, sender id) replace the other bytes with this test.
pub fn is_id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"_.:-".contains(&b)
}

/// Whether `key` is one of the keys [`Offer`] reads and writes: a proxy
/// replaces them with its own when it forwards a header.
pub fn is_session_key(key: &str) -> bool {
    matches!(
        key,
        KEY_SESSION | KEY_OFFSET | KEY_BACKCHANNEL | KEY_FEEDBACK
    )
}
