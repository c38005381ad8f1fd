//! Generates the shared cross-language test vectors in `spec/vectors/`.
//!
//! Run with `cargo run -p omsp --example gen_vectors`; the output is
//! deterministic, so re-running rewrites identical files.
//!
//! Inputs are written by hand (header text, text lines, explicit packet bytes)
//! or, for well-formed binary tuples, with [`omsp::Encoder`]. The expected
//! decoding of every case is built from the values the case puts in (with an
//! independent model of DOUBLE_T for binary doubles), never by dumping the
//! decoder's output; the decoder is then run on each input and the generator
//! fails if the two disagree. The two reference captures (cases 0001 and 0002)
//! are byte-for-byte copies whose expected decoding is the decoder's, checked
//! against what the reference server stored by `tests/reference.rs`.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use omsp::{Content, Decoder, Encoder, Value};
use serde_json::{json, Value as Json};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

// ---------------------------------------------------------------------------
// Expected values as JSON (the conventions of spec/vectors/README.md, written
// out here independently of omsp::json).

fn jd(v: f64) -> Json {
    if v.is_nan() {
        Json::Null
    } else if v.is_infinite() {
        json!(if v > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(v)
    }
}

fn jv(v: &Value) -> Json {
    match v {
        Value::Int32(x) => json!(x),
        Value::UInt32(x) => json!(x),
        Value::Int64(x) => json!(x),
        Value::UInt64(x) | Value::Guid(x) => json!(x),
        Value::Double(x) => jd(*x),
        Value::String(s) => json!(s),
        Value::Blob(b) => json!(B64.encode(b)),
        Value::Bool(b) => json!(b),
        Value::VecDouble(v) => Json::Array(v.iter().map(|x| jd(*x)).collect()),
        Value::VecInt32(v) => json!(v),
        Value::VecUInt32(v) => json!(v),
        Value::VecInt64(v) => json!(v),
        Value::VecUInt64(v) => json!(v),
        Value::VecBool(v) => json!(v),
    }
}

/// `(index, name, [[field, type], ...])` of a canonical schema string.
fn parse_canon(canon: &str) -> (u32, String, Json) {
    let mut t = canon.split_whitespace();
    let index = t.next().and_then(|i| i.parse().ok()).expect("index");
    let name = t.next().expect("name").to_owned();
    let fields = t
        .map(|f| {
            let (n, ty) = f.split_once(':').expect("field:type");
            json!([n, ty])
        })
        .collect();
    (index, name, fields)
}

struct Hdr<'a> {
    protocol: u8,
    domain: Option<&'a str>,
    start_time: Option<i64>,
    sender_id: Option<&'a str>,
    app_name: Option<&'a str>,
    content: &'a str,
    /// Canonical schema strings.
    schemas: &'a [&'a str],
    extra: &'a [(&'a str, &'a str)],
}

fn header_json(h: &Hdr<'_>) -> Json {
    let schemas: Vec<Json> = h
        .schemas
        .iter()
        .map(|s| {
            let (index, name, fields) = parse_canon(s);
            json!({"index": index, "name": name, "fields": fields})
        })
        .collect();
    let extra: Vec<Json> = h.extra.iter().map(|(k, v)| json!([k, v])).collect();
    json!({
        "kind": "header",
        "protocol": h.protocol,
        "domain": h.domain,
        "sender_id": h.sender_id,
        "app_name": h.app_name,
        "start_time": h.start_time,
        "content": h.content,
        "schemas": schemas,
        "extra": extra,
    })
}

fn schema_json(canon: &str) -> Json {
    let (index, name, fields) = parse_canon(canon);
    json!({"kind": "schema", "index": index, "name": name, "fields": fields})
}

fn sample_json(stream: u32, name: Option<&str>, seq: i64, ts: f64, values: &[Value]) -> Json {
    json!({
        "kind": "sample",
        "stream": stream,
        "name": name,
        "seq": seq,
        "ts": jd(ts),
        "values": values.iter().map(jv).collect::<Vec<_>>(),
    })
}

// ---------------------------------------------------------------------------
// DOUBLE_T, modelled from the spec (§8.4) without omsp::binary::double.

/// `(M, x)` with `v = M · 2^(x−30)`, or `None` when DOUBLE_NAN is sent.
fn dt_pair(v: f64) -> Option<(i32, i8)> {
    if v == 0.0 {
        return Some((0, 0));
    }
    if !v.is_finite() {
        return None;
    }
    let a = v.abs();
    // frexp exponent: 2^(e−1) <= |v| < 2^e.
    let mut e = a.log2().floor() as i32 + 1;
    while e > -1100 && 2f64.powi(e - 1) > a {
        e -= 1;
    }
    while 2f64.powi(e) <= a {
        e += 1;
    }
    if !(-128..=127).contains(&e) {
        return None;
    }
    let m = (v * 2f64.powi(30 - e)).trunc();
    Some((m as i32, e as i8))
}

fn dt_value(m: i32, x: i8) -> f64 {
    f64::from(m) * 2f64.powi(i32::from(x) - 30)
}

/// What a scalar double becomes after a trip through DOUBLE_T.
fn dt(v: f64) -> f64 {
    dt_pair(v).map_or(f64::NAN, |(m, x)| dt_value(m, x))
}

// ---------------------------------------------------------------------------
// Hand-made binary packets.

fn short(body: &[u8]) -> Vec<u8> {
    let mut p = vec![0xAA, 0xAA, 0x01];
    p.extend_from_slice(&u16::try_from(body.len()).expect("short body").to_be_bytes());
    p.extend_from_slice(body);
    p
}

fn long(body: &[u8]) -> Vec<u8> {
    let mut p = vec![0xAA, 0xAA, 0x02];
    p.extend_from_slice(&u32::try_from(body.len()).expect("long body").to_be_bytes());
    p.extend_from_slice(body);
    p
}

/// A DOUBLE_T typed value `02 M x`.
fn v_dt(m: i32, x: i8) -> Vec<u8> {
    let mut b = vec![0x02];
    b.extend_from_slice(&m.to_be_bytes());
    b.push(x as u8);
    b
}

/// The DOUBLE_T typed value of an exactly representable double.
fn v_dtx(v: f64) -> Vec<u8> {
    let (m, x) = dt_pair(v).expect("representable");
    assert_eq!(
        dt_value(m, x).to_bits(),
        v.to_bits(),
        "{v} is not DOUBLE_T-exact"
    );
    v_dt(m, x)
}

fn v_d64(v: f64) -> Vec<u8> {
    let mut b = vec![0x0F];
    b.extend_from_slice(&v.to_be_bytes());
    b
}

fn v_i32(v: i32) -> Vec<u8> {
    let mut b = vec![0x05];
    b.extend_from_slice(&v.to_be_bytes());
    b
}

fn v_u32(v: u32) -> Vec<u8> {
    let mut b = vec![0x06];
    b.extend_from_slice(&v.to_be_bytes());
    b
}

fn v_long(v: i32) -> Vec<u8> {
    let mut b = vec![0x01];
    b.extend_from_slice(&v.to_be_bytes());
    b
}

fn v_str(s: &str) -> Vec<u8> {
    let mut b = vec![0x04, u8::try_from(s.len()).expect("string len")];
    b.extend_from_slice(s.as_bytes());
    b
}

fn v_blob(d: &[u8]) -> Vec<u8> {
    let mut b = vec![0x09];
    b.extend_from_slice(&(d.len() as u32).to_be_bytes());
    b.extend_from_slice(d);
    b
}

/// A packet body with an INT32_T seq and the given typed timestamp.
fn body_ts(n: u8, index: u8, seq: i32, ts: &[u8], values: &[Vec<u8>]) -> Vec<u8> {
    let mut b = vec![n, index];
    b.extend_from_slice(&v_i32(seq));
    b.extend_from_slice(ts);
    for v in values {
        b.extend_from_slice(v);
    }
    b
}

/// A packet body with INT32_T seq and a DOUBLE_T-exact timestamp.
fn body(n: u8, index: u8, seq: i32, ts: f64, values: &[Vec<u8>]) -> Vec<u8> {
    body_ts(n, index, seq, &v_dtx(ts), values)
}

// ---------------------------------------------------------------------------
// Hand-written text values (independent of omsp's text encoder).

fn tdouble(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{v:?}")
    }
}

fn tescape(s: &str) -> String {
    let mut o = String::new();
    for c in s.chars() {
        match c {
            '\t' => o.push_str("\\t"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\\' => o.push_str("\\\\"),
            c => o.push(c),
        }
    }
    o
}

fn tvec<T>(v: &[T], f: impl Fn(&T) -> String) -> String {
    let mut o = v.len().to_string();
    for x in v {
        o.push(' ');
        o.push_str(&f(x));
    }
    o
}

fn tvalue(v: &Value) -> String {
    match v {
        Value::Int32(x) => x.to_string(),
        Value::UInt32(x) => x.to_string(),
        Value::Int64(x) => x.to_string(),
        Value::UInt64(x) | Value::Guid(x) => x.to_string(),
        Value::Double(x) => tdouble(*x),
        Value::String(s) => tescape(s),
        Value::Blob(b) => B64.encode(b),
        Value::Bool(b) => if *b { "T" } else { "F" }.into(),
        Value::VecDouble(v) => tvec(v, |x| tdouble(*x)),
        Value::VecInt32(v) => tvec(v, ToString::to_string),
        Value::VecUInt32(v) => tvec(v, ToString::to_string),
        Value::VecInt64(v) => tvec(v, ToString::to_string),
        Value::VecUInt64(v) => tvec(v, ToString::to_string),
        Value::VecBool(v) => tvec(v, |b| if *b { "True" } else { "False" }.into()),
    }
}

// ---------------------------------------------------------------------------
// One input stream under construction, with its expected decoding.

enum Item {
    Ev(Json),
    Err {
        offset: u64,
        code: &'static str,
        fatal: bool,
        events_before: usize,
    },
}

struct Stream {
    content: Content,
    buf: Vec<u8>,
    enc: Encoder,
    items: Vec<Item>,
    /// Every tuple byte came from omsp's Encoder.
    canonical: bool,
}

impl Stream {
    /// A stream starting with a hand-written header that decodes to `hj`.
    fn new(content: Content, header: &str, hj: Json) -> Stream {
        let mut s = Stream::headerless(content, header);
        s.items.push(Item::Ev(hj));
        s
    }

    /// A stream whose header is not expected to decode.
    fn headerless(content: Content, header: &str) -> Stream {
        Stream {
            content,
            buf: header.as_bytes().to_vec(),
            enc: Encoder::new(content),
            items: Vec::new(),
            canonical: true,
        }
    }

    fn bin(&self) -> bool {
        self.content == Content::Binary
    }

    fn at(&self) -> u64 {
        self.buf.len() as u64
    }

    /// Appends hand-made bytes; returns their offset.
    fn raw(&mut self, bytes: impl AsRef<[u8]>) -> u64 {
        let off = self.at();
        self.buf.extend_from_slice(bytes.as_ref());
        self.canonical = false;
        off
    }

    fn ev(&mut self, j: Json) {
        self.items.push(Item::Ev(j));
    }

    fn err(&mut self, offset: u64, code: &'static str, fatal: bool) {
        let events_before = self
            .items
            .iter()
            .filter(|i| matches!(i, Item::Ev(_)))
            .count();
        self.items.push(Item::Err {
            offset,
            code,
            fatal,
            events_before,
        });
    }

    fn expect(&mut self, stream: u32, name: &str, seq: i64, ts: f64, values: &[Value]) {
        self.ev(sample_json(stream, Some(name), seq, ts, values));
    }

    /// Binary: appends a tuple written by omsp's Encoder and expects it back
    /// with scalar doubles and the timestamp through DOUBLE_T. Text: appends
    /// the hand-written line and expects the values as they are.
    fn tup(&mut self, stream: u32, name: &str, seq: i64, ts: f64, values: Vec<Value>) {
        if self.bin() {
            self.enc
                .tuple(
                    &mut self.buf,
                    stream,
                    seq,
                    ts,
                    values.iter().map(Value::as_value_ref),
                )
                .expect("encodable");
            let q: Vec<Value> = values
                .into_iter()
                .map(|v| match v {
                    Value::Double(x) => Value::Double(dt(x)),
                    v => v,
                })
                .collect();
            self.expect(stream, name, seq, dt(ts), &q);
        } else {
            let mut line = format!("{}\t{stream}\t{seq}", tdouble(ts));
            for v in &values {
                line.push('\t');
                line.push_str(&tvalue(v));
            }
            line.push('\n');
            self.buf.extend_from_slice(line.as_bytes());
            self.expect(stream, name, seq, ts, &values);
        }
    }

    /// Text: appends `line` + LF and expects the given tuple.
    fn line(&mut self, line: &str, stream: u32, name: &str, seq: i64, ts: f64, values: &[Value]) {
        assert!(!self.bin());
        self.raw(format!("{line}\n"));
        self.expect(stream, name, seq, ts, values);
    }

    /// Text: appends `line` + LF, expected to be rejected with `code`.
    fn bad_line(&mut self, line: &str, code: &'static str) {
        let off = self.raw(format!("{line}\n"));
        self.err(off, code, false);
    }

    /// Binary: appends a hand-made packet, expected to be rejected with `code`.
    fn bad_packet(&mut self, packet: &[u8], code: &'static str) {
        let off = self.raw(packet);
        self.err(off, code, false);
    }

    /// A metadata tuple (stream 0).
    fn meta(&mut self, seq: i64, ts: f64, subject: &str, key: &str, value: &str) {
        self.tup(
            0,
            "_experiment_metadata",
            seq,
            ts,
            vec![s(subject), s(key), s(value)],
        );
    }

    /// A schema declaration through stream 0: a Schema event, then the
    /// declaring tuple itself.
    fn declare(&mut self, seq: i64, ts: f64, text: &str, canon: &str) {
        self.ev(schema_json(canon));
        self.meta(seq, ts, ".", "schema", text);
    }
}

fn s(x: &str) -> Value {
    Value::String(x.to_owned())
}

// ---------------------------------------------------------------------------
// Cases.

struct Case {
    name: &'static str,
    description: String,
    streams: Vec<Stream>,
}

const META: &str = "0 _experiment_metadata subject:string key:string value:string";

/// The liboml2-style header used by most cases (trailing space on schema
/// lines), with schema 0 and the given schemas.
fn std_header(content: Content, schemas: &[&str]) -> Stream {
    let mut text = String::from(
        "protocol: 5\ndomain: vectors\nstart-time: 1700000000\nsender-id: gen\napp-name: gen\n",
    );
    let mut all = vec![META];
    all.extend_from_slice(schemas);
    for sc in &all {
        text.push_str(&format!("schema: {sc} \n"));
    }
    text.push_str(&format!("content: {}\n\n", content.name()));
    let hj = header_json(&Hdr {
        protocol: 5,
        domain: Some("vectors"),
        start_time: Some(1_700_000_000),
        sender_id: Some("gen"),
        app_name: Some("gen"),
        content: content.name(),
        schemas: &all,
        extra: &[],
    });
    Stream::new(content, &text, hj)
}

fn both(f: impl Fn(Content) -> Stream) -> Vec<Stream> {
    vec![f(Content::Binary), f(Content::Text)]
}

fn int_edges() -> Case {
    const SC: &str = "2 gen_ints i32:int32 u32:uint32 i64:int64 u64:uint64 gid:guid";
    type Row = (i64, f64, &'static str, [Value; 5], &'static str);
    let v = |a: i32, b: u32, c: i64, d: u64, e: u64| {
        [
            Value::Int32(a),
            Value::UInt32(b),
            Value::Int64(c),
            Value::UInt64(d),
            Value::Guid(e),
        ]
    };
    let rows: Vec<Row> = vec![
        (
            1,
            0.5,
            "0.5",
            v(i32::MIN, 0, i64::MIN, 0, 0),
            "-2147483648\t0\t-9223372036854775808\t0\t0",
        ),
        (
            2,
            1.0,
            "1",
            v(i32::MAX, u32::MAX, i64::MAX, u64::MAX, u64::MAX),
            "2147483647\t4294967295\t9223372036854775807\t18446744073709551615\t18446744073709551615",
        ),
        (3, 1.5, "1.500000", v(-1, 1, -1, 1, 1), "-1\t1\t-1\t1\t1"),
        (
            4,
            2.0,
            "2e0",
            v(0, 1 << 31, 1 << 32, 1 << 63, 0x0123_4567_89AB_CDEF),
            "0\t2147483648\t4294967296\t9223372036854775808\t81985529216486895",
        ),
        (5, 2.5, "+2.5", v(7, 8, 0, 9, 10), "+7\t+8\t-0\t009\t010"),
        (i64::from(i32::MAX), 3.0, "3", v(1, 2, 3, 4, 5), "1\t2\t3\t4\t5"),
        (i64::from(i32::MIN), 3.25, "3.25", v(1, 2, 3, 4, 5), "1\t2\t3\t4\t5"),
        (0, 3.5, "3.5", v(1, 2, 3, 4, 5), "1\t2\t3\t4\t5"),
    ];
    let streams = both(|c| {
        let mut st = std_header(c, &[SC]);
        for (seq, ts, tts, vals, text) in &rows {
            if st.bin() {
                st.tup(2, "gen_ints", *seq, *ts, vals.to_vec());
            } else {
                st.line(
                    &format!("{tts}\t2\t{seq}\t{text}"),
                    2,
                    "gen_ints",
                    *seq,
                    *ts,
                    vals,
                );
            }
        }
        if !st.bin() {
            // Text seq numbers are int64.
            for seq in [i64::MAX, i64::MIN] {
                st.line(
                    &format!("4\t2\t{seq}\t1\t2\t3\t4\t5"),
                    2,
                    "gen_ints",
                    seq,
                    4.0,
                    &v(1, 2, 3, 4, 5),
                );
            }
        }
        st
    });
    Case {
        name: "int-edges",
        description: "Integer edge values: int32/int64 min and max, uint32/uint64 max, guid 0, \
                      1 and max, 2^31/2^32/2^63 across types; seq at int32 min/max and 0. Text \
                      also has '+' signs, '-0' and leading zeros ('010' is ten) and int64 seq \
                      extremes."
            .into(),
        streams,
    }
}

// 3.141593 is pi as liboml2's `%f` prints it, on purpose.
#[allow(clippy::approx_constant)]
fn doubles() -> Case {
    const SC: &str = "2 gen_dbl x:double";
    let p2 = |e: i32| 2f64.powi(e);
    let sent = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.25,
        100.125,
        -0.5,
        p2(-129),
        -p2(-129),
        f64::from((1 << 30) - 1) * p2(97),
        p2(126),
        3.0 * p2(-100),
        std::f64::consts::PI,
        0.1,
        -123456.789,
        1e-300,
        p2(-130),
        p2(127),
        1e300,
        f64::MAX,
        5e-324,
        f64::MIN_POSITIVE,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    // The spec's worked examples, as a check on the DOUBLE_T model.
    assert_eq!(dt(std::f64::consts::PI), 3.141592651605606);
    assert_eq!(dt_pair(100.125), Some((0x3210_0000, 7)));
    assert_eq!(dt_pair(0.25), Some((0x2000_0000, -1)));
    assert_eq!(dt_pair(-0.5), Some((-0x2000_0000, 0)));
    assert_eq!(dt_pair(1e-300), None);
    assert_eq!(dt_pair(p2(-129)), Some((1 << 29, -128)));
    assert_eq!(dt_pair(p2(127)), None);
    let text: &[(&str, f64)] = &[
        ("0", 0.0),
        ("-0.0", -0.0),
        ("1", 1.0),
        ("-1.5", -1.5),
        ("3.141592653589793", std::f64::consts::PI),
        ("3.141593", 3.141593),
        ("-0.500000", -0.5),
        ("0.1", 0.1),
        ("1e-300", 1e-300),
        ("5e-324", 5e-324),
        ("4.9406564584124654e-324", 5e-324),
        ("2.2250738585072014e-308", f64::MIN_POSITIVE),
        ("1.7976931348623157e308", f64::MAX),
        ("-1.7976931348623157e308", f64::MIN),
        ("1e400", f64::INFINITY),
        ("-1e400", f64::NEG_INFINITY),
        ("1e-400", 0.0),
        ("nan", f64::NAN),
        ("-nan", f64::NAN),
        ("NaN", f64::NAN),
        ("inf", f64::INFINITY),
        ("-inf", f64::NEG_INFINITY),
        ("Infinity", f64::INFINITY),
        ("-INFINITY", f64::NEG_INFINITY),
        ("1.", 1.0),
        (".5", 0.5),
        ("+2.5", 2.5),
        ("2E-7", 2e-7),
        ("1e+2", 100.0),
        ("000.125", 0.125),
        ("10000000000", 1e10),
    ];
    let streams = both(|c| {
        let mut st = std_header(c, &[SC]);
        if st.bin() {
            for (i, &x) in sent.iter().enumerate() {
                st.tup(
                    2,
                    "gen_dbl",
                    i as i64 + 1,
                    i as f64 * 0.125,
                    vec![Value::Double(x)],
                );
            }
            // Timestamps go through DOUBLE_T too: NaN, too small, inexact.
            for (i, ts) in [f64::NAN, 1e-300, 0.1].into_iter().enumerate() {
                st.tup(2, "gen_dbl", 100 + i as i64, ts, vec![Value::Double(1.0)]);
            }
        } else {
            for (i, (lit, x)) in text.iter().enumerate() {
                let seq = i as i64 + 1;
                let ts = i as f64 * 0.25;
                st.line(
                    &format!("{}\t2\t{seq}\t{lit}", tdouble(ts)),
                    2,
                    "gen_dbl",
                    seq,
                    ts,
                    &[Value::Double(*x)],
                );
            }
            for (i, (lit, ts)) in [
                ("nan", f64::NAN),
                ("-nan", f64::NAN),
                ("0.000001", 1e-6),
                ("-1.5", -1.5),
                ("1e-300", 1e-300),
            ]
            .into_iter()
            .enumerate()
            {
                let seq = 100 + i as i64;
                st.line(
                    &format!("{lit}\t2\t{seq}\t1"),
                    2,
                    "gen_dbl",
                    seq,
                    ts,
                    &[Value::Double(1.0)],
                );
            }
        }
        st
    });
    Case {
        name: "doubles",
        description: "Scalar doubles. Binary (DOUBLE_T, 30-bit truncated mantissa): 0 and -0 \
                      (both arrive as +0), exact values, the smallest (2^-129) and largest \
                      representable magnitudes, pi (arrives as 3.141592651605606), 0.1, and \
                      values DOUBLE_T cannot carry (1e-300, 2^-130, 2^127, 1e300, max, \
                      subnormal, +-inf, NaN), which arrive as NaN (null); timestamps NaN, 1e-300 \
                      and 0.1 likewise. Text: every accepted spelling (-0.0, exponents, '1.', \
                      '.5', '+2.5', nan/-nan/NaN, inf/-inf/Infinity, out-of-range literals \
                      rounding to +-inf or 0, subnormals), NaN timestamps."
            .into(),
        streams,
    }
}

fn strings() -> Case {
    const SC: &str = "2 gen_str s:string t:string";
    let e254 = "é".repeat(127);
    let pairs: Vec<(String, String)> = [
        ("", ""),
        ("plain", "x"),
        ("tab\there", "nl\nline"),
        ("cr\rx", "back\\slash"),
        ("all\t\n\r\\four", "🎉"),
        ("héllo wörld", "日本語 ✓"),
        ("\\", " spaces  "),
        ("ª\u{aa}AA", "a\\tb"),
        (e254.as_str(), "254 bytes of é before"),
    ]
    .iter()
    .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
    .collect();
    let streams = both(|c| {
        let mut st = std_header(c, &[SC]);
        for (i, (a, b)) in pairs.iter().enumerate() {
            st.tup(2, "gen_str", i as i64 + 1, 0.5 + i as f64, vec![s(a), s(b)]);
        }
        if !st.bin() {
            let long = "x".repeat(300);
            let extra: [(String, [Value; 2]); 4] = [
                // Lax escapes: \X for another X is X.
                ("a\\x\\\\b\tq\\z".into(), [s("ax\\b"), s("qz")]),
                (
                    "c:\\\\dir\\\\t\t\\\\\\\\".into(),
                    [s("c:\\dir\\t"), s("\\\\")],
                ),
                (format!("{long}\t"), [s(&long), s("")]),
                ("\t\\t".into(), [s(""), s("\t")]),
            ];
            let n = pairs.len() as i64;
            for (i, (text, vals)) in extra.iter().enumerate() {
                let seq = n + 1 + i as i64;
                let ts = 100.0 + i as f64;
                st.line(
                    &format!("{ts:?}\t2\t{seq}\t{text}"),
                    2,
                    "gen_str",
                    seq,
                    ts,
                    vals,
                );
            }
            // An unescaped CR inside a field is kept, but one right before
            // the LF ends the line.
            st.line(
                "200.0\t2\t99\tq\rz\tend\r",
                2,
                "gen_str",
                99,
                200.0,
                &[s("q\rz"), s("end")],
            );
            st.line(
                "201.0\t2\t100\tend\r\tz",
                2,
                "gen_str",
                100,
                201.0,
                &[s("end\r"), s("z")],
            );
        }
        st
    });
    Case {
        name: "strings",
        description: "Strings: empty, every escape (TAB, LF, CR, backslash), UTF-8 (2-, 3- and \
                      4-byte sequences), a lone backslash, a 254-byte string (the longest a \
                      writer sends in binary). Text also: lax escapes ('\\x' is 'x'), an \
                      unescaped CR kept inside a field (but a CR right before the LF ends the \
                      line), a 300-byte string and empty fields from a trailing TAB."
            .into(),
        streams,
    }
}

fn blobs() -> Case {
    const SC: &str = "2 gen_blob b:blob";
    let all: Vec<u8> = (0..=255).collect();
    let k: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 256) as u8).collect();
    let blobs: Vec<(Vec<u8>, Option<&str>)> = vec![
        (vec![], Some("")),
        (vec![0], Some("AA==")),
        (vec![0, 1, 2, 255], Some("AAEC/w==")),
        (b"OML".to_vec(), Some("T01M")),
        (vec![0xde, 0xad], Some("3q0=")),
        (vec![0xde, 0xad, 0xbe, 0xef], Some("3q2+7w==")),
        // Sync-like bytes inside a payload: framing is by length.
        (vec![0xAA, 0xAA, 0x01, 0x00, 0x05], Some("qqoBAAU=")),
        (all, None),
        (k, None),
    ];
    let streams = both(|c| {
        let mut st = std_header(c, &[SC]);
        for (i, (b, lit)) in blobs.iter().enumerate() {
            if let Some(lit) = lit {
                assert_eq!(B64.encode(b), *lit);
            }
            st.tup(
                2,
                "gen_blob",
                i as i64 + 1,
                i as f64,
                vec![Value::Blob(b.clone())],
            );
        }
        st
    });
    Case {
        name: "blobs",
        description: "Blobs: empty, 1 to 5 bytes (every base64 padding case), sync-like bytes \
                      AA AA 01 inside a payload, all 256 byte values, 1000 bytes."
            .into(),
        streams,
    }
}

fn bools() -> Case {
    const SC: &str = "2 gen_bool b:bool";
    let spellings: &[(&str, bool)] = &[
        ("T", true),
        ("F", false),
        ("True", true),
        ("False", false),
        ("true", true),
        ("false", false),
        ("TRUE", true),
        ("FALSE", false),
        ("t", true),
        ("f", false),
        ("tr", true),
        ("fals", false),
        ("1", true),
        ("0", false),
        ("", false),
    ];
    let streams = both(|c| {
        let mut st = std_header(c, &[SC]);
        if st.bin() {
            for (i, b) in [true, false, false, true].into_iter().enumerate() {
                st.tup(2, "gen_bool", i as i64 + 1, i as f64, vec![Value::Bool(b)]);
            }
        } else {
            for (i, (lit, b)) in spellings.iter().enumerate() {
                let seq = i as i64 + 1;
                st.line(
                    &format!("{i}\t2\t{seq}\t{lit}"),
                    2,
                    "gen_bool",
                    seq,
                    i as f64,
                    &[Value::Bool(*b)],
                );
            }
        }
        st
    });
    Case {
        name: "bools",
        description: "Booleans. Text: T/F, True/False, any case, any non-empty prefix of \
                      true/false, 1/0, and the empty field (false)."
            .into(),
        streams,
    }
}

fn vectors() -> Case {
    const SC: &str =
        "2 gen_vec vd:[double] vi32:[int32] vu32:[uint32] vi64:[int64] vu64:[uint64] vb:[bool]";
    let row = |vd: Vec<f64>, a: Vec<i32>, b: Vec<u32>, c: Vec<i64>, d: Vec<u64>, e: Vec<bool>| {
        vec![
            Value::VecDouble(vd),
            Value::VecInt32(a),
            Value::VecUInt32(b),
            Value::VecInt64(c),
            Value::VecUInt64(d),
            Value::VecBool(e),
        ]
    };
    let long_d: Vec<f64> = (0..300).map(|i| f64::from(i) * 0.5 - 10.0).collect();
    let long_b: Vec<bool> = (0..300).map(|i| i % 3 == 0).collect();
    let rows: Vec<(Vec<Value>, Option<&str>)> = vec![
        (
            row(
                vec![1.5, -2.25, 1e10],
                vec![-1, 0, i32::MAX],
                vec![0, 1, u32::MAX],
                vec![i64::MIN, 0, i64::MAX],
                vec![0, 1, u64::MAX],
                vec![true, false, true],
            ),
            Some(
                "3 1.5 -2.25 10000000000\t3 -1 0 2147483647\t3 0 1 4294967295\t\
                 3 -9223372036854775808 0 9223372036854775807\t3 0 1 18446744073709551615\t\
                 3 True False True",
            ),
        ),
        (
            row(vec![], vec![], vec![], vec![], vec![], vec![]),
            Some("0\t0\t0\t0\t0\t0"),
        ),
        (
            row(
                vec![
                    std::f64::consts::PI,
                    0.1,
                    -0.0,
                    5e-324,
                    f64::MAX,
                    1e-300,
                    f64::NAN,
                    f64::INFINITY,
                    f64::NEG_INFINITY,
                ],
                vec![i32::MIN],
                vec![42],
                vec![-1],
                vec![u64::MAX - 1],
                vec![false],
            ),
            Some(
                "9 3.141592653589793 0.1 -0.0 5e-324 1.7976931348623157e308 1e-300 nan inf \
                 -inf\t1 -2147483648\t1 42\t1 -1\t1 18446744073709551614\t1 False",
            ),
        ),
        (
            row(
                vec![1.5, 2.5],
                vec![5],
                vec![7],
                vec![],
                vec![],
                vec![true, false, true, false],
            ),
            Some("2  1.5   2.5\t1 +5\t1 007\t0\t0\t4 T f 1 0"),
        ),
        (row(long_d, vec![], vec![], vec![], vec![], long_b), None),
    ];
    let streams = both(|c| {
        let mut st = std_header(c, &[SC]);
        for (i, (vals, lit)) in rows.iter().enumerate() {
            let seq = i as i64 + 1;
            let ts = i as f64;
            match (st.bin(), lit) {
                (false, Some(lit)) => st.line(
                    &format!("{ts:?}\t2\t{seq}\t{lit}"),
                    2,
                    "gen_vec",
                    seq,
                    ts,
                    vals,
                ),
                _ => st.tup(2, "gen_vec", seq, ts, vals.clone()),
            }
        }
        st
    });
    Case {
        name: "vectors",
        description: "All six vector types: extremes, empty vectors, [double] elements at full \
                      precision (pi, 0.1, -0, subnormal, max, 1e-300, NaN, +-inf are all kept: \
                      DOUBLE64, not DOUBLE_T), 300-element vectors. Text also: several spaces \
                      between elements, '+5', '007', bool elements T/f/1/0."
            .into(),
        streams,
    }
}

fn long_packets() -> Case {
    const SC: &str = "2 gen_big b:blob n:int32";
    // Body = 2 + 5 (seq) + 6 (ts) + 5 + len (blob) + 5 (int32) = 23 + len.
    let sizes = [65512usize, 65513, 3, 70000, 0];
    let mut st = std_header(Content::Binary, &[SC]);
    let mut offsets = Vec::new();
    for (i, &n) in sizes.iter().enumerate() {
        let blob: Vec<u8> = (0..n).map(|j| (j * 31 + i) as u8).collect();
        offsets.push(st.at() as usize);
        st.tup(
            2,
            "gen_big",
            i as i64 + 1,
            i as f64,
            vec![Value::Blob(blob), Value::Int32(i as i32 + 1)],
        );
    }
    // Check the framing the case is about.
    let b = &st.buf;
    assert_eq!(
        &b[offsets[0]..offsets[0] + 5],
        &[0xAA, 0xAA, 0x01, 0xFF, 0xFF]
    );
    assert_eq!(
        &b[offsets[1]..offsets[1] + 7],
        &[0xAA, 0xAA, 0x02, 0x00, 0x01, 0x00, 0x00]
    );
    for &o in &offsets[2..] {
        assert_eq!(b[o + 2], 0x02, "stays long");
    }
    Case {
        name: "long-packets",
        description: "Long binary packets: a 65535-byte body (the largest short packet), then a \
                      65536-byte body (the first long packet), after which every packet is long, \
                      small ones (3-byte and empty blobs) included; a 70000-byte blob."
            .into(),
        streams: vec![st],
    }
}

fn dynamic_schema() -> Case {
    const SC: &str = "1 gen_first a:int32";
    let streams = both(|c| {
        let mut st = std_header(c, &[SC]);
        st.tup(1, "gen_first", 1, 0.25, vec![Value::Int32(10)]);
        st.declare(
            1,
            0.5,
            "2 gen_late y:uint64 z:bool",
            "2 gen_late y:uint64 z:bool",
        );
        st.tup(
            2,
            "gen_late",
            1,
            0.75,
            vec![Value::UInt64(u64::MAX), Value::Bool(true)],
        );
        st.declare(2, 1.0, "1 gen_rebound s:string", "1 gen_rebound s:string");
        st.tup(1, "gen_rebound", 1, 1.25, vec![s("now a string")]);
        st.declare(
            3,
            1.5,
            "3 gen_legacy a:long b:real c:integer d:float ",
            "3 gen_legacy a:int32 b:double c:int32 d:double",
        );
        st.tup(
            3,
            "gen_legacy",
            1,
            1.75,
            vec![
                Value::Int32(-5),
                Value::Double(0.5),
                Value::Int32(6),
                Value::Double(-0.25),
            ],
        );
        st.tup(
            2,
            "gen_late",
            2,
            2.0,
            vec![Value::UInt64(0), Value::Bool(false)],
        );
        st.declare(
            4,
            2.25,
            "2 gen_late y:uint64 z:bool",
            "2 gen_late y:uint64 z:bool",
        );
        st.tup(
            2,
            "gen_late",
            3,
            2.5,
            vec![Value::UInt64(1), Value::Bool(true)],
        );
        st.meta(
            5,
            2.75,
            ".gen_late",
            "schema",
            "not a declaration: subject is not '.'",
        );
        st.meta(
            6,
            3.0,
            ".",
            "schemas",
            "not a declaration: key is not 'schema'",
        );
        st
    });
    Case {
        name: "dynamic-schema",
        description: "Streams declared after the header through schema 0 (subject '.', key \
                      'schema'): each declaration yields a schema event, then the declaring \
                      tuple itself on stream 0. Index 1 is re-bound to a new schema (later \
                      tuples of 1 use it, and the sample's name follows), a declaration uses \
                      legacy type names and a trailing space, a schema is declared again \
                      unchanged, and two look-alike tuples are plain metadata. The name of a \
                      sample is that of the schema bound when the tuple is decoded."
            .into(),
        streams,
    }
}

fn metadata() -> Case {
    const SC: &str = "2 gen_mp x:double";
    let streams = both(|c| {
        let mut st = std_header(c, &[SC]);
        st.meta(1, 0.125, ".", "appname", "gen");
        st.meta(2, 0.25, ".gen_mp", "unit", "s");
        st.meta(3, 0.375, ".gen_mp.x", "unit", "metre");
        st.meta(
            4,
            0.5,
            ".gen_mp.x",
            "description",
            "tab\there nl\nend \\ done",
        );
        st.tup(2, "gen_mp", 1, 0.625, vec![Value::Double(1.5)]);
        st.meta(5, 0.75, ".", "domain", "other");
        st.meta(6, 0.875, "free-form subject", "k", "");
        st.meta(6, 0.875, "free-form subject", "k", "");
        st.tup(2, "gen_mp", 2, 1.0, vec![Value::Double(-2.5)]);
        st
    });
    Case {
        name: "metadata",
        description: "Metadata tuples (stream 0) at the three subject levels: experiment ('.'), \
                      stream ('.gen_mp'), field ('.gen_mp.x'); escapes in a value; a header-only \
                      key with subject '.' (passed on by the decoder: dropping it is the store's \
                      job); a free-form subject and an empty value; the same tuple sent twice \
                      (as liboml2 does) gives two samples."
            .into(),
        streams,
    }
}

fn implicit_schema0() -> Case {
    let streams = both(|c| {
        let header = format!(
            "protocol: 4\ndomain: implicit\nstart-time: 1700000000\nsender-id: gen\n\
             app-name: gen\nschema: 1 gen_a v:int32\ncontent: {}\n\n",
            c.name()
        );
        let hj = header_json(&Hdr {
            protocol: 4,
            domain: Some("implicit"),
            start_time: Some(1_700_000_000),
            sender_id: Some("gen"),
            app_name: Some("gen"),
            content: c.name(),
            schemas: &["1 gen_a v:int32"],
            extra: &[],
        });
        let mut st = Stream::new(c, &header, hj);
        st.tup(1, "gen_a", 1, 0.5, vec![Value::Int32(7)]);
        st.meta(1, 1.0, ".gen_a", "unit", "m");
        st.declare(2, 1.5, "2 gen_b w:string", "2 gen_b w:string");
        st.tup(2, "gen_b", 1, 2.0, vec![s("b")]);
        st.tup(1, "gen_a", 2, 2.5, vec![Value::Int32(8)]);
        st
    });
    Case {
        name: "implicit-schema0",
        description: "A header without schema 0: a stream-0 tuple binds index 0 to \
                      '_experiment_metadata subject:string key:string value:string' implicitly, \
                      and declarations through it work."
            .into(),
        streams,
    }
}

fn protocol_v1() -> Case {
    let streams = both(|c| {
        let header = format!(
            "protocol: 1\nexperiment-id: legacy1\nstart_time: 1000000000\nsender-id: old\n\
             app-name: oldapp\nschema: 1 oldapp_mp a:integer b:long c:real d:float e:string\n\
             content: {}\n\n",
            c.name()
        );
        let hj = header_json(&Hdr {
            protocol: 1,
            domain: Some("legacy1"),
            start_time: Some(1_000_000_000),
            sender_id: Some("old"),
            app_name: Some("oldapp"),
            content: c.name(),
            schemas: &["1 oldapp_mp a:int32 b:int32 c:double d:double e:string"],
            extra: &[],
        });
        let mut st = Stream::new(c, &header, hj);
        let n = "oldapp_mp";
        st.tup(
            1,
            n,
            1,
            0.5,
            vec![
                Value::Int32(1),
                Value::Int32(-2),
                Value::Double(0.5),
                Value::Double(-0.25),
                s("x"),
            ],
        );
        st.tup(
            1,
            n,
            2,
            1.0,
            vec![
                Value::Int32(i32::MAX),
                Value::Int32(i32::MIN),
                Value::Double(1024.0),
                Value::Double(2.5),
                s(""),
            ],
        );
        st
    });
    Case {
        name: "protocol-v1",
        description: "Protocol 1 header: 'experiment-id' and 'start_time' spellings, legacy \
                      type names integer/long (int32) and real/float (double), shown in \
                      canonical form."
            .into(),
        streams,
    }
}

fn protocol_v2() -> Case {
    let streams = both(|c| {
        let header = format!(
            "protocol: 2\nexperiment-id: legacy2\nstart-time: 5\nsender-id: old\n\
             app-name: oldapp\nschema: 1 oldapp_v2 a:int32 b:uint32 c:int64 d:uint64 e:double\n\
             content: {}\n\n",
            c.name()
        );
        let hj = header_json(&Hdr {
            protocol: 2,
            domain: Some("legacy2"),
            start_time: Some(5),
            sender_id: Some("old"),
            app_name: Some("oldapp"),
            content: c.name(),
            schemas: &["1 oldapp_v2 a:int32 b:uint32 c:int64 d:uint64 e:double"],
            extra: &[],
        });
        let mut st = Stream::new(c, &header, hj);
        st.tup(
            1,
            "oldapp_v2",
            1,
            0.5,
            vec![
                Value::Int32(-3),
                Value::UInt32(3),
                Value::Int64(-3_000_000_000),
                Value::UInt64(3_000_000_000),
                Value::Double(0.75),
            ],
        );
        st
    });
    Case {
        name: "protocol-v2",
        description: "Protocol 2 header with 'experiment-id' and the newer 'start-time' \
                      spelling (both spellings are accepted in every version) and the v2 \
                      fixed-width types."
            .into(),
        streams,
    }
}

fn protocol_v3() -> Case {
    const SC: &str = "1 oldapp_v3 b:blob g:guid t:bool v:[int32]";
    let streams = both(|c| {
        let header = format!(
            "protocol: 3\ndomain: legacy3\nstart_time: -5\nsender-id: old\napp-name: oldapp\n\
             schema: {SC}\ncontent: {}\n\n",
            c.name()
        );
        let hj = header_json(&Hdr {
            protocol: 3,
            domain: Some("legacy3"),
            start_time: Some(-5),
            sender_id: Some("old"),
            app_name: Some("oldapp"),
            content: c.name(),
            schemas: &[SC],
            extra: &[],
        });
        let mut st = Stream::new(c, &header, hj);
        let row = |b: Vec<u8>, g: u64, t: bool, v: Vec<i32>| {
            vec![
                Value::Blob(b),
                Value::Guid(g),
                Value::Bool(t),
                Value::VecInt32(v),
            ]
        };
        st.tup(
            1,
            "oldapp_v3",
            1,
            0.5,
            row(vec![1, 2, 3], 9, true, vec![1, 2]),
        );
        if st.bin() {
            // A long packet (v3 introduced them); the next one stays long.
            let big: Vec<u8> = (0..65600u32).map(|i| (i % 251) as u8).collect();
            st.tup(1, "oldapp_v3", 2, 1.0, row(big, 10, false, vec![]));
        }
        st.tup(
            1,
            "oldapp_v3",
            3,
            1.5,
            row(vec![], u64::MAX, false, vec![-1]),
        );
        st
    });
    Case {
        name: "protocol-v3",
        description: "Protocol 3 header with 'domain' and 'start_time' (negative), carrying \
                      blob plus guid, bool and a vector although they came with v4/v5 (a decoder \
                      accepts every construct whatever the version). Binary also switches to \
                      long packets."
            .into(),
        streams,
    }
}

fn oml4py() -> Case {
    let header = "protocol: 4\ndomain: pydom\nstart-time: 1700000000\nsender-id: pysender\n\
                  app-name: pyapp\nschema: 0 _experiment_metadata subject:string key:string value:string\n\
                  schema: 1 pyapp_mp count:int32 ratio:double label:string ok:bool\n\
                  content: text\n\n";
    let hj = header_json(&Hdr {
        protocol: 4,
        domain: Some("pydom"),
        start_time: Some(1_700_000_000),
        sender_id: Some("pysender"),
        app_name: Some("pyapp"),
        content: "text",
        schemas: &[
            META,
            "1 pyapp_mp count:int32 ratio:double label:string ok:bool",
        ],
        extra: &[],
    });
    let mut st = Stream::new(Content::Text, header, hj);
    let row = |a: i32, r: f64, l: &str, ok: bool| {
        vec![Value::Int32(a), Value::Double(r), s(l), Value::Bool(ok)]
    };
    st.line(
        "0.4639265537261963\t0\t0\t.pyapp_mp\tunit\tcount",
        0,
        "_experiment_metadata",
        0,
        0.4639265537261963,
        &[s(".pyapp_mp"), s("unit"), s("count")],
    );
    st.line(
        "0.4639265537261963\t1\t0\t5\t0.1\thello world\tTrue",
        1,
        "pyapp_mp",
        0,
        0.4639265537261963,
        &row(5, 0.1, "hello world", true),
    );
    st.line(
        "0.9741289615631104\t1\t1\t6\t0.30000000000000004\ttab\\tsep\tFalse",
        1,
        "pyapp_mp",
        1,
        0.9741289615631104,
        &row(6, 0.30000000000000004, "tab\tsep", false),
    );
    st.line(
        "1.4758660793304443\t1\t2\t-7\t1e-05\t\tTrue",
        1,
        "pyapp_mp",
        2,
        1.4758660793304443,
        &row(-7, 1e-5, "", true),
    );
    Case {
        name: "oml4py",
        description: "Text as oml4py writes it: protocol 4, no trailing space on schema lines, \
                      user streams from index 1, seq starting at 0, full-precision timestamps, \
                      Python str() doubles (1e-05), bools True/False."
            .into(),
        streams: vec![st],
    }
}

fn crlf() -> Case {
    let streams = both(|c| {
        let header = format!(
            "protocol: 5\r\ndomain :  crlf  \r\nstart-time: 1700000000\r\nsender-id: gen\r\n\
             app-name: gen\r\nschema: 1 gen_crlf a:int32 s:string \r\ncontent: {}\r\n\r\n",
            c.name()
        );
        let hj = header_json(&Hdr {
            protocol: 5,
            domain: Some("crlf"),
            start_time: Some(1_700_000_000),
            sender_id: Some("gen"),
            app_name: Some("gen"),
            content: c.name(),
            schemas: &["1 gen_crlf a:int32 s:string"],
            extra: &[],
        });
        let mut st = Stream::new(c, &header, hj);
        if st.bin() {
            st.tup(1, "gen_crlf", 1, 0.5, vec![Value::Int32(1), s("one")]);
            st.tup(1, "gen_crlf", 2, 1.0, vec![Value::Int32(2), s("two\r\n")]);
        } else {
            st.raw("0.5\t1\t1\t1\tone\r\n\r\n\n");
            st.expect(1, "gen_crlf", 1, 0.5, &[Value::Int32(1), s("one")]);
            st.raw("1\t1\t2\t2\ttwo\\r\\n\r\n");
            st.expect(1, "gen_crlf", 2, 1.0, &[Value::Int32(2), s("two\r\n")]);
            st.raw("1.5\t1\t3\t3\tcr\\r\r\n");
            st.expect(1, "gen_crlf", 3, 1.5, &[Value::Int32(3), s("cr\r")]);
        }
        st
    });
    Case {
        name: "crlf",
        description: "A header with CRLF line ends, spaces around a key and its value, and a \
                      CR-only terminating line. Text tuples also end in CRLF, with blank lines \
                      (ignored) between them."
            .into(),
        streams,
    }
}

fn header_extras() -> Case {
    let header = "protocol: 5\nx-auth: token123\ndomain: first\n \tdomain\t :  extras \t\n\
                  Domain: upper\nschema: 1 gen_x a:int32\nx-empty:\nfeature-z: a: b\n\n";
    let hj = header_json(&Hdr {
        protocol: 5,
        domain: Some("extras"),
        start_time: None,
        sender_id: None,
        app_name: None,
        content: "text",
        schemas: &["1 gen_x a:int32"],
        extra: &[
            ("x-auth", "token123"),
            ("Domain", "upper"),
            ("x-empty", ""),
            ("feature-z", "a: b"),
        ],
    });
    let mut st = Stream::new(Content::Text, header, hj);
    st.line("0.5\t1\t1\t42", 1, "gen_x", 1, 0.5, &[Value::Int32(42)]);
    Case {
        name: "header-extras",
        description: "Header keys a decoder does not know are kept in order in 'extra' (keys \
                      are case-sensitive: 'Domain' is unknown; the value is everything after \
                      the first colon). A repeated key: the last one wins. Whitespace (spaces, \
                      TABs) around keys and values is trimmed. No content key (text), and no \
                      start-time, sender-id or app-name (null)."
            .into(),
        streams: vec![st],
    }
}

fn bin_lenient() -> Case {
    const SC: &str = "2 gen_len a:int32 b:double s:string bl:blob";
    let mut st = std_header(Content::Binary, &[SC]);
    let n = "gen_len";
    let s255: String = "0123456789abcdef".repeat(16)[..255].to_owned();
    // LONG_T seq and int32, DOUBLE64 timestamp and double, 255-byte string.
    let mut b = vec![4, 2];
    b.extend(v_long(1));
    b.extend(v_d64(0.1));
    b.extend(v_long(-5));
    b.extend(v_d64(std::f64::consts::PI));
    b.extend(v_str(&s255));
    b.extend(v_blob(&[]));
    st.raw(short(&b));
    let pi = std::f64::consts::PI;
    st.expect(
        2,
        n,
        1,
        0.1,
        &[
            Value::Int32(-5),
            Value::Double(pi),
            s(&s255),
            Value::Blob(vec![]),
        ],
    );
    // A long packet for a small tuple; unnormalised DOUBLE_T; DOUBLE_NAN
    // with a non-zero payload.
    let b = body_ts(
        4,
        2,
        2,
        &v_dt(1, 30),
        &[
            v_i32(7),
            vec![0x03, 0x12, 0x34, 0x56, 0x78, 0x9A],
            v_str(""),
            v_blob(&[0x42]),
        ],
    );
    st.raw(long(&b));
    st.expect(
        2,
        n,
        2,
        1.0,
        &[
            Value::Int32(7),
            Value::Double(f64::NAN),
            s(""),
            Value::Blob(vec![0x42]),
        ],
    );
    // Back to a short packet; DOUBLE_NAN timestamp; M = int32 min.
    let b = body_ts(
        4,
        2,
        -1,
        &[0x03, 0, 0, 0, 0, 0],
        &[v_i32(0), v_dt(i32::MIN, 0), v_str("x"), v_blob(&[])],
    );
    st.raw(short(&b));
    st.expect(
        2,
        n,
        -1,
        f64::NAN,
        &[
            Value::Int32(0),
            Value::Double(-2.0),
            s("x"),
            Value::Blob(vec![]),
        ],
    );
    // Extreme DOUBLE_T pairs.
    let b = body_ts(
        4,
        2,
        4,
        &v_dt(i32::MAX, 127),
        &[v_i32(i32::MAX), v_dt(-1, -128), v_str("y"), v_blob(&[])],
    );
    st.raw(short(&b));
    st.expect(
        2,
        n,
        4,
        f64::from(i32::MAX) * 2f64.powi(97),
        &[
            Value::Int32(i32::MAX),
            Value::Double(-(2f64.powi(-158))),
            s("y"),
            Value::Blob(vec![]),
        ],
    );
    // M = 0 with a non-zero exponent; DOUBLE64 -0 timestamp and +inf value.
    let b = body_ts(
        4,
        2,
        5,
        &v_d64(-0.0),
        &[v_i32(1), v_dt(0, 5), v_str("z"), v_blob(&[])],
    );
    st.raw(short(&b));
    st.expect(
        2,
        n,
        5,
        -0.0,
        &[
            Value::Int32(1),
            Value::Double(0.0),
            s("z"),
            Value::Blob(vec![]),
        ],
    );
    let b = body(
        4,
        2,
        6,
        2.0,
        &[v_i32(2), v_d64(f64::INFINITY), v_str(""), v_blob(&[])],
    );
    st.raw(short(&b));
    st.expect(
        2,
        n,
        6,
        2.0,
        &[
            Value::Int32(2),
            Value::Double(f64::INFINITY),
            s(""),
            Value::Blob(vec![]),
        ],
    );
    Case {
        name: "bin-lenient",
        description: "Well-formed binary that no streamgauge writer produces but every decoder \
                      accepts: LONG_T seq and int32 values, DOUBLE64 timestamps and scalar \
                      doubles (full precision, -0 and inf kept), a 255-byte string, a long \
                      packet for a small tuple followed by a short one, unnormalised and \
                      extreme DOUBLE_T pairs, DOUBLE_NAN with a non-zero payload, a DOUBLE_NAN \
                      timestamp, a negative seq."
            .into(),
        streams: vec![st],
    }
}

fn bin_garbage() -> Case {
    const SC: &str = "2 gen_g a:int32";
    let mut st = std_header(Content::Binary, &[SC]);
    let o = st.raw(b"\n");
    st.err(o, "garbage", false);
    st.tup(2, "gen_g", 1, 0.5, vec![Value::Int32(1)]);
    let o = st.raw(b"ju\xAAnk");
    st.err(o, "garbage", false);
    st.tup(2, "gen_g", 2, 1.0, vec![Value::Int32(2)]);
    let o = st.raw(b"\xAA\x00");
    st.err(o, "garbage", false);
    st.tup(2, "gen_g", 3, 1.5, vec![Value::Int32(3)]);
    let o = st.raw(b"trailing\xAA");
    st.err(o, "garbage", false);
    Case {
        name: "bin-garbage",
        description: "Bytes outside packets are skipped and reported once per run, at the \
                      offset of the run's first byte: an extra blank line after the header, \
                      'ju AA nk' (a lone AA) between packets, AA 00 before a packet, and \
                      trailing bytes ending in AA at the end of the stream. Every packet is \
                      decoded."
            .into(),
        streams: vec![st],
    }
}

fn bin_unknown_type() -> Case {
    const SC: &str = "2 gen_u a:int32";
    let mut st = std_header(Content::Binary, &[SC]);
    st.tup(2, "gen_u", 1, 0.5, vec![Value::Int32(1)]);
    let o = st.raw([0xAA, 0xAA, 0x07, 0x01, 0x02, 0x03]);
    st.err(o, "unknown_packet_type", false);
    st.err(o + 1, "garbage", false);
    st.tup(2, "gen_u", 2, 1.0, vec![Value::Int32(2)]);
    let o = st.raw([0xAA, 0xAA, 0x00]);
    st.err(o, "unknown_packet_type", false);
    st.err(o + 1, "garbage", false);
    st.tup(2, "gen_u", 3, 1.5, vec![Value::Int32(3)]);
    // AA AA AA 01: type AA is unknown, and the resync one byte on finds the
    // real packet straight away.
    let o = st.raw([0xAA]);
    st.err(o, "unknown_packet_type", false);
    st.tup(2, "gen_u", 4, 2.0, vec![Value::Int32(4)]);
    Case {
        name: "bin-unknown-packet-type",
        description: "A sync followed by a packet type other than 01/02 is reported at the sync; \
                      the decoder resyncs from the byte after the first AA, so the rest of the \
                      bad frame is reported as garbage up to the next sync. An extra AA before \
                      a packet (AA AA AA 01 ...) costs only the unknown-type report."
            .into(),
        streams: vec![st],
    }
}

fn bin_too_large() -> Case {
    const SC: &str = "2 gen_l a:int32";
    let mut st = std_header(Content::Binary, &[SC]);
    st.tup(2, "gen_l", 1, 0.5, vec![Value::Int32(1)]);
    let o = st.raw([0xAA, 0xAA, 0x02, 0xFF, 0xFF, 0xFF, 0xFF, b'x', b'y', b'z']);
    st.err(o, "packet_too_large", false);
    st.err(o + 1, "garbage", false);
    st.tup(2, "gen_l", 2, 1.0, vec![Value::Int32(2)]);
    Case {
        name: "bin-packet-too-large",
        description: "A long packet declaring 0xFFFFFFFF body bytes (above the default 16 MiB \
                      limit) is reported at once, without waiting for the body; the decoder \
                      resyncs from the byte after the first AA and the next packet is decoded."
            .into(),
        streams: vec![st],
    }
}

fn bin_type_mismatch() -> Case {
    let mut st = std_header(
        Content::Binary,
        &[
            "2 gen_t a:int32 s:string",
            "3 gen_vb v:[bool]",
            "4 gen_vi v:[int32]",
        ],
    );
    st.tup(2, "gen_t", 1, 0.5, vec![Value::Int32(7), s("ok")]);
    st.bad_packet(
        &short(&body(2, 2, 2, 1.0, &[v_u32(7), v_str("bad")])),
        "bad_value",
    );
    st.tup(2, "gen_t", 3, 1.5, vec![Value::Int32(8), s("ok2")]);
    st.bad_packet(
        &short(&body(2, 2, 4, 2.0, &[v_i32(9), v_dtx(1.0)])),
        "bad_value",
    );
    st.bad_packet(
        &short(&body(2, 2, 5, 2.5, &[vec![0x10, 0, 0, 0, 0], v_str("x")])),
        "bad_value",
    );
    st.bad_packet(
        &short(&body(2, 2, 6, 3.0, &[vec![0x0E], v_str("x")])),
        "bad_value",
    );
    st.tup(2, "gen_t", 7, 3.5, vec![Value::Int32(10), s("ok3")]);
    st.bad_packet(
        &short(&body(1, 3, 1, 4.0, &[vec![0x0D, 0x0E, 0, 2, 0x0C, 0x01]])),
        "bad_value",
    );
    st.tup(3, "gen_vb", 2, 4.5, vec![Value::VecBool(vec![true, false])]);
    st.bad_packet(
        &short(&body(1, 4, 1, 5.0, &[vec![0x0D, 0x06, 0, 1, 0, 0, 0, 1]])),
        "bad_value",
    );
    let mut vd = vec![0x0D, 0x0F, 0, 1];
    vd.extend(1.0f64.to_be_bytes());
    st.bad_packet(&short(&body(1, 4, 2, 5.5, &[vd])), "bad_value");
    st.tup(4, "gen_vi", 3, 6.0, vec![Value::VecInt32(vec![1, -1])]);
    Case {
        name: "bin-type-mismatch",
        description: "Values whose type code does not fit their field reject that tuple only: \
                      UINT32_T for int32, DOUBLE_T for a string, unknown code 0x10, BOOL_T (0x0E) \
                      as a scalar, a [bool] element byte other than 0B/0C, a vector of the wrong \
                      element type. The framing is by length, so the following packets decode."
            .into(),
        streams: vec![st],
    }
}

fn bin_bad_packets() -> Case {
    const SC: &str = "2 gen_c a:int32 b:int32";
    let mut st = std_header(Content::Binary, &[SC]);
    let ok = |st: &mut Stream, seq: i64| {
        st.tup(
            2,
            "gen_c",
            seq,
            seq as f64,
            vec![Value::Int32(seq as i32), Value::Int32(-(seq as i32))],
        );
    };
    ok(&mut st, 1);
    st.bad_packet(&short(&body(1, 2, 2, 2.0, &[v_i32(1)])), "value_count");
    st.bad_packet(
        &short(&body(3, 2, 3, 3.0, &[v_i32(1), v_i32(2), v_i32(3)])),
        "value_count",
    );
    st.bad_packet(&short(&body(0, 2, 4, 4.0, &[])), "value_count");
    ok(&mut st, 5);
    st.bad_packet(
        &short(&body(2, 2, 6, 6.0, &[v_i32(1), v_i32(2), vec![0xFF, 0xFF]])),
        "length_mismatch",
    );
    // Declared length 2 bytes short of the values: the packet ends early and
    // its last 2 bytes are garbage before the next sync.
    let full = body(2, 2, 7, 7.0, &[v_i32(1), v_i32(2)]);
    let cut = full.len() - 2;
    let mut p = vec![0xAA, 0xAA, 0x01];
    p.extend((cut as u16).to_be_bytes());
    p.extend(&full[..cut]);
    let o = st.raw(&p);
    st.err(o, "length_mismatch", false);
    let o = st.raw(&full[cut..]);
    st.err(o, "garbage", false);
    ok(&mut st, 8);
    st.bad_packet(
        &[0xAA, 0xAA, 0x01, 0x00, 0x02, 0x02, 0x02],
        "length_mismatch",
    );
    // seq as DOUBLE_T, timestamp as STRING_T.
    let mut b = vec![2, 2];
    b.extend(v_dtx(1.0));
    b.extend(v_dtx(1.0));
    b.extend(v_i32(1));
    b.extend(v_i32(2));
    st.bad_packet(&short(&b), "bad_binary_prefix");
    let mut b = vec![2, 2];
    b.extend(v_i32(10));
    b.extend([0x04, 4, b'a', b'b', b'c', b'd']);
    b.extend(v_i32(1));
    b.extend(v_i32(2));
    st.bad_packet(&short(&b), "bad_binary_prefix");
    ok(&mut st, 11);
    Case {
        name: "bin-bad-packets",
        description: "Packets rejected one at a time, each followed by a good one: value count \
                      different from the schema's (1, 3 and 0 for 2 fields), bytes left over \
                      after the values, a declared length shorter than the values (its tail \
                      then shows up as garbage), a body too short for the prefix, a seq that is \
                      not INT32_T/LONG_T, a timestamp that is not a double."
            .into(),
        streams: vec![st],
    }
}

fn bin_undeclared() -> Case {
    const SC: &str = "2 gen_d a:int32";
    let mut st = std_header(Content::Binary, &[SC]);
    st.tup(2, "gen_d", 1, 0.5, vec![Value::Int32(1)]);
    st.bad_packet(
        &short(&body(1, 9, 1, 1.0, &[v_i32(5)])),
        "undeclared_stream",
    );
    st.bad_packet(
        &short(&body(1, 1, 1, 1.5, &[v_i32(5)])),
        "undeclared_stream",
    );
    st.tup(2, "gen_d", 2, 2.0, vec![Value::Int32(2)]);
    Case {
        name: "bin-undeclared-stream",
        description: "Tuples for stream indices no schema bound (9, and 1 in a gap) are rejected; \
                      the next tuple decodes."
            .into(),
        streams: vec![st],
    }
}

fn bin_truncated() -> Case {
    const SC: &str = "2 gen_tr a:int32 s:string";
    let mut st = std_header(Content::Binary, &[SC]);
    st.tup(2, "gen_tr", 1, 0.5, vec![Value::Int32(1), s("one")]);
    st.tup(2, "gen_tr", 2, 1.0, vec![Value::Int32(2), s("two")]);
    let mut p = Vec::new();
    Encoder::new(Content::Binary)
        .tuple(
            &mut p,
            2,
            3,
            1.5,
            [
                Value::Int32(3).as_value_ref(),
                Value::String("three".into()).as_value_ref(),
            ],
        )
        .expect("encodable");
    let o = st.raw(&p[..12]);
    st.err(o, "truncated", true);
    Case {
        name: "bin-truncated",
        description: "The stream ends 12 bytes into a packet: the packets before it decode, \
                      and the cut packet is reported (fatal, since the stream ends) at its \
                      offset."
            .into(),
        streams: vec![st],
    }
}

fn txt_short_line() -> Case {
    let mut st = std_header(Content::Text, &["2 gen_s a:int32"]);
    st.line("0.5\t2\t1\t1", 2, "gen_s", 1, 0.5, &[Value::Int32(1)]);
    st.bad_line("1\t2", "too_few_fields");
    st.line("1.5\t2\t2\t2", 2, "gen_s", 2, 1.5, &[Value::Int32(2)]);
    st.bad_line("2", "too_few_fields");
    st.bad_line("garbage", "too_few_fields");
    st.line("2.5\t2\t3\t3", 2, "gen_s", 3, 2.5, &[Value::Int32(3)]);
    Case {
        name: "txt-short-line",
        description: "Text lines with fewer than the three prefix fields are rejected one at a \
                      time; the lines after them decode."
            .into(),
        streams: vec![st],
    }
}

fn txt_bad_integer() -> Case {
    const SC: &str = "2 gen_i a:int32 b:uint32 c:int64 d:uint64 g:guid";
    let mut st = std_header(Content::Text, &[SC]);
    let n = "gen_i";
    let good = |st: &mut Stream, seq: i64| {
        st.line(
            &format!("{seq}\t2\t{seq}\t{seq}\t{seq}\t{seq}\t{seq}\t{seq}"),
            2,
            n,
            seq,
            seq as f64,
            &[
                Value::Int32(seq as i32),
                Value::UInt32(seq as u32),
                Value::Int64(seq),
                Value::UInt64(seq as u64),
                Value::Guid(seq as u64),
            ],
        );
    };
    good(&mut st, 1);
    for bad in [
        "abc\t1\t1\t1\t1",
        "\t1\t1\t1\t1",
        "99999999999999\t1\t1\t1\t1",
        "2147483648\t1\t1\t1\t1",
        "1.5\t1\t1\t1\t1",
        " 5\t1\t1\t1\t1",
        "0x10\t1\t1\t1\t1",
    ] {
        st.bad_line(&format!("2\t2\t2\t{bad}"), "bad_value");
    }
    good(&mut st, 3);
    for bad in [
        "1\t-1\t1\t1\t1",
        "1\t4294967296\t1\t1\t1",
        "1\t1\t9223372036854775808\t1\t1",
        "1\t1\t010x\t1\t1",
        "1\t1\t1\t18446744073709551616\t1",
        "1\t1\t1\t-1\t1",
        "1\t1\t1\t1\t-1",
        "1\t1\t1\t1\t+1",
        "1\t1\t1\t1\t0x1",
    ] {
        st.bad_line(&format!("4\t2\t4\t{bad}"), "bad_value");
    }
    good(&mut st, 5);
    Case {
        name: "txt-bad-integer",
        description: "Strict text integers: letters, the empty field, int32 overflow (no \
                      wrap-around), a fraction, whitespace, hex, -1 for unsigned types, out of \
                      range for every width, a sign on a guid. Each bad tuple is rejected; the \
                      good lines around them decode."
            .into(),
        streams: vec![st],
    }
}

fn txt_trailing_backslash() -> Case {
    let mut st = std_header(Content::Text, &["2 gen_b s:string t:string"]);
    st.line("0.5\t2\t1\ta\tb", 2, "gen_b", 1, 0.5, &[s("a"), s("b")]);
    st.bad_line("1\t2\t2\toops\\\tx", "bad_value");
    st.bad_line("1.5\t2\t3\tok\tend\\", "bad_value");
    st.line(
        "2\t2\t4\ta\\\\\tb\\\\",
        2,
        "gen_b",
        4,
        2.0,
        &[s("a\\"), s("b\\")],
    );
    Case {
        name: "txt-trailing-backslash",
        description: "A string field ending in a lone backslash (which crashes the reference \
                      server) rejects its tuple, whether it is the last field or not; an escaped \
                      backslash at the end of a field is fine."
            .into(),
        streams: vec![st],
    }
}

fn txt_invalid_base64() -> Case {
    let mut st = std_header(Content::Text, &["2 gen_bl b:blob"]);
    st.line(
        "0.5\t2\t1\tAAEC/w==",
        2,
        "gen_bl",
        1,
        0.5,
        &[Value::Blob(vec![0, 1, 2, 255])],
    );
    for bad in [
        "QQ",
        "Q===",
        "not-b64!",
        "QR==",
        "AAEC/w",
        "AA EC",
        "AAEC/w==AA==",
        "=AAA",
    ] {
        st.bad_line(&format!("1\t2\t2\t{bad}"), "bad_value");
    }
    st.line(
        "1.5\t2\t3\tQQ==",
        2,
        "gen_bl",
        3,
        1.5,
        &[Value::Blob(vec![b'A'])],
    );
    st.line("2\t2\t4\t", 2, "gen_bl", 4, 2.0, &[Value::Blob(vec![])]);
    Case {
        name: "txt-invalid-base64",
        description: "Text blobs must be padded RFC 4648 base64: missing or extra padding, \
                      characters outside the alphabet, non-zero trailing bits (QR==), a space, \
                      padding in the middle each reject the tuple; valid and empty blobs after \
                      them decode."
            .into(),
        streams: vec![st],
    }
}

fn txt_bad_values() -> Case {
    const SC: &str = "2 gen_v a:int32 d:double b:bool v:[int32]";
    let mut st = std_header(Content::Text, &[SC]);
    let n = "gen_v";
    let good = |st: &mut Stream, seq: i64| {
        st.line(
            &format!("{seq}\t2\t{seq}\t{seq}\t0.5\tT\t2 1 2"),
            2,
            n,
            seq,
            seq as f64,
            &[
                Value::Int32(seq as i32),
                Value::Double(0.5),
                Value::Bool(true),
                Value::VecInt32(vec![1, 2]),
            ],
        );
    };
    good(&mut st, 1);
    for (line, code) in [
        ("abc\t2\t2\t1\t0.5\tT\t0", "bad_prefix"),
        ("\t2\t2\t1\t0.5\tT\t0", "bad_prefix"),
        ("1\tx\t2\t1\t0.5\tT\t0", "bad_prefix"),
        ("1\t-1\t2\t1\t0.5\tT\t0", "bad_prefix"),
        ("1\t+2\t2\t1\t0.5\tT\t0", "bad_prefix"),
        ("1\t\t2\t1\t0.5\tT\t0", "bad_prefix"),
        ("1\t2\t\t1\t0.5\tT\t0", "bad_prefix"),
        ("1\t2\t1.5\t1\t0.5\tT\t0", "bad_prefix"),
        ("1\t2\t9223372036854775808\t1\t0.5\tT\t0", "bad_prefix"),
    ] {
        st.bad_line(line, code);
    }
    good(&mut st, 3);
    for (line, code) in [
        ("1\t7\t4\t1\t0.5\tT\t0", "undeclared_stream"),
        ("1\t1\t4\t1\t0.5\tT\t0", "undeclared_stream"),
        ("1\t2\t4\t1\t0.5\tT", "value_count"),
        ("1\t2\t4\t1\t0.5\tT\t0\t", "value_count"),
        ("1\t2\t4\t1\t0.5\tT\t0\textra", "value_count"),
        ("1\t2\t4", "value_count"),
    ] {
        st.bad_line(line, code);
    }
    good(&mut st, 5);
    for bad in [
        "1\tabc\tT\t0",
        "1\t\tT\t0",
        "1\t0x1p3\tT\t0",
        "1\t 1\tT\t0",
        "1\t1e\tT\t0",
        "1\t0.5\tyes\t0",
        "1\t0.5\t2\t0",
        "1\t0.5\tFalsey\t0",
        "1\t0.5\tT\t2 1",
        "1\t0.5\tT\t1 1 2",
        "1\t0.5\tT\t",
        "1\t0.5\tT\tx",
        "1\t0.5\tT\t1 x",
        "1\t0.5\tT\t-1",
        "1\t0.5\tT\t65536",
        "1\t0.5\tT\t1 2147483648",
    ] {
        st.bad_line(&format!("6\t2\t6\t{bad}"), "bad_value");
    }
    good(&mut st, 7);
    Case {
        name: "txt-bad-values",
        description: "Text tuples rejected one at a time: bad timestamp, stream index (letters, \
                      sign, empty) or seq (empty, fraction, out of int64); undeclared stream; too \
                      few or too many values (a trailing TAB adds an empty one); bad double \
                      (letters, empty, hex float, space), bad bool (yes, 2, Falsey), bad vector \
                      (count mismatch either way, empty, no count, bad element, count above \
                      65535). Good lines between them decode."
            .into(),
        streams: vec![st],
    }
}

fn txt_truncated_line() -> Case {
    let mut st = std_header(Content::Text, &["2 gen_tl a:int32 s:string"]);
    st.line(
        "0.5\t2\t1\t1\tone",
        2,
        "gen_tl",
        1,
        0.5,
        &[Value::Int32(1), s("one")],
    );
    st.line(
        "1\t2\t2\t2\ttwo",
        2,
        "gen_tl",
        2,
        1.0,
        &[Value::Int32(2), s("two")],
    );
    let o = st.raw("1.5\t2\t3\t3\tthr");
    st.err(o, "truncated", true);
    Case {
        name: "txt-truncated-line",
        description: "The stream ends inside a text line (no final LF): that line is reported \
                      as truncated (its last value may be cut) and not decoded."
            .into(),
        streams: vec![st],
    }
}

fn bad_dynamic_schema() -> Case {
    let streams = both(|c| {
        let mut st = std_header(c, &["1 gen_ok a:int32"]);
        let o = st.at();
        st.meta(1, 0.5, ".", "schema", "3 gen_bad x:int");
        st.items.pop();
        st.err(o, "schema", false);
        st.tup(1, "gen_ok", 1, 0.75, vec![Value::Int32(1)]);
        // The tuple for the index that failed to bind is undeclared.
        let o = st.at();
        st.tup(3, "gen_bad", 1, 1.0, vec![Value::Int32(5)]);
        st.items.pop();
        st.err(o, "undeclared_stream", false);
        st.declare(2, 1.25, "3 gen_bad x:int32", "3 gen_bad x:int32");
        st.tup(3, "gen_bad", 2, 1.5, vec![Value::Int32(6)]);
        for (seq, text) in [
            (3, "4 9bad x:int32"),
            (4, ""),
            (5, "5 gen_dup a:int32 a:int32"),
            (6, "x gen_x a:int32"),
        ] {
            let o = st.at();
            st.meta(seq, 1.75, ".", "schema", text);
            st.items.pop();
            st.err(o, "schema", false);
        }
        st.tup(1, "gen_ok", 2, 2.0, vec![Value::Int32(2)]);
        st
    });
    Case {
        name: "bad-dynamic-schema",
        description: "A malformed schema declared through schema 0 rejects that declaration \
                      only (the declaring tuple is dropped too): unknown type, bad stream name, \
                      empty text, duplicate field, non-numeric index. Tuples for the index it \
                      tried to bind are undeclared until a valid declaration binds it."
            .into(),
        streams,
    }
}

fn header_no_protocol() -> Case {
    let streams = both(|c| {
        let header = format!(
            "domain: d\nstart-time: 1\nschema: 1 gen_np a:int32\ncontent: {}\n\n",
            c.name()
        );
        let mut st = Stream::headerless(c, &header);
        let blank = st.at() - 1;
        st.err(blank, "header", true);
        if st.bin() {
            let mut p = Vec::new();
            Encoder::new(c)
                .tuple(&mut p, 1, 1, 0.5, [Value::Int32(1).as_value_ref()])
                .expect("encodable");
            st.raw(p);
        } else {
            st.raw("0.5\t1\t1\t1\n");
        }
        st
    });
    Case {
        name: "header-no-protocol",
        description: "A header without 'protocol' is rejected when its terminating empty line \
                      is reached (offset of that line); the error is fatal, so the tuples after \
                      it are not decoded."
            .into(),
        streams,
    }
}

fn header_fatal(
    name: &'static str,
    content: Content,
    lines: &[&str],
    bad_line: usize,
    description: &str,
) -> Case {
    let mut header = String::new();
    let mut off = 0;
    for (i, l) in lines.iter().enumerate() {
        if i == bad_line {
            off = header.len() as u64;
        }
        header.push_str(l);
        header.push('\n');
    }
    header.push('\n');
    let mut st = Stream::headerless(content, &header);
    st.err(off, "header", true);
    if content == Content::Binary {
        st.raw(short(&body(1, 1, 1, 0.5, &[v_i32(1)])));
    } else {
        st.raw("0.5\t1\t1\t1\n");
    }
    Case {
        name,
        description: description.into(),
        streams: vec![st],
    }
}

fn header_truncated() -> Case {
    let text = "protocol: 5\ndomain: d\nschema: 1 gen_t a:int32\ncont";
    let mut st = Stream::headerless(Content::Text, text);
    let last_line = text.rfind('\n').map_or(0, |i| i + 1) as u64;
    st.err(last_line, "truncated", true);
    Case {
        name: "header-truncated",
        description: "The stream ends inside the header (here in the middle of a line): fatal, \
                      reported at the offset of the unfinished line."
            .into(),
        streams: vec![st],
    }
}

fn cases() -> Vec<Case> {
    vec![
        int_edges(),
        doubles(),
        strings(),
        blobs(),
        bools(),
        vectors(),
        long_packets(),
        dynamic_schema(),
        metadata(),
        implicit_schema0(),
        protocol_v1(),
        protocol_v2(),
        protocol_v3(),
        oml4py(),
        crlf(),
        header_extras(),
        bin_lenient(),
        bin_garbage(),
        bin_unknown_type(),
        bin_too_large(),
        bin_type_mismatch(),
        bin_bad_packets(),
        bin_undeclared(),
        bin_truncated(),
        txt_short_line(),
        txt_bad_integer(),
        txt_trailing_backslash(),
        txt_invalid_base64(),
        txt_bad_values(),
        txt_truncated_line(),
        bad_dynamic_schema(),
        header_no_protocol(),
        header_fatal(
            "header-bad-content",
            Content::Binary,
            &[
                "protocol: 5",
                "domain: d",
                "schema: 1 gen_c a:int32",
                "content: Binary",
            ],
            3,
            "'content' must be exactly 'binary' or 'text' ('Binary' is not): a fatal header \
             error at the offending line; nothing after it is decoded.",
        ),
        header_fatal(
            "header-bad-protocol",
            Content::Text,
            &[
                "protocol: 6",
                "domain: d",
                "schema: 1 gen_c a:int32",
                "content: text",
            ],
            0,
            "Protocol 6 is outside 1..5: a fatal header error at the 'protocol' line.",
        ),
        header_fatal(
            "header-bad-schema",
            Content::Text,
            &[
                "protocol: 5",
                "domain: d",
                "schema: 1 gen_c a:int",
                "content: text",
            ],
            2,
            "A header schema with an unknown type ('int' is rejected, as by the reference \
             parser): a fatal header error at that line.",
        ),
        header_fatal(
            "header-no-colon",
            Content::Text,
            &[
                "protocol: 5",
                "domain d",
                "schema: 1 gen_c a:int32",
                "content: text",
            ],
            1,
            "A header line without a colon: a fatal header error at that line.",
        ),
        header_truncated(),
    ]
}

// ---------------------------------------------------------------------------
// Checking against the decoder, and writing.

/// Decodes `input` the way the vectors specify (feed everything, finish,
/// then drain; names resolved when each event comes out): events and
/// `(error, events before it)`.
fn decode(input: &[u8]) -> (Vec<Json>, Vec<(omsp::DecodeError, usize)>) {
    let mut d = Decoder::new();
    d.feed(input);
    d.finish();
    let (mut events, mut errors) = (Vec::new(), Vec::new());
    while let Some(r) = d.next_event() {
        match r {
            Ok(ev) => events.push(omsp::json::event(&ev, |i| {
                d.schema(i).map(|s| s.name.clone())
            })),
            Err(e) => errors.push((e, events.len())),
        }
    }
    (events, errors)
}

/// JSON equality with doubles compared bit for bit (so -0.0 != 0.0).
fn same_json(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => {
            if x.is_f64() || y.is_f64() {
                x.is_f64()
                    && y.is_f64()
                    && x.as_f64().map(f64::to_bits) == y.as_f64().map(f64::to_bits)
            } else {
                x == y
            }
        }
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// The `{"events", "errors"}` object of one input, after checking that the
/// decoder agrees with the expectation.
fn part_json(label: &str, st: &Stream) -> Json {
    let (events, errors) = decode(&st.buf);
    let exp_events: Vec<&Json> = st
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Ev(j) => Some(j),
            Item::Err { .. } => None,
        })
        .collect();
    let exp_errors: Vec<(u64, &str, bool, usize)> = st
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Err {
                offset,
                code,
                fatal,
                events_before,
            } => Some((*offset, *code, *fatal, *events_before)),
            Item::Ev(_) => None,
        })
        .collect();
    let mut ok = events.len() == exp_events.len();
    for (i, (a, e)) in events.iter().zip(&exp_events).enumerate() {
        if !same_json(a, e) {
            eprintln!("{label}: event {i} differs\n  decoder:  {a}\n  expected: {e}");
            ok = false;
        }
    }
    let got_errors: Vec<(u64, &str, bool, usize)> = errors
        .iter()
        .map(|(e, n)| (e.offset, e.kind.code(), e.is_fatal(), *n))
        .collect();
    if got_errors != exp_errors {
        eprintln!("{label}: errors differ\n  decoder:  {got_errors:?}\n  expected: {exp_errors:?}");
        for (e, _) in &errors {
            eprintln!("    {e}");
        }
        ok = false;
    }
    if !ok {
        eprintln!(
            "{label}: {} events decoded, {} expected",
            events.len(),
            exp_events.len()
        );
        std::process::exit(1);
    }
    let errors: Vec<Json> = errors
        .iter()
        .map(|(e, n)| {
            json!({
                "offset": e.offset,
                "code": e.kind.code(),
                "fatal": e.is_fatal(),
                "events_before": n,
                "message": e.kind.to_string(),
            })
        })
        .collect();
    let mut obj = serde_json::Map::new();
    if st.bin() {
        obj.insert("canonical".into(), json!(st.canonical && errors.is_empty()));
    }
    obj.insert(
        "events".into(),
        Json::Array(exp_events.into_iter().cloned().collect()),
    );
    obj.insert("errors".into(), Json::Array(errors));
    Json::Object(obj)
}

fn write(path: &Path, bytes: &[u8]) {
    if std::fs::read(path).ok().as_deref() != Some(bytes) {
        std::fs::write(path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        println!("wrote {}", path.display());
    }
}

/// Writes a case file: one event or error per line, so that a diff shows
/// which tuple changed.
fn write_json(path: &Path, j: &Json) {
    let one = |v: &Json| serde_json::to_string(v).expect("json");
    let mut text = String::from("{\n");
    let top = j.as_object().expect("object");
    for (i, (k, v)) in top.iter().enumerate() {
        text.push_str(&format!("  {}: ", one(&json!(k))));
        match v.as_object() {
            None => text.push_str(&one(v)),
            Some(part) => {
                text.push_str("{\n");
                for (m, (pk, pv)) in part.iter().enumerate() {
                    text.push_str(&format!("    {}: ", one(&json!(pk))));
                    match pv.as_array() {
                        Some(items) if !items.is_empty() => {
                            text.push_str("[\n");
                            for (n, item) in items.iter().enumerate() {
                                let sep = if n + 1 < items.len() { "," } else { "" };
                                text.push_str(&format!("      {}{sep}\n", one(item)));
                            }
                            text.push_str("    ]");
                        }
                        _ => text.push_str(&one(pv)),
                    }
                    text.push_str(if m + 1 < part.len() { ",\n" } else { "\n" });
                }
                text.push_str("  }");
            }
        }
        text.push_str(if i + 1 < top.len() { ",\n" } else { "\n" });
    }
    text.push_str("}\n");
    // serde_json's default float parsing is not always exact, so compare
    // with `j` sent through the same serialise-and-parse path.
    let back: Json = serde_json::from_str(&text).expect("valid JSON");
    let j2: Json = serde_json::from_str(&one(j)).expect("valid JSON");
    assert!(
        same_json(&back, &j2),
        "{}: JSON does not read back",
        path.display()
    );
    write(path, text.as_bytes());
}

/// The reference captures: byte-for-byte copies (made from
/// `$OMSP_REF_VECTORS`, default `/work/shared/vectors`, when that exists).
fn reference(dir: &Path, num: &str, name: &str, description: &str) {
    let src = PathBuf::from(
        std::env::var("OMSP_REF_VECTORS").unwrap_or_else(|_| "/work/shared/vectors".into()),
    );
    let mut obj = serde_json::Map::new();
    obj.insert("description".into(), json!(description));
    for (ext, suffixes) in [
        ("bin", &[".bin", ".rows.json"][..]),
        ("txt", &[".txt", ".rows-text.json"][..]),
    ] {
        for suf in suffixes {
            let from = src.join(format!("ref-{name}{suf}"));
            if let Ok(bytes) = std::fs::read(&from) {
                write(&dir.join(format!("{num}-ref-{name}{suf}")), &bytes);
            }
        }
        let input = std::fs::read(dir.join(format!("{num}-ref-{name}.{ext}")))
            .unwrap_or_else(|e| panic!("reference capture {num}-ref-{name}.{ext}: {e}"));
        let (events, errors) = decode(&input);
        assert!(
            errors.is_empty(),
            "reference capture {name}.{ext}: {errors:?}"
        );
        let mut part = serde_json::Map::new();
        if ext == "bin" {
            part.insert("canonical".into(), json!(true));
        }
        part.insert("events".into(), Json::Array(events));
        part.insert("errors".into(), json!([]));
        obj.insert(ext.into(), Json::Object(part));
    }
    write_json(
        &dir.join(format!("{num}-ref-{name}.json")),
        &Json::Object(obj),
    );
}

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spec/vectors");
    std::fs::create_dir_all(&dir).expect("spec/vectors");
    reference(
        &dir,
        "0001",
        "alltypes",
        "Reference capture (liboml2, OMSP v5, app 'vec'): byte-for-byte copies of \
         ref-alltypes.bin/.txt. Stream 2 vec_scalars (every scalar type, 3 tuples with \
         extremes), streams 3-8 one vector type each (2 tuples, the second empty), the \
         metadata tuple (.vec_scalars.dbl unit metre) sent twice, one _client_instrumentation \
         tuple. Expected decoding = this decoder's, checked against the rows the reference \
         server stored (0001-ref-alltypes.rows*.json) by crates/omsp/tests/reference.rs.",
    );
    reference(
        &dir,
        "0002",
        "onemp",
        "Reference capture (liboml2, OMSP v5): byte-for-byte copies of ref-onemp.bin/.txt. \
         Stream 2 vec_all with all fifteen types, 2 tuples, one _client_instrumentation tuple. \
         Expected decoding = this decoder's, checked against the rows the reference server \
         stored (0002-ref-onemp.rows*.json) by crates/omsp/tests/reference.rs.",
    );
    for (i, case) in cases().into_iter().enumerate() {
        let num = format!("{:04}-{}", i + 3, case.name);
        let mut obj = serde_json::Map::new();
        obj.insert("description".into(), json!(case.description));
        for st in &case.streams {
            let ext = if st.bin() { "bin" } else { "txt" };
            write(&dir.join(format!("{num}.{ext}")), &st.buf);
            obj.insert(ext.into(), part_json(&format!("{num}.{ext}"), st));
        }
        write_json(&dir.join(format!("{num}.json")), &Json::Object(obj));
    }
}
