//! The connection header a destination receives.

use omsp::metadata::schema0;
use omsp::{Content, Encoder, Header, Schema};

use crate::spec::Encoding;

/// Index of `_client_instrumentation` when it is reported.
pub(crate) const INSTR_INDEX: u32 = 1;

/// The identity written in every header.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    /// `domain`.
    pub(crate) domain: String,
    /// `sender-id`.
    pub(crate) sender_id: String,
    /// `app-name`.
    pub(crate) app: String,
    /// `start-time`, whole Unix seconds.
    pub(crate) start_time: i64,
}

/// The content type of an encoding.
pub(crate) fn content(e: Encoding) -> Content {
    match e {
        Encoding::Text => Content::Text,
        Encoding::Binary => Content::Binary,
    }
}

/// The header bytes, in liboml2's order: `protocol: 5`, `domain`,
/// `start-time`, `sender-id`, `app-name`, schema 0, schema 1
/// (`_client_instrumentation`, if this destination reports it), the
/// destination's streams by index, `content`, empty line.
#[cfg(test)]
pub(crate) fn header_bytes(
    id: &Identity,
    encoding: Encoding,
    instrumentation: Option<&Schema>,
    streams: &[&Schema],
) -> Vec<u8> {
    header_with_keys(id, encoding, instrumentation, streams, Vec::new())
}

/// The header key offering exact doubles (spec §3.8).
pub(crate) fn exact_doubles_key() -> (String, String) {
    (
        omsp::exact_doubles::KEY.to_owned(),
        omsp::exact_doubles::OFFER.to_owned(),
    )
}

/// The header bytes (see `header_bytes`) with extension keys (spec §3.2), written after the
/// schemas.
pub(crate) fn header_with_keys(
    id: &Identity,
    encoding: Encoding,
    instrumentation: Option<&Schema>,
    streams: &[&Schema],
    extra: Vec<(String, String)>,
) -> Vec<u8> {
    let content = content(encoding);
    let mut h = Header::new(&id.domain, &id.sender_id, &id.app, id.start_time, content);
    h.schemas.push(schema0());
    if let Some(instr) = instrumentation {
        h.schemas.push(instr.clone());
    }
    let mut user: Vec<&Schema> = streams.to_vec();
    user.sort_by_key(|s| s.index);
    h.schemas.extend(user.into_iter().cloned());
    h.extra = extra;
    let mut out = Vec::new();
    Encoder::new(content).header(&h, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use omsp::metadata::client_instrumentation_schema;

    #[test]
    fn reference_order() {
        let id = Identity {
            domain: "vecdomain".into(),
            sender_id: "vec-sender".into(),
            app: "vec".into(),
            start_time: 1795310976,
        };
        let s = Schema::parse("2 vec_all i32:int32").unwrap();
        let h = header_bytes(
            &id,
            Encoding::Text,
            Some(&client_instrumentation_schema(INSTR_INDEX)),
            &[&s],
        );
        let want = "protocol: 5\ndomain: vecdomain\nstart-time: 1795310976\nsender-id: vec-sender\napp-name: vec\n\
            schema: 0 _experiment_metadata subject:string key:string value:string \n\
            schema: 1 _client_instrumentation measurements_injected:uint32 measurements_dropped:uint32 bytes_allocated:uint64 bytes_freed:uint64 bytes_in_use:uint64 bytes_max:uint64 \n\
            schema: 2 vec_all i32:int32 \ncontent: text\n\n";
        assert_eq!(String::from_utf8(h).unwrap(), want);
    }
}
