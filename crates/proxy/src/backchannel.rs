//! Resumable sessions, back-channel version 1 (spec §3.6): the header keys
//! and the lines, for both roles the proxy plays: receiver towards its
//! clients, sender towards its upstream.

use omsp::Header;

/// Header key naming the session.
pub const KEY_SESSION: &str = "x-streamgauge-session";
/// Header key: data offset of the connection's first data byte.
pub const KEY_OFFSET: &str = "x-streamgauge-offset";
/// Header key: back-channel version.
pub const KEY_BACKCHANNEL: &str = "x-streamgauge-backchannel";
/// Header key: feedback control messages (spec §3.7). The proxy passes it
/// upstream for a resumable client that sent it, and relays the upstream's
/// control lines to that client.
pub const KEY_FEEDBACK: &str = "x-streamgauge-feedback";

/// Whether a client's header asks for control messages (with a session:
/// they travel on the session's back-channel).
pub fn wants_feedback(h: &Header) -> bool {
    let has = |key: &str, value: &str| h.extra.iter().any(|(k, v)| k == key && v == value);
    has(KEY_FEEDBACK, "1") && h.extra.iter().any(|(k, _)| k == KEY_SESSION)
}

/// Longest session id.
pub const MAX_ID: usize = 128;

/// Keys the proxy replaces when it forwards a header.
pub fn is_session_key(key: &str) -> bool {
    matches!(
        key,
        KEY_SESSION | KEY_OFFSET | KEY_BACKCHANNEL | KEY_FEEDBACK
    )
}

/// Whether `id` is a valid session id (1-128 bytes of `[A-Za-z0-9_.:-]`).
pub fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b))
}

/// The keys the proxy sends upstream.
pub fn sender_keys(session: &str, offset: u64) -> [(String, String); 3] {
    [
        (KEY_SESSION.to_owned(), session.to_owned()),
        (KEY_OFFSET.to_owned(), offset.to_string()),
        (KEY_BACKCHANNEL.to_owned(), "1".to_owned()),
    ]
}

/// What a client's header asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Session id.
    pub id: String,
    /// The offset the client announced.
    pub offset: u64,
}

impl Request {
    /// `Ok(None)` for a stock client (no session key); an error for
    /// malformed values.
    pub fn from_header(h: &Header) -> Result<Option<Request>, String> {
        let get = |key: &str| {
            h.extra
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        let Some(id) = get(KEY_SESSION) else {
            return Ok(None);
        };
        match get(KEY_BACKCHANNEL) {
            Some("1") => {}
            Some(v) => {
                return Err(format!(
                    "{KEY_BACKCHANNEL}: version {v:?} unknown (this proxy speaks 1)"
                ))
            }
            None => return Err(format!("{KEY_SESSION} needs {KEY_BACKCHANNEL}: 1")),
        }
        if !is_valid_id(id) {
            return Err(format!(
                "{KEY_SESSION}: {id:?} is not 1-{MAX_ID} bytes of [A-Za-z0-9_.:-]"
            ));
        }
        let offset = match get(KEY_OFFSET) {
            None => 0,
            Some(v) => v
                .parse()
                .map_err(|_| format!("{KEY_OFFSET}: {v:?} is not a decimal byte offset"))?,
        };
        Ok(Some(Request {
            id: id.to_owned(),
            offset,
        }))
    }
}

/// The resume line.
pub fn resume_line(offset: u64) -> String {
    format!("streamgauge-resume {offset}\n")
}

/// An acknowledgement line.
pub fn ack_line(offset: u64) -> String {
    format!("streamgauge-ack {offset}\n")
}

/// A line received on the back-channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// `streamgauge-resume <offset>`.
    Resume(u64),
    /// `streamgauge-ack <offset>`.
    Ack(u64),
    /// `streamgauge-control <id> <json>` (spec §3.7): the whole line, to be
    /// relayed to the client as it is.
    Control(String),
    /// A word this version does not know (ignored, as the spec requires).
    Other(String),
}

/// Parses one line (without its LF); a malformed known line is an error.
pub fn parse_line(line: &str) -> Result<Line, String> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
    let num = || {
        rest.parse::<u64>()
            .map_err(|_| format!("malformed back-channel line {line:?}"))
    };
    match word {
        "streamgauge-resume" => num().map(Line::Resume),
        "streamgauge-ack" => num().map(Line::Ack),
        "streamgauge-control" => Ok(Line::Control(format!("{line}\n"))),
        w => Ok(Line::Other(w.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        assert_eq!(parse_line("streamgauge-resume 12"), Ok(Line::Resume(12)));
        assert_eq!(parse_line("streamgauge-ack 7"), Ok(Line::Ack(7)));
        assert!(parse_line("streamgauge-ack x").is_err());
        assert_eq!(
            parse_line("streamgauge-control 1 {}"),
            Ok(Line::Control("streamgauge-control 1 {}\n".into()))
        );
        assert!(matches!(
            parse_line("streamgauge-later 1"),
            Ok(Line::Other(_))
        ));
    }

    #[test]
    fn requests() {
        let (h, _) = Header::parse(
            b"protocol: 5\nx-streamgauge-session: a-1\nx-streamgauge-offset: 10\nx-streamgauge-backchannel: 1\n\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            Request::from_header(&h),
            Ok(Some(Request {
                id: "a-1".into(),
                offset: 10
            }))
        );
        let (h, _) = Header::parse(
            b"protocol: 5\nx-streamgauge-session: a b\nx-streamgauge-backchannel: 1\n\n",
        )
        .unwrap()
        .unwrap();
        assert!(Request::from_header(&h).is_err());
    }
}
