//! What a sender asks for in its header (spec §3.6, §3.7): the extension
//! keys, parsed into an [`Offer`] and written back from one.

use thiserror::Error;

use super::{
    is_valid_id, BACKCHANNEL_VERSION, KEY_BACKCHANNEL, KEY_FEEDBACK, KEY_OFFSET, KEY_SESSION,
    MAX_ID,
};
use crate::header::Header;

/// A back-channel asked for by a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// A resumable session, if asked for (a feedback-only sender has none).
    pub session: Option<SessionRequest>,
    /// The sender accepts control messages.
    pub feedback: bool,
}

/// The resumable session a header asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRequest {
    /// Session id (see [`is_valid_id`](super::is_valid_id)).
    pub id: String,
    /// Data offset of this connection's first data byte, as the sender
    /// counts it (0 when the key is absent).
    pub offset: u64,
}

/// Why the extension keys of a header are refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OfferError {
    /// `x-streamgauge-backchannel` names a version this side does not speak.
    #[error("{KEY_BACKCHANNEL}: version {0:?} unknown (this side speaks {BACKCHANNEL_VERSION})")]
    Version(String),
    /// A session or feedback was asked for without a back-channel version.
    #[error("{KEY_SESSION} and {KEY_FEEDBACK} need {KEY_BACKCHANNEL}: {BACKCHANNEL_VERSION}")]
    NoBackchannel,
    /// `x-streamgauge-feedback` is neither 0 nor 1.
    #[error("{KEY_FEEDBACK}: {0:?} (want 1)")]
    Feedback(String),
    /// The session id is empty, too long or has bytes outside the alphabet.
    #[error("{KEY_SESSION}: {0:?} is not 1-{MAX_ID} bytes of [A-Za-z0-9_.:-]")]
    Id(String),
    /// The offset is not a decimal number within u64.
    #[error("{KEY_OFFSET}: {0:?} is not a decimal byte offset")]
    Offset(String),
}

impl Offer {
    /// Reads the extension keys of `h`, the last occurrence of each
    /// counting (spec §4.2): `Ok(None)` when there is no back-channel key
    /// at all (a stock sender), an error for malformed or inconsistent
    /// values.
    pub fn from_header(h: &Header) -> Result<Option<Offer>, OfferError> {
        let get = |key: &str| {
            h.extra
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        let id = get(KEY_SESSION);
        let feedback = match get(KEY_FEEDBACK) {
            None | Some("0") => false,
            Some("1") => true,
            Some(v) => return Err(OfferError::Feedback(v.to_owned())),
        };
        match get(KEY_BACKCHANNEL) {
            Some(BACKCHANNEL_VERSION) => {}
            Some(v) => return Err(OfferError::Version(v.to_owned())),
            None if id.is_some() || feedback => return Err(OfferError::NoBackchannel),
            None => return Ok(None),
        }
        let session = match id {
            None => None,
            Some(id) if !is_valid_id(id) => return Err(OfferError::Id(id.to_owned())),
            Some(id) => Some(SessionRequest {
                id: id.to_owned(),
                offset: match get(KEY_OFFSET) {
                    None => 0,
                    Some(v) => {
                        super::line::decimal(v).ok_or_else(|| OfferError::Offset(v.to_owned()))?
                    }
                },
            }),
        };
        Ok(Some(Offer { session, feedback }))
    }

    /// The header keys that ask for this offer, in the order streamgauge
    /// senders write them: session, offset, back-channel, feedback.
    pub fn keys(&self) -> Vec<(String, String)> {
        let mut keys = Vec::with_capacity(4);
        if let Some(s) = &self.session {
            keys.push((KEY_SESSION.to_owned(), s.id.clone()));
            keys.push((KEY_OFFSET.to_owned(), s.offset.to_string()));
        }
        keys.push((KEY_BACKCHANNEL.to_owned(), BACKCHANNEL_VERSION.to_owned()));
        if self.feedback {
            keys.push((KEY_FEEDBACK.to_owned(), "1".to_owned()));
        }
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Content;
    use proptest::prelude::*;

    fn header(keys: &[(&str, &str)]) -> Header {
        let mut h = Header::new("d", "s", "app", 0, Content::Text);
        h.extra
            .extend(keys.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        h
    }

    #[test]
    fn stock_sender_has_no_offer() {
        assert_eq!(Offer::from_header(&header(&[("x-other", "1")])), Ok(None));
    }

    #[test]
    fn keys_are_byte_identical_to_the_wire() {
        let offer = Offer {
            session: Some(SessionRequest {
                id: "a-1".into(),
                offset: 10,
            }),
            feedback: true,
        };
        let mut h = header(&[]);
        h.extra.extend(offer.keys());
        let mut out = Vec::new();
        h.write(&mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(
            "x-streamgauge-session: a-1\nx-streamgauge-offset: 10\n\
             x-streamgauge-backchannel: 1\nx-streamgauge-feedback: 1\n"
        ));
        let (parsed, _) = Header::parse(text.as_bytes()).unwrap().unwrap();
        assert_eq!(Offer::from_header(&parsed), Ok(Some(offer)));
    }

    #[test]
    fn feedback_only_and_missing_offset() {
        let h = header(&[
            ("x-streamgauge-backchannel", "1"),
            ("x-streamgauge-feedback", "1"),
        ]);
        assert_eq!(
            Offer::from_header(&h),
            Ok(Some(Offer {
                session: None,
                feedback: true
            }))
        );
        let h = header(&[
            ("x-streamgauge-session", "s"),
            ("x-streamgauge-backchannel", "1"),
        ]);
        let offer = Offer::from_header(&h).unwrap().unwrap();
        assert_eq!(offer.session.unwrap().offset, 0);
    }

    #[test]
    fn last_occurrence_counts() {
        let h = header(&[
            ("x-streamgauge-session", "old"),
            ("x-streamgauge-backchannel", "1"),
            ("x-streamgauge-session", "new"),
        ]);
        assert_eq!(
            Offer::from_header(&h).unwrap().unwrap().session.unwrap().id,
            "new"
        );
    }

    #[test]
    fn malformed_values_are_typed_errors() {
        let bc = ("x-streamgauge-backchannel", "1");
        let cases: [(&[(&str, &str)], OfferError); 8] = [
            (
                &[("x-streamgauge-backchannel", "2")],
                OfferError::Version("2".into()),
            ),
            (&[("x-streamgauge-session", "s")], OfferError::NoBackchannel),
            (
                &[("x-streamgauge-feedback", "1")],
                OfferError::NoBackchannel,
            ),
            (
                &[bc, ("x-streamgauge-feedback", "yes")],
                OfferError::Feedback("yes".into()),
            ),
            (
                &[bc, ("x-streamgauge-session", "a b")],
                OfferError::Id("a b".into()),
            ),
            (
                &[bc, ("x-streamgauge-session", "")],
                OfferError::Id("".into()),
            ),
            (
                &[
                    bc,
                    ("x-streamgauge-session", "s"),
                    ("x-streamgauge-offset", "18446744073709551616"),
                ],
                OfferError::Offset("18446744073709551616".into()),
            ),
            (
                &[
                    bc,
                    ("x-streamgauge-session", "s"),
                    ("x-streamgauge-offset", "+5"),
                ],
                OfferError::Offset("+5".into()),
            ),
        ];
        for (keys, want) in cases {
            assert_eq!(Offer::from_header(&header(keys)), Err(want), "{keys:?}");
        }
        let long = "x".repeat(MAX_ID + 1);
        assert_eq!(
            Offer::from_header(&header(&[bc, ("x-streamgauge-session", &long)])),
            Err(OfferError::Id(long.clone()))
        );
        assert!(Offer::from_header(&header(&[bc, ("x-streamgauge-session", &long[1..])])).is_ok());
    }

    proptest! {
        #[test]
        fn keys_round_trip(
            id in proptest::option::of("[A-Za-z0-9_.:-]{1,128}"),
            offset in any::<u64>(),
            feedback in any::<bool>(),
        ) {
            let offer = Offer { session: id.map(|id| SessionRequest { id, offset }), feedback };
            let mut h = header(&[]);
            h.extra.extend(offer.keys());
            prop_assert_eq!(Offer::from_header(&h), Ok(Some(offer)));
        }

        #[test]
        fn arbitrary_values_never_panic(keys in proptest::collection::vec(
            (prop_oneof![
                Just(KEY_SESSION), Just(KEY_OFFSET), Just(KEY_BACKCHANNEL), Just(KEY_FEEDBACK)
            ], ".{0,40}"),
            0..6,
        )) {
            let keys: Vec<(&str, &str)> = keys.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let _ = Offer::from_header(&header(&keys));
        }
    }
}
