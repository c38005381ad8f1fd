//! Shared checks for the omsp fuzz targets (see `fuzz_targets/`).
//!
//! Every target panics (and so reports a crash) when a property of the codec
//! does not hold:
//!
//! - the decoder never panics, and its buffer stays within its limits plus one
//!   input chunk;
//! - decoding in chunks yields exactly what decoding all at once yields;
//! - error offsets lie inside the input;
//! - every decoded sample re-encodes and decodes back to the same values
//!   (exactly in text; up to DOUBLE_T quantisation of scalar doubles and
//!   timestamps in binary).

use arbitrary::Unstructured;
use omsp::binary::double;
use omsp::{
    Content, DecodeError, Decoder, EncodeError, Encoder, ErrorKind, Event, Field, Header,
    HeaderError, Limits, OmlType, Sample, Schema, SchemaError, Value,
};

/// Small limits, so that the fuzzer reaches the over-limit paths.
pub const SMALL_LIMITS: Limits = Limits {
    max_line: 1024,
    max_packet: 4096,
    max_index: 300,
    max_fields: 64,
    max_header: 8192,
    max_header_lines: 64,
    max_extra_keys: 8,
};

/// Bytes of text a (partial) header holds: what a hostile header can make
/// the decoder keep.
pub fn header_bytes(h: &Header) -> usize {
    let opt = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    let schemas: usize = h
        .schemas
        .iter()
        .map(|s| s.name.len() + s.fields.iter().map(|f| f.name.len()).sum::<usize>())
        .sum();
    let extra: usize = h.extra.iter().map(|(k, v)| k.len() + v.len()).sum();
    opt(&h.domain) + opt(&h.sender_id) + opt(&h.app_name) + schemas + extra
}

/// The memory property: whatever the input, a header being read holds no
/// more than the limits allow.
fn assert_header_bounded(d: &Decoder, limits: &Limits) {
    if let Some(h) = d.partial_header() {
        assert!(
            header_bytes(h) <= limits.max_header,
            "partial header holds {} bytes > max_header {}",
            header_bytes(h),
            limits.max_header
        );
        assert!(h.extra.len() <= limits.max_extra_keys, "too many extra keys kept");
        assert!(
            h.schemas.len() <= limits.max_index as usize + 1,
            "too many schemas kept"
        );
    }
}

/// Header of `ref-alltypes.{bin,txt}` (liboml2 capture), without `content`.
const ALLTYPES: &str = "protocol: 5\ndomain: vecdomain\nstart-time: 1795310947\n\
sender-id: vec-sender\napp-name: vec\n\
schema: 0 _experiment_metadata subject:string key:string value:string \n\
schema: 1 _client_instrumentation measurements_injected:uint32 measurements_dropped:uint32 \
bytes_allocated:uint64 bytes_freed:uint64 bytes_in_use:uint64 bytes_max:uint64 \n\
schema: 2 vec_scalars i32:int32 u32:uint32 i64:int64 u64:uint64 dbl:double str:string \
blb:blob gid:guid bol:bool \n\
schema: 3 vec_vdouble v:[double] \nschema: 4 vec_vint32 v:[int32] \n\
schema: 5 vec_vuint32 v:[uint32] \nschema: 6 vec_vint64 v:[int64] \n\
schema: 7 vec_vuint64 v:[uint64] \nschema: 8 vec_vbool v:[bool] \n";

/// Header of `ref-onemp.{bin,txt}`, without `content`.
const ONEMP: &str = "protocol: 5\ndomain: vecdomain\nstart-time: 1795310976\n\
sender-id: vec-sender\napp-name: vec\n\
schema: 0 _experiment_metadata subject:string key:string value:string \n\
schema: 1 _client_instrumentation measurements_injected:uint32 measurements_dropped:uint32 \
bytes_allocated:uint64 bytes_freed:uint64 bytes_in_use:uint64 bytes_max:uint64 \n\
schema: 2 vec_all i32:int32 u32:uint32 i64:int64 u64:uint64 dbl:double str:string blb:blob \
gid:guid bol:bool vd:[double] vi32:[int32] vu32:[uint32] vi64:[int64] vu64:[uint64] vb:[bool] \n";

/// Old spellings, CRLF, a metadata schema with its own column order.
const OLD_CRLF: &str = "protocol: 3\r\nexperiment-id: e\r\nstart_time: 1\r\n\
schema: 1 a x:int32 y:double z:string\r\n\
schema: 0 meta key:string extra:blob value:string subject:string\r\n";

/// No schema at all: stream 0 falls back to `_experiment_metadata`, and
/// streams can only be declared through it.
const BARE: &str = "protocol: 5\nx-ext: 1\n";

const PREFIXES: [&str; 4] = [ALLTYPES, ONEMP, OLD_CRLF, BARE];

/// One of the fixed valid headers (selected by `sel`), for `content`.
pub fn fixed_header(sel: u8, content: Content) -> Vec<u8> {
    let prefix = PREFIXES[usize::from(sel) % PREFIXES.len()];
    let eol = if prefix.contains('\r') { "\r\n" } else { "\n" };
    format!("{prefix}content: {}{eol}{eol}", content.name()).into_bytes()
}

/// A deterministic sequence of chunk sizes chosen by `ctl`.
pub fn chunk_sizes(ctl: u8) -> impl FnMut() -> usize {
    let max = 1 + usize::from(ctl & 0x3f) * 8;
    let mut s = 0x9e37_79b9u32 ^ (u32::from(ctl) << 8 | u32::from(ctl));
    move || {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        1 + (s as usize % max)
    }
}

type Events = Vec<Result<Event, DecodeError>>;

/// Decodes `input` fed in chunks, checking after every step that the
/// decoder's buffer stays within its limits (plus the chunk just fed).
pub fn decode_chunked(input: &[u8], limits: Limits, ctl: u8) -> Events {
    // Text: at most one incomplete line; binary: at most one incomplete frame.
    let bound = limits.max_line.max(limits.max_packet + 7);
    let mut d = Decoder::with_limits(limits);
    let mut next = chunk_sizes(ctl);
    let mut out = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        let n = next().min(rest.len());
        d.feed(&rest[..n]);
        rest = &rest[n..];
        assert!(
            d.buffered() <= bound + n,
            "buffered {} > bound {bound} + chunk {n}",
            d.buffered()
        );
        out.extend(std::iter::from_fn(|| d.next_event()));
        assert!(
            d.buffered() <= bound + n,
            "buffered {} after draining > bound {bound} + chunk {n}",
            d.buffered()
        );
        assert_header_bounded(&d, &limits);
    }
    d.finish();
    out.extend(std::iter::from_fn(|| d.next_event()));
    assert!(d.is_done(), "finished and drained decoder is not done");
    assert!(d.next_event().is_none());
    out
}

/// Decodes `input` fed all at once.
pub fn decode_whole(input: &[u8], limits: Limits) -> Events {
    let mut d = Decoder::with_limits(limits);
    d.feed(input);
    d.finish();
    std::iter::from_fn(|| d.next_event()).collect()
}

/// Bit-exact double equality, except that all NaNs are equal.
pub fn f64_eq(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Value equality with [`f64_eq`] for doubles (so `-0.0 != 0.0`).
pub fn value_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => f64_eq(*x, *y),
        (Value::VecDouble(x), Value::VecDouble(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| f64_eq(*p, *q))
        }
        _ => a == b,
    }
}

/// Sample equality with [`value_eq`].
pub fn sample_eq(a: &Sample, b: &Sample) -> bool {
    a.stream == b.stream
        && a.seq == b.seq
        && f64_eq(a.ts, b.ts)
        && a.values.len() == b.values.len()
        && a.values.iter().zip(&b.values).all(|(x, y)| value_eq(x, y))
}

fn event_eq(a: &Result<Event, DecodeError>, b: &Result<Event, DecodeError>) -> bool {
    match (a, b) {
        (Ok(Event::Sample(x)), Ok(Event::Sample(y))) => sample_eq(x, y),
        _ => a == b,
    }
}

/// Asserts that two event sequences are the same.
pub fn assert_events_eq(a: &Events, b: &Events, what: &str) {
    let same = a.len() == b.len() && a.iter().zip(b).all(|(x, y)| event_eq(x, y));
    assert!(same, "{what}: event sequences differ\n{a:#?}\n!=\n{b:#?}");
}

/// What a scalar double becomes through DOUBLE_T.
pub fn quantise(v: f64) -> f64 {
    match double::encode(v) {
        Some((m, x)) => double::decode(m, x),
        None => f64::NAN,
    }
}

/// What a sample becomes through the binary encoding: int32 seq, DOUBLE_T
/// timestamp and scalar doubles.
pub fn binary_image(s: &Sample) -> Sample {
    Sample {
        stream: s.stream,
        seq: i64::from(s.seq as i32),
        ts: quantise(s.ts),
        values: s
            .values
            .iter()
            .map(|v| match v {
                Value::Double(d) => Value::Double(quantise(*d)),
                other => other.clone(),
            })
            .collect(),
    }
}

/// Re-encodes `samples` after `header` as `content`, decodes the result with
/// default limits and checks it reads back as the same header and samples.
pub fn assert_reencodes(header: &Header, samples: &[Sample], content: Content) {
    let mut enc = Encoder::new(content);
    let mut out = Vec::new();
    enc.header(header, &mut out);
    let mut expected = Vec::new();
    for s in samples {
        // The encoder only appends, so an unchanged length means unchanged
        // bytes.
        let before = out.len();
        let values = s.values.iter().map(Value::as_value_ref);
        match enc.tuple(&mut out, s.stream, s.seq, s.ts, values) {
            Ok(()) => expected.push(match content {
                Content::Text => s.clone(),
                Content::Binary => binary_image(s),
            }),
            // A binary string read with invalid UTF-8 grows when made valid
            // (U+FFFD); the encoder must refuse it and leave `out` alone.
            // Later samples may depend on it (schema declarations): stop.
            Err(EncodeError::StringTooLong(n)) if content == Content::Binary => {
                assert!(n > 254, "StringTooLong({n})");
                assert_eq!(out.len(), before, "failed encode changed the output");
                break;
            }
            Err(e) => panic!("cannot re-encode {s:?} as {content:?}: {e}"),
        }
    }
    let events = decode_whole(&out, Limits::default());
    let mut it = events.into_iter();
    let want = Header {
        content,
        ..header.clone()
    };
    match it.next() {
        Some(Ok(Event::Header(h))) => assert_eq!(h, want, "re-encoded header"),
        other => panic!("re-encoded stream starts with {other:?}"),
    }
    let mut got = Vec::new();
    for ev in it {
        match ev {
            Ok(Event::Sample(s)) => got.push(s),
            Ok(Event::Schema(_)) => {}
            other => panic!("re-encoded stream: unexpected {other:?}"),
        }
    }
    assert_eq!(got.len(), expected.len(), "re-encoded sample count");
    for (g, e) in got.iter().zip(&expected) {
        assert!(
            sample_eq(g, e),
            "re-encoded sample\n{g:?}\n!= expected\n{e:?}"
        );
    }
}

/// The `text` / `binary` targets: a fixed valid header of `content`, then
/// fuzz bytes, fed in chunks chosen by the input.
pub fn check_body(data: &[u8], content: Content) {
    let [sel, ctl, body @ ..] = data else {
        return;
    };
    let mut input = fixed_header(*sel, content);
    let header_len = input.len();
    input.extend_from_slice(body);

    let chunked = decode_chunked(&input, SMALL_LIMITS, *ctl);
    let whole = decode_whole(&input, SMALL_LIMITS);
    assert_events_eq(&chunked, &whole, "chunked vs whole");

    let mut it = whole.iter();
    let header = match it.next() {
        Some(Ok(Event::Header(h))) => h,
        other => panic!("fixed header not decoded: {other:?}"),
    };
    let (parsed, used) = Header::parse(&input)
        .ok()
        .flatten()
        .expect("fixed header parses");
    assert_eq!(&parsed, header);
    assert_eq!(used, header_len);
    assert_eq!(header.content, content);

    let mut samples = Vec::new();
    for ev in it {
        match ev {
            Ok(Event::Header(_)) => panic!("second header"),
            Ok(Event::Schema(_)) => {}
            Ok(Event::Sample(s)) => samples.push(s.clone()),
            Err(e) => {
                assert!(
                    e.offset >= header_len as u64 && e.offset < input.len() as u64,
                    "error offset {} outside the body {header_len}..{}: {e}",
                    e.offset,
                    input.len()
                );
                if let ErrorKind::Header(_) = e.kind {
                    panic!("header error in the body: {e}");
                }
            }
        }
    }
    assert_reencodes(header, &samples, content);
}

/// The `header` target: `Header::parse` and the decoder on the same bytes.
pub fn check_header(data: &[u8]) {
    let parsed = Header::parse(data);
    let header = parsed
        .as_ref()
        .ok()
        .and_then(|p| p.as_ref())
        .map(|(h, _)| h);
    check_session(data, header);
    if let Ok(Some((h, used))) = &parsed {
        assert!(*used <= data.len() && data[*used - 1] == b'\n');
        let mut out = Vec::new();
        h.write(&mut out);
        let (h2, used2) = Header::parse(&out)
            .expect("a written header parses")
            .expect("a written header is complete");
        assert_eq!(&h2, h, "header write/parse round trip");
        assert_eq!(used2, out.len());
    }

    let limits = Limits {
        max_line: 256,
        max_header: 4096,
        max_header_lines: 48,
        max_extra_keys: 6,
        ..Limits::default()
    };
    let ctl = data.len() as u8 ^ data.first().copied().unwrap_or(0);
    let chunked = decode_chunked(data, limits, ctl);
    let whole = decode_whole(data, limits);
    assert_events_eq(&chunked, &whole, "chunked vs whole");

    match whole.first() {
        Some(Ok(Event::Header(hd))) => {
            let Ok(Some((h, used))) = &parsed else {
                panic!("decoder accepted a header that Header::parse gives as {parsed:?}");
            };
            assert_eq!(h, hd);
            let mut d = Decoder::with_limits(limits);
            d.feed(data);
            assert!(matches!(d.next_event(), Some(Ok(Event::Header(_)))));
            assert_eq!(d.offset(), *used as u64, "decoder offset after the header");
        }
        Some(Err(e)) => {
            assert!(e.offset <= data.len() as u64, "offset {} > len", e.offset);
            match (&e.kind, &parsed) {
                // Only the decoder has size and count limits (Header::parse
                // has none).
                (
                    ErrorKind::Header(
                        HeaderError::LineTooLong { .. }
                        | HeaderError::TooLarge { .. }
                        | HeaderError::TooManyLines { .. }
                        | HeaderError::TooManySchemas { .. }
                        | HeaderError::TooManyExtraKeys { .. },
                    ),
                    _,
                ) => {}
                (ErrorKind::Header(he), Err(pe)) => assert_eq!(he, pe),
                // Only binding can fail in the decoder but not in parse.
                (
                    ErrorKind::Header(HeaderError::BadSchema {
                        source: SchemaError::IndexTooLarge { .. },
                        ..
                    }),
                    Ok(Some(_)),
                ) => {}
                (ErrorKind::Truncated { what: "header", .. }, Ok(None)) => {}
                (k, p) => panic!("decoder error {k:?} but Header::parse gives {p:?}"),
            }
            assert_eq!(whole.len(), 1, "events after a fatal header error");
        }
        other => panic!("decoder starts with {other:?}"),
    }
}

fn arb_f64(u: &mut Unstructured<'_>) -> arbitrary::Result<f64> {
    // Mostly "interesting" values, sometimes any bit pattern.
    Ok(match u.int_in_range(0u8..=7)? {
        0 => f64::from_bits(u.arbitrary()?),
        1 => -0.0,
        2 => f64::NAN,
        3 => *u.choose(&[f64::INFINITY, f64::NEG_INFINITY, f64::MIN_POSITIVE, 5e-324])?,
        4 => f64::from(u.arbitrary::<i32>()?),
        _ => f64::from(u.arbitrary::<i16>()?) / f64::from(u.int_in_range(1u16..=1000)?),
    })
}

fn arb_value(u: &mut Unstructured<'_>, ty: OmlType) -> arbitrary::Result<Value> {
    fn many<T>(
        u: &mut Unstructured<'_>,
        mut f: impl FnMut(&mut Unstructured<'_>) -> arbitrary::Result<T>,
    ) -> arbitrary::Result<Vec<T>> {
        let n = u.int_in_range(0usize..=40)?;
        (0..n).map(|_| f(u)).collect()
    }
    Ok(match ty {
        OmlType::Int32 => Value::Int32(u.arbitrary()?),
        OmlType::UInt32 => Value::UInt32(u.arbitrary()?),
        OmlType::Int64 => Value::Int64(u.arbitrary()?),
        OmlType::UInt64 => Value::UInt64(u.arbitrary()?),
        OmlType::Double => Value::Double(arb_f64(u)?),
        OmlType::String => Value::String(u.arbitrary::<String>()?),
        OmlType::Blob => Value::Blob(u.arbitrary::<Vec<u8>>()?),
        OmlType::Guid => Value::Guid(u.arbitrary()?),
        OmlType::Bool => Value::Bool(u.arbitrary()?),
        OmlType::VecDouble => Value::VecDouble(many(u, arb_f64)?),
        OmlType::VecInt32 => Value::VecInt32(many(u, |u| u.arbitrary())?),
        OmlType::VecUInt32 => Value::VecUInt32(many(u, |u| u.arbitrary())?),
        OmlType::VecInt64 => Value::VecInt64(many(u, |u| u.arbitrary())?),
        OmlType::VecUInt64 => Value::VecUInt64(many(u, |u| u.arbitrary())?),
        OmlType::VecBool => Value::VecBool(many(u, |u| u.arbitrary())?),
    })
}

/// A generated session: schemas and tuples matching them.
#[derive(Debug)]
pub struct Session {
    /// Chunking control.
    pub ctl: u8,
    /// Header with the schemas.
    pub header: Header,
    /// (stream index, seq, timestamp, values).
    pub tuples: Vec<(u32, i64, f64, Vec<Value>)>,
}

/// Builds a session from fuzz bytes.
pub fn arb_session(u: &mut Unstructured<'_>) -> arbitrary::Result<Session> {
    let ctl = u.arbitrary()?;
    let mut header = Header::new("fuzz", "sender", "app", u.arbitrary()?, Content::Text);
    let nstreams = u.int_in_range(1usize..=4)?;
    for si in 0..nstreams {
        let mut index = u.int_in_range(1u32..=255)?;
        while header.schemas.iter().any(|s| s.index == index) {
            index = index % 255 + 1;
        }
        let nfields = u.int_in_range(1usize..=20)?;
        let fields = (0..nfields)
            .map(|j| Ok(Field::new(format!("f{j}"), *u.choose(&OmlType::ALL)?)))
            .collect::<arbitrary::Result<Vec<_>>>()?;
        header
            .schemas
            .push(Schema::new(index, format!("s{si}"), fields).expect("valid names"));
    }
    let ntuples = u.int_in_range(0usize..=12)?;
    let mut tuples = Vec::new();
    for _ in 0..ntuples {
        let schema = u.choose(&header.schemas)?.clone();
        let values = schema
            .fields
            .iter()
            .map(|f| arb_value(u, f.ty))
            .collect::<arbitrary::Result<Vec<_>>>()?;
        tuples.push((schema.index, u.arbitrary()?, arb_f64(u)?, values));
    }
    Ok(Session {
        ctl,
        header,
        tuples,
    })
}

/// The `roundtrip` target.
pub fn check_roundtrip(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(session) = arb_session(&mut u) else {
        return;
    };
    for content in [Content::Text, Content::Binary] {
        let mut enc = Encoder::new(content);
        let mut out = Vec::new();
        enc.header(&session.header, &mut out);
        let mut expected = Vec::new();
        for (index, seq, ts, values) in &session.tuples {
            let before = out.len();
            let res = enc.tuple(
                &mut out,
                *index,
                *seq,
                *ts,
                values.iter().map(Value::as_value_ref),
            );
            let sample = Sample {
                stream: *index,
                seq: *seq,
                ts: *ts,
                values: values.clone(),
            };
            // The encoder reports the first string that is too long.
            let too_long = values.iter().find_map(|v| match v {
                Value::String(s) if s.len() > 254 => Some(s.len()),
                _ => None,
            });
            match content {
                Content::Text => {
                    assert_eq!(res, Ok(()));
                    expected.push(sample);
                }
                Content::Binary if too_long.is_some() => {
                    let n = too_long.unwrap_or_default();
                    assert_eq!(res, Err(EncodeError::StringTooLong(n)));
                    assert_eq!(out.len(), before, "rejected tuple changed the output");
                }
                Content::Binary => {
                    assert_eq!(res, Ok(()));
                    expected.push(binary_image(&sample));
                }
            }
        }
        let chunked = decode_chunked(&out, Limits::default(), session.ctl);
        let whole = decode_whole(&out, Limits::default());
        assert_events_eq(&chunked, &whole, "chunked vs whole");
        let mut it = whole.into_iter();
        let want = Header {
            content,
            ..session.header.clone()
        };
        match it.next() {
            Some(Ok(Event::Header(h))) => assert_eq!(h, want),
            other => panic!("{content:?}: stream starts with {other:?}"),
        }
        let got: Vec<Sample> = it
            .map(|ev| match ev {
                Ok(Event::Sample(s)) => s,
                other => panic!("{content:?}: unexpected {other:?}"),
            })
            .collect();
        assert_eq!(got.len(), expected.len(), "{content:?}: sample count");
        for (g, e) in got.iter().zip(&expected) {
            assert!(sample_eq(g, e), "{content:?}:\n{g:?}\n!= expected\n{e:?}");
        }
    }
}

/// The resumable-session parsers (spec §3.6–§3.8) on the same input: every
/// line of it as a back-channel line, and the parsed header's extension
/// keys. Nothing panics, and whatever parses writes back to itself.
pub fn check_session(data: &[u8], header: Option<&Header>) {
    use omsp::session::{Line, Offer};
    for raw in data.split(|&b| b == b'\n') {
        let Ok(text) = std::str::from_utf8(raw) else {
            continue;
        };
        if let Ok(line) = Line::parse(text) {
            let wire = line.to_string();
            assert_eq!(
                Line::parse(&wire[..wire.len() - 1]),
                Ok(line),
                "line write/parse"
            );
        }
    }
    if let Some(Ok(Some(offer))) = header.map(Offer::from_header) {
        let mut h = Header::new("d", "s", "a", 0, omsp::Content::Text);
        h.extra = offer.keys();
        assert_eq!(
            Offer::from_header(&h),
            Ok(Some(offer)),
            "offer keys round trip"
        );
    }
}
