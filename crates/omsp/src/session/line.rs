//! The receiver's back-channel lines (spec §3.6–§3.8): one typed enum,
//! parsed from and written to the exact bytes on the wire.

use std::fmt;

use thiserror::Error;

/// `streamgauge-resume <offset>`: where the sender continues.
const RESUME: &str = "streamgauge-resume";
/// `streamgauge-ack <offset>`: everything before it is durable.
const ACK: &str = "streamgauge-ack";
/// `streamgauge-control <id> <json>`: a control message.
const CONTROL: &str = "streamgauge-control";
/// `streamgauge-doubles <encoding>`: the exact-doubles confirmation.
const DOUBLES: &str = "streamgauge-doubles";

/// One line the receiver writes on the back-channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// The data offset the receiver wants next (spec §3.6).
    Resume(u64),
    /// Every data byte before this offset is durable (spec §3.6).
    Ack(u64),
    /// A control message (spec §3.7).
    Control {
        /// Chosen by the receiver, increasing per connection.
        id: u64,
        /// The message, a JSON object on one line (no LF).
        json: String,
    },
    /// The receiver reads this encoding of doubles (spec §3.8); only
    /// [`exact_doubles::OFFER`](crate::exact_doubles::OFFER) confirms the
    /// offer, any other text (unknown encoding) is not a confirmation.
    Doubles(String),
    /// A line whose first word this version does not know: the whole line,
    /// without its LF. Senders ignore it (later versions add words).
    Unknown(String),
}

/// Why a back-channel line with a known first word is refused: a protocol
/// error the sender answers by closing the connection (spec §3.6).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SessionLineError {
    /// The word takes an argument that is missing.
    #[error("malformed back-channel line {line:?}: {word} needs an argument")]
    MissingArgument {
        /// The line's first word.
        word: &'static str,
        /// The whole line.
        line: String,
    },
    /// A number is not 1–20 decimal digits within u64 (signs, spaces and
    /// overflow included).
    #[error("malformed back-channel line {line:?}: {value:?} is not a decimal number within u64")]
    Number {
        /// The offending text.
        value: String,
        /// The whole line.
        line: String,
    },
}

impl Line {
    /// Parses one line without its LF. Unknown words are
    /// `Ok(Line::Unknown)`, malformed known lines errors; it never panics,
    /// whatever the input. Whatever it returns writes back to a line that
    /// parses to the same value (numbers in canonical form).
    pub fn parse(line: &str) -> Result<Line, SessionLineError> {
        let (word, rest) = match line.split_once(' ') {
            Some((w, r)) => (w, Some(r)),
            None => (line, None),
        };
        let number = |word: &'static str| {
            let value = rest.ok_or_else(|| SessionLineError::MissingArgument {
                word,
                line: line.to_owned(),
            })?;
            decimal(value).ok_or_else(|| SessionLineError::Number {
                value: value.to_owned(),
                line: line.to_owned(),
            })
        };
        match word {
            RESUME => number(RESUME).map(Line::Resume),
            ACK => number(ACK).map(Line::Ack),
            CONTROL => {
                let (id, json) = rest.and_then(|r| r.split_once(' ')).ok_or_else(|| {
                    SessionLineError::MissingArgument {
                        word: CONTROL,
                        line: line.to_owned(),
                    }
                })?;
                let id = decimal(id).ok_or_else(|| SessionLineError::Number {
                    value: id.to_owned(),
                    line: line.to_owned(),
                })?;
                Ok(Line::Control {
                    id,
                    json: json.to_owned(),
                })
            }
            DOUBLES => Ok(Line::Doubles(rest.unwrap_or("").to_owned())),
            _ => Ok(Line::Unknown(line.to_owned())),
        }
    }

    /// True for the confirmation of an exact-doubles offer (spec §3.8).
    pub fn confirms_exact_doubles(&self) -> bool {
        matches!(self, Line::Doubles(e) if e == crate::exact_doubles::OFFER)
    }
}

/// Writes the line with its LF, exactly as it goes on the wire.
impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Line::Resume(offset) => writeln!(f, "{RESUME} {offset}"),
            Line::Ack(offset) => writeln!(f, "{ACK} {offset}"),
            Line::Control { id, json } => writeln!(f, "{CONTROL} {id} {json}"),
            Line::Doubles(encoding) => writeln!(f, "{DOUBLES} {encoding}"),
            Line::Unknown(line) => writeln!(f, "{line}"),
        }
    }
}

/// A decimal number from the network: ASCII digits only (no sign, no
/// space), within u64.
pub(super) fn decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.bytes().try_fold(0u64, |n, b| {
        n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_line_is_byte_identical() {
        let cases = [
            (Line::Resume(0), "streamgauge-resume 0\n"),
            (
                Line::Ack(u64::MAX),
                "streamgauge-ack 18446744073709551615\n",
            ),
            (
                Line::Control {
                    id: 3,
                    json: r#"{"action":"pause"}"#.into(),
                },
                "streamgauge-control 3 {\"action\":\"pause\"}\n",
            ),
            (
                Line::Doubles(crate::exact_doubles::OFFER.into()),
                crate::exact_doubles::CONFIRMATION,
            ),
            (
                Line::Unknown("streamgauge-later 1 2".into()),
                "streamgauge-later 1 2\n",
            ),
        ];
        for (line, wire) in cases {
            assert_eq!(line.to_string(), wire);
            assert_eq!(Line::parse(wire.trim_end_matches('\n')), Ok(line));
        }
    }

    #[test]
    fn only_double64_confirms() {
        assert!(Line::parse("streamgauge-doubles double64")
            .unwrap()
            .confirms_exact_doubles());
        for other in [
            "streamgauge-doubles float128",
            "streamgauge-doubles",
            "streamgauge-doubles double64 x",
        ] {
            let line = Line::parse(other).unwrap();
            assert!(!line.confirms_exact_doubles(), "{other:?}");
        }
        assert!(!Line::Ack(1).confirms_exact_doubles());
    }

    #[test]
    fn lines_end_with_lf_only() {
        // Spec §3.6: LF-terminated; a CR is part of the argument.
        assert!(Line::parse("streamgauge-ack 7\r").is_err());
        assert_eq!(Line::parse("streamgauge-ack 007"), Ok(Line::Ack(7)));
    }

    #[test]
    fn malformed_known_lines_are_errors() {
        for bad in [
            "streamgauge-ack",
            "streamgauge-ack ",
            "streamgauge-ack x",
            "streamgauge-ack +5",
            "streamgauge-ack -1",
            "streamgauge-ack 5 ",
            "streamgauge-ack  5",
            "streamgauge-resume 18446744073709551616",
            "streamgauge-resume 99999999999999999999999",
            "streamgauge-control",
            "streamgauge-control 1",
            "streamgauge-control x {}",
        ] {
            assert!(Line::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            Line::parse("streamgauge-ack"),
            Err(SessionLineError::MissingArgument {
                word: "streamgauge-ack",
                line: "streamgauge-ack".into()
            })
        );
        assert!(matches!(
            Line::parse("streamgauge-resume 18446744073709551616"),
            Err(SessionLineError::Number { value, .. }) if value == "18446744073709551616"
        ));
    }

    #[test]
    fn unknown_lines_are_reported_distinctly() {
        for other in ["", "hello", "streamgauge-ackx 1", "STREAMGAUGE-ACK 1"] {
            assert_eq!(Line::parse(other), Ok(Line::Unknown(other.into())));
        }
    }

    /// Lines as a receiver could write them (no LF inside; an unknown
    /// line's first word is not a known one).
    fn any_line() -> impl Strategy<Value = Line> {
        let text = "[^\n]{0,60}";
        prop_oneof![
            any::<u64>().prop_map(Line::Resume),
            any::<u64>().prop_map(Line::Ack),
            (any::<u64>(), text).prop_map(|(id, json)| Line::Control { id, json }),
            text.prop_map(Line::Doubles),
            text.prop_filter("a known word", |l| {
                let word = l.split(' ').next().unwrap_or("");
                ![RESUME, ACK, CONTROL, DOUBLES].contains(&word)
            })
            .prop_map(Line::Unknown),
        ]
    }

    proptest! {
        #[test]
        fn parse_inverts_write(line in any_line()) {
            let wire = line.to_string();
            prop_assert!(wire.ends_with('\n'));
            prop_assert_eq!(Line::parse(&wire[..wire.len() - 1]), Ok(line));
        }

        #[test]
        fn parse_never_panics_and_writes_back(s in "[^\\n]{0,80}", word in prop_oneof![
            Just(RESUME), Just(ACK), Just(CONTROL), Just(DOUBLES)
        ], n in "[0-9+ -]{0,25}") {
            if let Ok(line) = Line::parse(&s) {
                let wire = line.to_string();
                prop_assert_eq!(Line::parse(&wire[..wire.len() - 1]), Ok(line));
            }
            let _ = Line::parse(&format!("{word} {n}"));
            let _ = Line::parse(&format!("{word} {n} {s}"));
        }

        #[test]
        fn numbers_match_u64(n in any::<u64>(), extra in 0u8..10) {
            prop_assert_eq!(decimal(&n.to_string()), Some(n));
            let big = format!("{n}{extra}");
            prop_assert_eq!(decimal(&big), big.parse::<u64>().ok());
        }
    }
}
