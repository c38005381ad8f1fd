//! Walks the shared test vectors in `spec/vectors/` (see its README.md):
//! every input must decode to exactly its expected events and errors, all at
//! once, one byte at a time and in random chunks; every well-formed input must
//! survive re-encoding in the same and in the other content type.

mod common;

use std::path::{Path, PathBuf};

use common::exact_json;
use omsp::{Content, DecodeError, Decoder, Encoder, Event, Header, Value};
use serde_json::Value as Json;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spec/vectors")
}

fn exact(j: &Json) -> Json {
    exact_json(&serde_json::to_string(j).expect("json"))
}

fn num_text(j: &Json) -> Option<&str> {
    let o = j.as_object()?;
    if o.len() != 1 {
        return None;
    }
    o.get("#")?.as_str()
}

fn is_float_text(t: &str) -> bool {
    t.contains(['.', 'e', 'E'])
}

fn int(j: &Json) -> i128 {
    let t = num_text(j).unwrap_or_else(|| panic!("not a number: {j}"));
    assert!(!is_float_text(t), "not an integer: {t}");
    t.parse().expect("integer")
}

/// Equality of exact JSON trees; doubles compare bit for bit (-0.0 != 0.0).
fn same(a: &Json, b: &Json) -> bool {
    if let (Some(x), Some(y)) = (num_text(a), num_text(b)) {
        return match (is_float_text(x), is_float_text(y)) {
            (true, true) => {
                x.parse::<f64>().ok().map(f64::to_bits) == y.parse::<f64>().ok().map(f64::to_bits)
            }
            (false, false) => x.parse::<i128>().ok() == y.parse::<i128>().ok(),
            _ => false,
        };
    }
    match (a, b) {
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

// ---------------------------------------------------------------------------
// The vectors.

struct Input {
    /// `NNNN-name.bin` or `NNNN-name.txt`.
    label: String,
    content: Content,
    bytes: Vec<u8>,
    /// The `bin` or `txt` object of the case file (exact form).
    expected: Json,
}

impl Input {
    fn well_formed(&self) -> bool {
        self.expected["errors"]
            .as_array()
            .is_some_and(Vec::is_empty)
    }

    fn canonical(&self) -> bool {
        self.expected.get("canonical") == Some(&Json::Bool(true))
    }
}

/// Case stems (`NNNN-name`), in order.
fn stems() -> Vec<String> {
    let mut stems: Vec<String> = std::fs::read_dir(dir())
        .expect("spec/vectors")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter_map(|n| n.strip_suffix(".json").map(str::to_owned))
        .filter(|stem| !stem.contains('.'))
        .collect();
    stems.sort();
    stems
}

fn inputs() -> Vec<Input> {
    let mut out = Vec::new();
    for stem in stems() {
        let text = std::fs::read_to_string(dir().join(format!("{stem}.json"))).expect("case");
        let case = exact_json(&text);
        for (ext, content) in [("bin", Content::Binary), ("txt", Content::Text)] {
            if let Some(part) = case.get(ext) {
                let label = format!("{stem}.{ext}");
                let bytes =
                    std::fs::read(dir().join(&label)).unwrap_or_else(|e| panic!("{label}: {e}"));
                out.push(Input {
                    label,
                    content,
                    bytes,
                    expected: part.clone(),
                });
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Decoding.

/// Events with the name bound to their stream when they came out, and errors
/// with the number of events before them.
#[derive(Default)]
struct Decoded {
    events: Vec<(Event, Option<String>)>,
    errors: Vec<(DecodeError, usize)>,
}

impl Decoded {
    fn event_json(&self) -> Vec<Json> {
        self.events
            .iter()
            .map(|(ev, name)| exact(&omsp::json::event(ev, |_| name.clone())))
            .collect()
    }
}

fn drain(d: &mut Decoder, out: &mut Decoded) {
    while let Some(r) = d.next_event() {
        match r {
            Ok(ev) => {
                let name = match &ev {
                    Event::Sample(s) => d.schema(s.stream).map(|s| s.name.clone()),
                    _ => None,
                };
                out.events.push((ev, name));
            }
            Err(e) => out.errors.push((e, out.events.len())),
        }
    }
}

/// Feeds `input` in chunks whose sizes `next` chooses, draining after each.
fn decode_chunked(input: &[u8], mut next: impl FnMut() -> usize) -> Decoded {
    let mut d = Decoder::new();
    let mut out = Decoded::default();
    let mut pos = 0;
    while pos < input.len() {
        let n = next().clamp(1, input.len() - pos);
        d.feed(&input[pos..pos + n]);
        pos += n;
        drain(&mut d, &mut out);
    }
    d.finish();
    drain(&mut d, &mut out);
    assert!(d.is_done());
    out
}

/// The procedure of the README: feed everything, finish, then drain.
fn decode_all(input: &[u8]) -> Decoded {
    let mut d = Decoder::new();
    let mut out = Decoded::default();
    d.feed(input);
    d.finish();
    drain(&mut d, &mut out);
    out
}

/// xorshift64*: a fixed-seed chunk-size generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Compares a decoding with the expected `{events, errors}`; returns what differs.
fn compare(expected: &Json, got: &Decoded) -> Result<(), String> {
    let mut diffs = Vec::new();
    let exp_events = expected["events"].as_array().cloned().unwrap_or_default();
    let events = got.event_json();
    if events.len() != exp_events.len() {
        diffs.push(format!(
            "{} events, {} expected",
            events.len(),
            exp_events.len()
        ));
    }
    for (i, (a, e)) in events.iter().zip(&exp_events).enumerate() {
        if !same(a, e) {
            diffs.push(format!("event {i}:\n    got      {a}\n    expected {e}"));
        }
    }
    let exp_errors: Vec<(i128, String, bool, i128)> = expected["errors"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|e| {
            (
                int(&e["offset"]),
                e["code"].as_str().unwrap_or_default().to_owned(),
                e["fatal"].as_bool().unwrap_or_default(),
                int(&e["events_before"]),
            )
        })
        .collect();
    let errors: Vec<(i128, String, bool, i128)> = got
        .errors
        .iter()
        .map(|(e, n)| {
            (
                i128::from(e.offset),
                e.kind.code().to_owned(),
                e.is_fatal(),
                *n as i128,
            )
        })
        .collect();
    if errors != exp_errors {
        diffs.push(format!(
            "errors (offset, code, fatal, events_before):\n    got      {errors:?}\n    expected {exp_errors:?}"
        ));
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(diffs.join("\n  "))
    }
}

fn report(failures: Vec<String>, what: &str, checked: usize) {
    assert!(checked > 0, "no vectors checked");
    assert!(
        failures.is_empty(),
        "{} of {checked} inputs fail ({what}):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn directory_is_complete_and_consistent() {
    let stems = stems();
    assert!(stems.len() >= 20, "only {} cases", stems.len());
    let mut seen = std::collections::BTreeSet::new();
    for stem in &stems {
        let (num, name) = stem.split_at(4);
        assert!(
            num.bytes().all(|b| b.is_ascii_digit()) && name.starts_with('-'),
            "{stem}: not NNNN-name"
        );
        assert!(seen.insert(num.to_owned()), "{stem}: number used twice");
        let case =
            exact_json(&std::fs::read_to_string(dir().join(format!("{stem}.json"))).expect("case"));
        let obj = case.as_object().expect("object");
        assert!(case["description"].as_str().is_some_and(|d| !d.is_empty()));
        assert!(
            obj.keys()
                .all(|k| ["description", "bin", "txt"].contains(&k.as_str())),
            "{stem}: unexpected keys"
        );
        assert!(obj.contains_key("bin") || obj.contains_key("txt"), "{stem}");
        for ext in ["bin", "txt"] {
            assert_eq!(
                dir().join(format!("{stem}.{ext}")).exists(),
                obj.contains_key(ext),
                "{stem}.{ext}: input and expectation must come together"
            );
        }
    }
    // Every file belongs to a case.
    for e in std::fs::read_dir(dir()).expect("spec/vectors") {
        let name = e.expect("entry").file_name().to_string_lossy().into_owned();
        if name == "README.md" || name.starts_with('.') {
            continue;
        }
        let stem = name.split('.').next().unwrap_or_default();
        assert!(stems.iter().any(|s| s == stem), "{name}: no case file");
    }
}

#[test]
fn decode_all_at_once() {
    let inputs = inputs();
    let mut failures = Vec::new();
    for i in &inputs {
        if let Err(e) = compare(&i.expected, &decode_all(&i.bytes)) {
            failures.push(format!("{}:\n  {e}", i.label));
        }
        // Decoder::decode_all gives the same events and errors.
        let all = Decoder::decode_all(&i.bytes);
        let ours = decode_all(&i.bytes);
        let n_ok = all.iter().filter(|r| r.is_ok()).count();
        assert_eq!(n_ok, ours.events.len(), "{}", i.label);
        assert_eq!(all.len() - n_ok, ours.errors.len(), "{}", i.label);
    }
    report(failures, "all at once", inputs.len());
}

#[test]
fn decode_one_byte_at_a_time() {
    let inputs = inputs();
    let mut failures = Vec::new();
    for i in &inputs {
        if let Err(e) = compare(&i.expected, &decode_chunked(&i.bytes, || 1)) {
            failures.push(format!("{}:\n  {e}", i.label));
        }
    }
    report(failures, "one byte at a time", inputs.len());
}

#[test]
fn decode_in_random_chunks() {
    let inputs = inputs();
    let mut failures = Vec::new();
    for (seed, max) in [(1u64, 3u64), (7, 17), (42, 300), (2024, 5000)] {
        for i in &inputs {
            let mut rng = Rng(seed ^ 0x9E37_79B9_7F4A_7C15);
            let got = decode_chunked(&i.bytes, || (rng.next() % max) as usize + 1);
            if let Err(e) = compare(&i.expected, &got) {
                failures.push(format!(
                    "{} (seed {seed}, chunks 1..={max}):\n  {e}",
                    i.label
                ));
            }
        }
    }
    report(failures, "random chunks", inputs.len());
}

// ---------------------------------------------------------------------------
// Re-encoding.

/// What a scalar double becomes through DOUBLE_T.
fn quantise(v: f64) -> f64 {
    omsp::binary::double::encode(v).map_or(f64::NAN, |(m, x)| omsp::binary::double::decode(m, x))
}

/// A decoded sample as a binary writer sends it: timestamp and scalar doubles
/// through DOUBLE_T, seq as int32.
fn as_binary(ev: &Event) -> Event {
    match ev {
        Event::Sample(s) => {
            let mut s = s.clone();
            s.ts = quantise(s.ts);
            s.seq = i64::from(s.seq as i32);
            for v in &mut s.values {
                if let Value::Double(x) = v {
                    *x = quantise(*x);
                }
            }
            Event::Sample(s)
        }
        ev => ev.clone(),
    }
}

/// Length of the header of a session.
fn header_len(bytes: &[u8]) -> usize {
    Header::parse(bytes)
        .expect("header")
        .expect("complete header")
        .1
}

/// Re-encodes a decoding as `content`: the bytes, the events their decoding
/// should give, and how many tuples could not be encoded (skipped).
fn reencode(dec: &Decoded, content: Content) -> (Vec<u8>, Decoded, usize) {
    let mut enc = Encoder::new(content);
    let mut out = Vec::new();
    let mut expected = Decoded::default();
    let mut skipped = 0;
    for (ev, name) in &dec.events {
        match ev {
            Event::Header(h) => {
                enc.header(h, &mut out);
                let h = Header {
                    content,
                    ..h.clone()
                };
                expected.events.push((Event::Header(h), None));
            }
            Event::Schema(_) => expected.events.push((ev.clone(), name.clone())),
            Event::Sample(s) => {
                let values = s.values.iter().map(Value::as_value_ref);
                match enc.tuple(&mut out, s.stream, s.seq, s.ts, values) {
                    Ok(()) if content == Content::Binary => {
                        expected.events.push((as_binary(ev), name.clone()));
                    }
                    Ok(()) => expected.events.push((ev.clone(), name.clone())),
                    Err(_) => skipped += 1,
                }
            }
        }
    }
    (out, expected, skipped)
}

fn reencode_check(same_content: bool) -> (Vec<String>, usize, usize) {
    let mut failures = Vec::new();
    let (mut checked, mut skipped_total) = (0, 0);
    for i in inputs().iter().filter(|i| i.well_formed()) {
        checked += 1;
        let dec = decode_all(&i.bytes);
        let target = match (same_content, i.content) {
            (true, c) => c,
            (false, Content::Binary) => Content::Text,
            (false, Content::Text) => Content::Binary,
        };
        let (bytes, expected, skipped) = reencode(&dec, target);
        skipped_total += skipped;
        let got = decode_all(&bytes);
        let label = format!("{} -> {}", i.label, target.name());
        if let Err(e) = compare(
            &serde_json::json!({"events": expected.event_json(), "errors": []}),
            &got,
        ) {
            failures.push(format!("{label}:\n  {e}"));
        }
        if same_content && target == Content::Binary && i.canonical() {
            let (a, b) = (
                &bytes[header_len(&bytes)..],
                &i.bytes[header_len(&i.bytes)..],
            );
            if a != b {
                let at = a
                    .iter()
                    .zip(b)
                    .position(|(x, y)| x != y)
                    .unwrap_or(a.len().min(b.len()));
                failures.push(format!(
                    "{label}: tuple bytes differ from the input at tuple byte {at} ({} vs {} bytes)",
                    a.len(),
                    b.len()
                ));
            }
        }
    }
    (failures, checked, skipped_total)
}

#[test]
fn reencode_in_the_same_content_type() {
    let (failures, checked, skipped) = reencode_check(true);
    // Only the 255-byte string of 0019-bin-lenient cannot be written
    // (binary writers send at most 254 bytes).
    assert_eq!(skipped, 1, "tuples that could not be re-encoded");
    report(failures, "re-encoded in the same content type", checked);
}

#[test]
fn reencode_in_the_other_content_type() {
    let (failures, checked, skipped) = reencode_check(false);
    // Only the 300-byte text string of 0005-strings cannot go to binary.
    assert_eq!(skipped, 1, "tuples that could not be re-encoded");
    report(failures, "re-encoded in the other content type", checked);
}

#[test]
fn canonical_binary_inputs_are_what_the_encoder_writes() {
    // The flag is set on the reference captures and on our encoder's output.
    let canonical: Vec<String> = inputs()
        .into_iter()
        .filter(|i| i.canonical())
        .map(|i| i.label)
        .collect();
    assert!(canonical.contains(&"0001-ref-alltypes.bin".to_owned()));
    assert!(canonical.contains(&"0002-ref-onemp.bin".to_owned()));
    assert!(canonical.len() >= 10, "{canonical:?}");
}
