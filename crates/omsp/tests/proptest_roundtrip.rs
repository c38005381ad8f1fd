//! Property tests of the codec: random schemas and tuples round-trip through
//! both encodings whatever the chunking, re-encoding what was decoded is
//! stable, and the decoder stays bounded on arbitrary input.

use std::sync::Arc;

use omsp::binary::{double, BinaryEncoder};
use omsp::{
    Content, DecodeError, Decoder, EncodeError, Encoder, Event, Field, Header, Limits, OmlType,
    Sample, Schema, Value,
};
use proptest::collection::vec;
use proptest::prelude::*;

// ---------------------------------------------------------------- helpers --

/// Bit-exact double equality, except that all NaNs are equal (so `-0.0` and
/// `0.0` differ).
fn f64_eq(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn value_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => f64_eq(*x, *y),
        (Value::VecDouble(x), Value::VecDouble(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| f64_eq(*p, *q))
        }
        _ => a == b,
    }
}

fn sample_eq(a: &Sample, b: &Sample) -> bool {
    a.stream == b.stream
        && a.seq == b.seq
        && f64_eq(a.ts, b.ts)
        && a.values.len() == b.values.len()
        && a.values.iter().zip(&b.values).all(|(x, y)| value_eq(x, y))
}

fn assert_samples_eq(got: &[Sample], want: &[Sample]) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), want.len(), "sample count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        prop_assert!(sample_eq(g, w), "sample {}:\n{:?}\n!=\n{:?}", i, g, w);
    }
    Ok(())
}

/// What DOUBLE_T makes of a scalar double.
fn quantise(v: f64) -> f64 {
    match double::encode(v) {
        Some((m, x)) => double::decode(m, x),
        None => f64::NAN,
    }
}

/// What a sample becomes through the binary encoding: seq sent as int32,
/// timestamp and scalar doubles through DOUBLE_T, everything else exact.
fn binary_image(s: &Sample) -> Sample {
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

type Events = Vec<Result<Event, DecodeError>>;

/// Feeds `input` in chunks of the given sizes (cycled), draining events after
/// every chunk, and checks that the buffer stays within `bound` plus the
/// chunk just fed.
fn decode_chunked(
    input: &[u8],
    limits: Limits,
    chunks: &[usize],
    bound: Option<usize>,
) -> Result<Events, TestCaseError> {
    let mut d = Decoder::with_limits(limits);
    let mut out = Vec::new();
    let mut rest = input;
    for &n in chunks.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let n = n.clamp(1, rest.len());
        d.feed(&rest[..n]);
        rest = &rest[n..];
        if let Some(b) = bound {
            prop_assert!(
                d.buffered() <= b + n,
                "fed: {} > {} + {}",
                d.buffered(),
                b,
                n
            );
        }
        out.extend(std::iter::from_fn(|| d.next_event()));
        if let Some(b) = bound {
            prop_assert!(d.buffered() <= b, "drained: {} > {}", d.buffered(), b);
        }
    }
    d.finish();
    out.extend(std::iter::from_fn(|| d.next_event()));
    prop_assert!(d.is_done());
    Ok(out)
}

fn decode_whole(input: &[u8], limits: Limits) -> Events {
    let mut d = Decoder::with_limits(limits);
    d.feed(input);
    d.finish();
    std::iter::from_fn(|| d.next_event()).collect()
}

fn assert_events_eq(a: &Events, b: &Events) -> Result<(), TestCaseError> {
    prop_assert_eq!(a.len(), b.len(), "event count:\n{:?}\n{:?}", a, b);
    for (x, y) in a.iter().zip(b) {
        let same = match (x, y) {
            (Ok(Event::Sample(p)), Ok(Event::Sample(q))) => sample_eq(p, q),
            _ => x == y,
        };
        prop_assert!(same, "{:?} != {:?}", x, y);
    }
    Ok(())
}

/// Splits decoded events into the header, the samples and the errors.
fn split_events(events: Events) -> (Option<Header>, Vec<Sample>, Vec<DecodeError>) {
    let (mut header, mut samples, mut errors) = (None, Vec::new(), Vec::new());
    for ev in events {
        match ev {
            Ok(Event::Header(h)) => header = Some(h),
            Ok(Event::Schema(_)) => {}
            Ok(Event::Sample(s)) => samples.push(s),
            Err(e) => errors.push(e),
        }
    }
    (header, samples, errors)
}

// ------------------------------------------------------------- strategies --

fn arb_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => any::<f64>(),
        1 => Just(-0.0),
        1 => Just(0.0),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(f64::MIN_POSITIVE / 2.0), // subnormal
        1 => any::<u64>().prop_map(f64::from_bits),
        2 => (any::<i32>(), 1u16..1000).prop_map(|(a, b)| f64::from(a) / f64::from(b)),
    ]
}

/// Strings with the bytes that need escaping in text, and any character.
fn arb_string(max_chars: usize) -> impl Strategy<Value = String> {
    vec(
        prop_oneof![
            3 => any::<char>(),
            2 => prop::sample::select(vec!['\t', '\n', '\r', '\\', ' ', 'a', '.']),
        ],
        0..max_chars,
    )
    .prop_map(String::from_iter)
}

fn arb_value(ty: OmlType) -> BoxedStrategy<Value> {
    const N: std::ops::Range<usize> = 0..12;
    match ty {
        OmlType::Int32 => any::<i32>().prop_map(Value::Int32).boxed(),
        OmlType::UInt32 => any::<u32>().prop_map(Value::UInt32).boxed(),
        OmlType::Int64 => any::<i64>().prop_map(Value::Int64).boxed(),
        OmlType::UInt64 => any::<u64>().prop_map(Value::UInt64).boxed(),
        OmlType::Double => arb_f64().prop_map(Value::Double).boxed(),
        OmlType::String => arb_string(40).prop_map(Value::String).boxed(),
        OmlType::Blob => vec(any::<u8>(), 0..64).prop_map(Value::Blob).boxed(),
        OmlType::Guid => any::<u64>().prop_map(Value::Guid).boxed(),
        OmlType::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        OmlType::VecDouble => vec(arb_f64(), N).prop_map(Value::VecDouble).boxed(),
        OmlType::VecInt32 => vec(any::<i32>(), N).prop_map(Value::VecInt32).boxed(),
        OmlType::VecUInt32 => vec(any::<u32>(), N).prop_map(Value::VecUInt32).boxed(),
        OmlType::VecInt64 => vec(any::<i64>(), N).prop_map(Value::VecInt64).boxed(),
        OmlType::VecUInt64 => vec(any::<u64>(), N).prop_map(Value::VecUInt64).boxed(),
        OmlType::VecBool => vec(any::<bool>(), N).prop_map(Value::VecBool).boxed(),
    }
}

const NAME: &str = "[A-Za-z_][A-Za-z0-9_]{0,15}";

/// One schema with 1–20 fields of any type. Field names get a positional
/// suffix so that they are distinct.
fn arb_schema(index: u32) -> impl Strategy<Value = Schema> {
    (
        NAME,
        vec((NAME, prop::sample::select(OmlType::ALL.to_vec())), 1..=20),
    )
        .prop_map(move |(name, fields)| {
            let fields = fields
                .into_iter()
                .enumerate()
                .map(|(j, (f, ty))| Field::new(format!("{f}_{j}"), ty))
                .collect();
            Schema::new(index, name, fields).expect("generated names are valid")
        })
}

/// 1–4 schemas at distinct indices in 1..=255. Index 0 is left out: a
/// stream-0 tuple with subject `.` and key `schema` is a declaration, not data.
fn arb_schemas() -> impl Strategy<Value = Vec<Schema>> {
    prop::sample::subsequence((1u32..=255).collect::<Vec<_>>(), 1..=4)
        .prop_shuffle()
        .prop_flat_map(|indices| indices.into_iter().map(arb_schema).collect::<Vec<_>>())
}

#[derive(Debug, Clone)]
struct Session {
    header: Header,
    tuples: Vec<Sample>,
}

/// Up to `max` tuples of the given schemas, with matching values.
fn arb_tuples(schemas: Arc<Vec<Schema>>, max: usize) -> impl Strategy<Value = Vec<Sample>> {
    let tuple = (0..schemas.len()).prop_flat_map(move |i| {
        let schema = &schemas[i];
        let values: Vec<_> = schema.fields.iter().map(|f| arb_value(f.ty)).collect();
        (Just(schema.index), any::<i64>(), arb_f64(), values).prop_map(
            |(stream, seq, ts, values)| Sample {
                stream,
                seq,
                ts,
                values,
            },
        )
    });
    vec(tuple, 0..max)
}

fn arb_session(max_tuples: usize) -> impl Strategy<Value = Session> {
    (arb_schemas(), any::<i64>()).prop_flat_map(move |(schemas, start)| {
        let mut header = Header::new("dom", "sender", "app", start, Content::Text);
        header.schemas = schemas.clone();
        arb_tuples(Arc::new(schemas), max_tuples).prop_map(move |tuples| Session {
            header: header.clone(),
            tuples,
        })
    })
}

/// Truncates strings to the binary limit of 254 bytes (at a char boundary).
fn binary_safe(mut s: Session) -> Session {
    for t in &mut s.tuples {
        for v in &mut t.values {
            if let Value::String(st) = v {
                let mut n = st.len().min(254);
                while !st.is_char_boundary(n) {
                    n -= 1;
                }
                st.truncate(n);
            }
        }
    }
    s
}

fn arb_chunks() -> impl Strategy<Value = Vec<usize>> {
    vec(prop_oneof![1usize..8, 8usize..300, 300usize..70_000], 1..12)
}

fn encode(session: &Session, content: Content) -> Vec<u8> {
    let mut enc = Encoder::new(content);
    let mut out = Vec::new();
    enc.header(&session.header, &mut out);
    for t in &session.tuples {
        enc.tuple(
            &mut out,
            t.stream,
            t.seq,
            t.ts,
            t.values.iter().map(Value::as_value_ref),
        )
        .expect("encodable tuple");
    }
    out
}

/// Decodes `bytes` at once and in chunks, checks both agree and that the
/// stream holds exactly `header` and `want`.
fn check_decodes(
    bytes: &[u8],
    chunks: &[usize],
    header: &Header,
    want: &[Sample],
) -> Result<(), TestCaseError> {
    let whole = decode_whole(bytes, Limits::default());
    let chunked = decode_chunked(bytes, Limits::default(), chunks, None)?;
    assert_events_eq(&chunked, &whole)?;
    let (h, samples, errors) = split_events(whole);
    prop_assert!(errors.is_empty(), "errors: {:?}", errors);
    prop_assert_eq!(h.as_ref(), Some(header));
    assert_samples_eq(&samples, want)
}

// ------------------------------------------------------------------ tests --

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Text keeps every value exactly: doubles bit for bit (-0.0, subnormals,
    /// infinities), NaN as NaN, strings with TAB/LF/CR/backslash.
    #[test]
    fn text_round_trips_exactly(session in arb_session(30), chunks in arb_chunks()) {
        let bytes = encode(&session, Content::Text);
        let header = Header { content: Content::Text, ..session.header.clone() };
        check_decodes(&bytes, &chunks, &header, &session.tuples)?;
    }

    /// Binary keeps every value exactly except scalar doubles and timestamps
    /// (DOUBLE_T: 30-bit mantissa, NaN outside its range) and seq (int32).
    #[test]
    fn binary_round_trips_up_to_double_t(
        session in arb_session(30).prop_map(binary_safe),
        chunks in arb_chunks(),
    ) {
        let bytes = encode(&session, Content::Binary);
        let header = Header { content: Content::Binary, ..session.header.clone() };
        let want: Vec<Sample> = session.tuples.iter().map(binary_image).collect();
        check_decodes(&bytes, &chunks, &header, &want)?;
    }

    /// A binary string over 254 bytes is refused and the output is untouched;
    /// the encoder goes on working.
    #[test]
    fn binary_rejects_long_strings_without_writing(
        long in arb_string(400).prop_filter("over 254 bytes", |s| s.len() > 254),
        prefix in vec(any::<u8>(), 0..32),
        x in any::<i32>(),
    ) {
        let schema = Schema::parse("7 s a:int32 b:string").unwrap();
        let mut header = Header::new("d", "s", "a", 0, Content::Binary);
        header.schemas.push(schema);
        let mut enc = Encoder::new(Content::Binary);
        let mut out = Vec::new();
        enc.header(&header, &mut out);
        out.extend_from_slice(&prefix); // whatever the caller already had
        let before = out.clone();
        let res = enc.tuple(&mut out, 7, 1, 0.5, [Value::Int32(x).as_value_ref(), Value::String(long.clone()).as_value_ref()]);
        prop_assert_eq!(res, Err(EncodeError::StringTooLong(long.len())));
        prop_assert_eq!(&out, &before);
        // Same through the bare binary encoder.
        let mut bin = BinaryEncoder::new();
        let res = bin.encode_tuple(&mut out, 7, 1, 0.5, [Value::String(long.clone()).as_value_ref()]);
        prop_assert_eq!(res, Err(EncodeError::StringTooLong(long.len())));
        prop_assert_eq!(&out, &before);
        // 254 bytes are fine.
        out.truncate(before.len() - prefix.len());
        let ok: String = "é".repeat(127);
        enc.tuple(&mut out, 7, 2, 0.5, [Value::Int32(x).as_value_ref(), Value::String(ok.clone()).as_value_ref()]).unwrap();
        let (_, samples, errors) = split_events(decode_whole(&out, Limits::default()));
        prop_assert!(errors.is_empty(), "{:?}", errors);
        prop_assert_eq!(&samples[0].values, &vec![Value::Int32(x), Value::String(ok)]);
    }
}

// -------------------------------------- decode → encode → decode stability --

/// Tokens that make text lines which often decode.
fn arb_text_body() -> impl Strategy<Value = Vec<u8>> {
    let token = prop::sample::select(vec![
        "0",
        "1",
        "2",
        "3",
        "-1",
        "+7",
        "2.5",
        "-0.0",
        ".5",
        "1e400",
        "nan",
        "-nan",
        "inf",
        "T",
        "F",
        "true",
        "fa",
        "",
        "0 ",
        "2 1 2",
        "1 nan",
        "3 True F 1",
        "AAEC/w==",
        "3q0=",
        "x\\ty",
        "a\\",
        "\\q",
        "18446744073709551615",
        "-9223372036854775808",
        ".",
        "schema",
        "9 late a:int32",
        "\u{e9}",
    ]);
    let line = (
        prop::sample::select(vec!["0.5", "1", "-0.0", "nan", "x"]),
        prop::sample::select(vec!["0", "1", "2", "3", "9", "256"]),
        prop::sample::select(vec!["1", "-5", "9223372036854775807", "q"]),
        vec(token, 0..6),
        prop::sample::select(vec!["\n", "\r\n", "\t\n"]),
    )
        .prop_map(|(ts, ix, seq, vals, end)| {
            let mut l = format!("{ts}\t{ix}\t{seq}");
            for v in vals {
                l.push('\t');
                l.push_str(v);
            }
            l.push_str(end);
            l.into_bytes()
        });
    vec(prop_oneof![6 => line, 1 => vec(any::<u8>(), 0..40)], 0..30)
        .prop_map(|parts| parts.concat())
}

/// Valid frames for `header`'s streams with random byte flips, then random
/// bytes.
fn arb_binary_body(header: Header) -> impl Strategy<Value = Vec<u8>> {
    (
        arb_tuples(Arc::new(header.schemas.clone()), 12),
        vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        vec(any::<u8>(), 0..64),
    )
        .prop_map(move |(tuples, flips, noise)| {
            let session = binary_safe(Session {
                header: header.clone(),
                tuples,
            });
            let mut bytes = encode(&session, Content::Binary);
            let mut body = bytes.split_off(
                bytes
                    .windows(2)
                    .position(|w| w == b"\n\n")
                    .map_or(0, |p| p + 2),
            );
            if !body.is_empty() {
                for (i, b) in flips {
                    let at = i.index(body.len());
                    body[at] = b;
                }
            }
            body.extend_from_slice(&noise);
            body
        })
}

/// Decodes `bytes` (default limits), re-encodes the samples after the
/// decoded header, decodes that: the samples must come back (binary: as
/// their DOUBLE_T image), and a second re-encoding must give the same bytes.
fn check_stable(bytes: &[u8], content: Content) -> Result<(), TestCaseError> {
    let (header, samples, _) = split_events(decode_whole(bytes, Limits::default()));
    let header = header.expect("valid header decodes");
    let reencode = |samples: &[Sample]| {
        let mut enc = Encoder::new(content);
        let mut out = Vec::new();
        enc.header(&header, &mut out);
        let mut kept = Vec::new();
        for s in samples {
            let values = s.values.iter().map(Value::as_value_ref);
            match enc.tuple(&mut out, s.stream, s.seq, s.ts, values) {
                Ok(()) => kept.push(s.clone()),
                // Invalid UTF-8 read from a binary string grows when made
                // valid (U+FFFD); stop there (later declarations may need it).
                Err(EncodeError::StringTooLong(_)) if content == Content::Binary => break,
                Err(e) => panic!("cannot re-encode {s:?}: {e}"),
            }
        }
        (out, kept)
    };
    let (once, kept) = reencode(&samples);
    let (h2, again, errors) = split_events(decode_whole(&once, Limits::default()));
    prop_assert!(
        errors.is_empty(),
        "re-encoded stream has errors: {:?}",
        errors
    );
    prop_assert_eq!(h2.as_ref(), Some(&header));
    let want: Vec<Sample> = match content {
        Content::Text => kept,
        Content::Binary => kept.iter().map(binary_image).collect(),
    };
    assert_samples_eq(&again, &want)?;
    let (twice, _) = reencode(&again);
    prop_assert!(once == twice, "re-encoding is not a fixpoint");
    Ok(())
}

fn fixed_header(content: Content) -> Header {
    let mut h = Header::new("dom", "snd", "app", 1_700_000_000, content);
    for s in [
        "0 _experiment_metadata subject:string key:string value:string",
        "1 one a:int32 b:double c:string",
        "2 two v:[double] w:[bool] g:guid k:bool",
        "3 three b:blob u:uint64 i:int64 x:uint32 d:double",
    ] {
        h.schemas.push(Schema::parse(s).unwrap());
    }
    h
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn text_decode_encode_decode_is_stable(body in arb_text_body()) {
        let mut bytes = Vec::new();
        fixed_header(Content::Text).write(&mut bytes);
        bytes.extend_from_slice(&body);
        check_stable(&bytes, Content::Text)?;
    }

    #[test]
    fn binary_decode_encode_decode_is_stable(body in arb_binary_body(fixed_header(Content::Binary))) {
        let mut bytes = Vec::new();
        fixed_header(Content::Binary).write(&mut bytes);
        bytes.extend_from_slice(&body);
        check_stable(&bytes, Content::Binary)?;
    }
}

// ----------------------------------------------- bounded, panic-free decoder --

fn arb_hostile_body() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        4 => vec(any::<u8>(), 0..600),
        1 => vec(prop_oneof![Just(0xAAu8), Just(b'\n'), any::<u8>()], 0..64),
        // Frame headers declaring all sorts of lengths (some over the limit).
        1 => (prop_oneof![Just(1u8), Just(2u8), any::<u8>()], any::<u32>(), 0u32..1100)
            .prop_map(|(t, big, small)| {
                let len = if big % 2 == 0 { small } else { big };
                let mut v = vec![0xAA, 0xAA, t];
                if t == 2 {
                    v.extend_from_slice(&len.to_be_bytes());
                } else {
                    v.extend_from_slice(&(len as u16).to_be_bytes());
                }
                v
            }),
        1 => Just(b"1\t1\t1\t".to_vec()),
    ];
    vec(piece, 0..16).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Whatever follows a valid header, in whatever chunks: no panic, the
    /// buffer never holds more than one line or frame (plus the chunk just
    /// fed), chunking does not change the result, and error offsets are
    /// inside the body and in order.
    #[test]
    fn decoder_is_bounded_and_chunking_invariant(
        binary in any::<bool>(),
        body in arb_hostile_body(),
        chunks in vec(1usize..700, 1..10),
    ) {
        let limits = Limits { max_line: 256, max_packet: 1024, ..Limits::default() };
        let bound = limits.max_line.max(limits.max_packet + 7);
        let content = if binary { Content::Binary } else { Content::Text };
        let mut bytes = Vec::new();
        fixed_header(content).write(&mut bytes);
        let header_len = bytes.len() as u64;
        bytes.extend_from_slice(&body);
        let chunked = decode_chunked(&bytes, limits, &chunks, Some(bound))?;
        let whole = decode_whole(&bytes, limits);
        assert_events_eq(&chunked, &whole)?;
        let (header, _, errors) = split_events(whole);
        prop_assert!(header.is_some());
        let mut last = header_len;
        for e in &errors {
            prop_assert!(e.offset >= last && e.offset < bytes.len() as u64,
                "offset {} (previous {}, len {}): {}", e.offset, last, bytes.len(), e);
            last = e.offset;
        }
    }
}

// ------------------------------------------------------------ long packets --

/// Walks binary frames: (type, body length) of each.
fn frames(mut body: &[u8]) -> Vec<(u8, usize)> {
    let mut out = Vec::new();
    while body.len() >= 5 {
        assert_eq!(&body[..2], &[0xAA, 0xAA]);
        let (hdr, len) = match body[2] {
            1 => (5, usize::from(u16::from_be_bytes([body[3], body[4]]))),
            2 => (
                7,
                u32::from_be_bytes([body[3], body[4], body[5], body[6]]) as usize,
            ),
            t => panic!("frame type {t}"),
        };
        out.push((body[2], len));
        body = &body[hdr + len..];
    }
    assert!(body.is_empty());
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// A tuple whose body exceeds 65535 bytes switches the encoder to long
    /// frames for good; everything decodes, in any chunking.
    #[test]
    fn big_blob_switches_to_long_frames(
        small_before in 0usize..4,
        blob in (65_536usize..70_000, any::<u8>()).prop_map(|(n, b)| vec![b; n]),
        small_after in vec(arb_string(30).prop_map(|s| binary_safe_string(&s)), 1..6),
        chunks in arb_chunks(),
    ) {
        let mut header = Header::new("d", "s", "a", 0, Content::Binary);
        header.schemas.push(Schema::parse("1 big b:blob").unwrap());
        header.schemas.push(Schema::parse("2 small s:string").unwrap());
        let mut out = Vec::new();
        header.write(&mut out);
        let body_at = out.len();
        let mut enc = BinaryEncoder::new();
        let mut want = Vec::new();
        let mut seq = 0;
        let mut push = |enc: &mut BinaryEncoder, out: &mut Vec<u8>, stream: u32, v: Value| {
            seq += 1;
            enc.encode_tuple(out, stream, seq, 0.25, [v.as_value_ref()]).unwrap();
            want.push(Sample { stream, seq, ts: 0.25, values: vec![v] });
        };
        for i in 0..small_before {
            push(&mut enc, &mut out, 2, Value::String(format!("s{i}")));
        }
        prop_assert!(!enc.is_long());
        push(&mut enc, &mut out, 1, Value::Blob(blob));
        prop_assert!(enc.is_long());
        for s in &small_after {
            push(&mut enc, &mut out, 2, Value::String(s.clone()));
        }
        prop_assert!(enc.is_long());
        let types: Vec<u8> = frames(&out[body_at..]).into_iter().map(|(t, _)| t).collect();
        let mut expected_types = vec![1u8; small_before];
        expected_types.resize(small_before + 1 + small_after.len(), 2);
        prop_assert_eq!(types, expected_types);
        check_decodes(&out, &chunks, &header, &want)?;
    }
}

fn binary_safe_string(s: &str) -> String {
    let mut n = s.len().min(254);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    s[..n].to_owned()
}

#[test]
fn text_keeps_negative_zero_and_nan() {
    let mut header = Header::new("d", "s", "a", 0, Content::Text);
    header
        .schemas
        .push(Schema::parse("1 z d:double v:[double]").unwrap());
    let mut out = Vec::new();
    let mut enc = Encoder::new(Content::Text);
    enc.header(&header, &mut out);
    let vals = [Value::Double(-0.0), Value::VecDouble(vec![-0.0, f64::NAN])];
    enc.tuple(&mut out, 1, 1, -0.0, vals.iter().map(Value::as_value_ref))
        .unwrap();
    let (_, samples, errors) = split_events(decode_whole(&out, Limits::default()));
    assert!(errors.is_empty());
    let s = &samples[0];
    assert_eq!(s.ts.to_bits(), (-0.0f64).to_bits());
    assert!(value_eq(&s.values[0], &vals[0]));
    assert!(value_eq(&s.values[1], &vals[1]));
}
