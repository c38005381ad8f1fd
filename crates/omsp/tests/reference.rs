//! Acceptance checks against the reference implementation (OML 2.x, liboml2
//! client and oml2-server), using the captures copied byte for byte into
//! `spec/vectors/` (`0001-ref-alltypes.*`, `0002-ref-onemp.*`):
//!
//! - every capture decodes to exactly the values the reference server stored
//!   (`*.rows.json` for the binary capture, `*.rows-text.json` for the text
//!   one), once the reference's storage defects are undone;
//! - the text and binary captures of the same injections agree, modulo the
//!   reference client's `%f` text doubles and DOUBLE_T's 30-bit mantissa;
//! - re-encoding the decoded tuples of a binary capture reproduces the
//!   reference client's packets byte for byte.

mod common;

use std::path::{Path, PathBuf};

use common::exact_json;
use omsp::binary::BinaryEncoder;
use omsp::{Decoder, Event, Header, OmlType, Sample, Value};
use serde_json::Value as Json;

const CAPTURES: [&str; 2] = ["0001-ref-alltypes", "0002-ref-onemp"];

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spec/vectors")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn num_text(j: &Json) -> Option<&str> {
    let o = j.as_object()?;
    if o.len() != 1 {
        return None;
    }
    o.get("#")?.as_str()
}

fn int(j: &Json) -> i128 {
    num_text(j)
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("not an integer: {j}"))
}

fn float(j: &Json) -> f64 {
    num_text(j)
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("not a number: {j}"))
}

// ---------------------------------------------------------------------------
// Captures.

struct Capture {
    header: Header,
    header_len: usize,
    samples: Vec<Sample>,
}

impl Capture {
    /// Samples of one stream, in order.
    fn stream(&self, index: u32) -> Vec<&Sample> {
        self.samples.iter().filter(|s| s.stream == index).collect()
    }
}

fn decode(name: &str) -> Capture {
    let bytes = read(name);
    let mut d = Decoder::new();
    d.feed(&bytes);
    d.finish();
    let (mut header, mut header_len, mut samples) = (None, 0, Vec::new());
    while let Some(r) = d.next_event() {
        match r.unwrap_or_else(|e| panic!("{name}: {e}")) {
            Event::Header(h) => {
                header_len = d.offset() as usize;
                header = Some(h);
            }
            Event::Schema(s) => panic!("{name}: unexpected late schema {s}"),
            Event::Sample(s) => samples.push(s),
        }
    }
    Capture {
        header: header.unwrap_or_else(|| panic!("{name}: no header")),
        header_len,
        samples,
    }
}

// ---------------------------------------------------------------------------
// What the reference server stored, with its defects undone.

/// An integer column read back as `bits` wide unsigned: SQLite hands values
/// above the signed range back negative (two's complement).
fn unsigned(j: &Json, bits: u32) -> u64 {
    let v = int(j);
    let v = if v < 0 { v + (1i128 << bits) } else { v };
    assert!(
        (0..1i128 << bits).contains(&v),
        "{v} does not fit {bits} bits"
    );
    v as u64
}

/// A vector column: the text `[ a, b, c ]`, or '' for an empty vector.
fn vector<T>(j: &Json, elt: impl Fn(&str) -> T) -> Vec<T> {
    let text = j.as_str().unwrap_or_else(|| panic!("vector cell {j}"));
    if text.is_empty() {
        return Vec::new();
    }
    let inner = text
        .strip_prefix("[ ")
        .and_then(|t| t.strip_suffix(" ]"))
        .unwrap_or_else(|| panic!("vector cell {text:?}"));
    inner.split(", ").map(elt).collect()
}

fn parse<T: std::str::FromStr>(s: &str) -> T {
    s.parse().unwrap_or_else(|_| panic!("vector element {s:?}"))
}

/// The value a stored cell stands for.
fn cell(ty: OmlType, j: &Json) -> Value {
    match ty {
        OmlType::Int32 => Value::Int32(i32::try_from(int(j)).expect("int32")),
        OmlType::UInt32 => Value::UInt32(unsigned(j, 32) as u32),
        OmlType::Int64 => Value::Int64(i64::try_from(int(j)).expect("int64")),
        OmlType::UInt64 => Value::UInt64(unsigned(j, 64)),
        // guid 0 is stored as NULL.
        OmlType::Guid if j.is_null() => Value::Guid(0),
        OmlType::Guid => Value::Guid(unsigned(j, 64)),
        // A NaN double is stored as NULL.
        OmlType::Double if j.is_null() => Value::Double(f64::NAN),
        OmlType::Double => Value::Double(float(j)),
        OmlType::String => Value::String(j.as_str().expect("string cell").to_owned()),
        OmlType::Blob => {
            let hex = j["blob_hex"].as_str().expect("blob cell");
            Value::Blob(
                (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
                    .collect(),
            )
        }
        OmlType::Bool => Value::Bool(match int(j) {
            0 => false,
            1 => true,
            v => panic!("bool cell {v}"),
        }),
        OmlType::VecDouble => Value::VecDouble(vector(j, parse)),
        OmlType::VecInt32 => Value::VecInt32(vector(j, parse)),
        OmlType::VecUInt32 => Value::VecUInt32(vector(j, parse)),
        OmlType::VecInt64 => Value::VecInt64(vector(j, parse)),
        OmlType::VecUInt64 => Value::VecUInt64(vector(j, parse)),
        OmlType::VecBool => Value::VecBool(vector(j, |s| match s {
            "true" => true,
            "false" => false,
            _ => panic!("bool element {s:?}"),
        })),
    }
}

const PREFIX: [&str; 4] = ["oml_tuple_id", "oml_sender_id", "oml_seq", "oml_ts_client"];

/// Compares a decoded capture with the rows the reference stored for it;
/// returns every difference found.
fn compare_with_rows(capture_name: &str, rows_name: &str) -> (Vec<String>, usize) {
    let cap = decode(capture_name);
    let rows = exact_json(&String::from_utf8(read(rows_name)).expect("utf-8"));
    let mut diffs = Vec::new();
    let mut compared = 0;
    let domain = cap.header.domain.as_deref().expect("domain");
    let db = rows[domain].as_object().expect("the capture's domain");

    // Sender.
    let senders = &db["_senders"]["rows"];
    assert_eq!(
        senders[0][0].as_str(),
        cap.header.sender_id.as_deref(),
        "_senders"
    );

    // One table per declared stream, nothing else.
    let mut tables: Vec<&str> = db
        .keys()
        .map(String::as_str)
        .filter(|t| *t != "_senders")
        .collect();
    let mut names: Vec<&str> = cap.header.schemas.iter().map(|s| s.name.as_str()).collect();
    tables.sort_unstable();
    names.sort_unstable();
    assert_eq!(tables, names, "{rows_name}: tables");

    // Bookkeeping rows (no sender): one `table_<name>` per schema, holding
    // the schema in canonical form, and the start time.
    let meta = &db["_experiment_metadata"]["rows"];
    let mut book: Vec<(String, String)> = meta
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r[1].is_null())
        .map(|r| {
            (
                r[5].as_str().expect("key").to_owned(),
                r[6].as_str().expect("value").to_owned(),
            )
        })
        .collect();
    let mut want: Vec<(String, String)> = cap
        .header
        .schemas
        .iter()
        .map(|s| (format!("table_{}", s.name), s.to_string()))
        .collect();
    want.push((
        "start_time".into(),
        cap.header.start_time.expect("start-time").to_string(),
    ));
    book.sort();
    want.sort();
    if book != want {
        diffs.push(format!(
            "bookkeeping rows: stored {book:?}, expected {want:?}"
        ));
    }

    // Data rows, stream by stream, in order.
    for schema in &cap.header.schemas {
        let table = &db[schema.name.as_str()];
        let columns: Vec<&str> = table["columns"]
            .as_array()
            .expect("columns")
            .iter()
            .map(|c| c.as_str().expect("column name"))
            .collect();
        let mut want_cols: Vec<&str> = PREFIX.to_vec();
        want_cols.extend(schema.fields.iter().map(|f| f.name.as_str()));
        assert_eq!(columns, want_cols, "{rows_name}: {}", schema.name);
        let stored: Vec<&Json> = table["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .filter(|r| !r[1].is_null())
            .collect();
        let samples = cap.stream(schema.index);
        if stored.len() != samples.len() {
            diffs.push(format!(
                "{}: {} rows stored, {} tuples decoded",
                schema.name,
                stored.len(),
                samples.len()
            ));
            continue;
        }
        for (n, (row, s)) in stored.iter().zip(&samples).enumerate() {
            compared += 1;
            let at = format!("{} row {}", schema.name, n + 1);
            if int(&row[2]) != i128::from(s.seq) {
                diffs.push(format!("{at}: oml_seq {} != seq {}", row[2], s.seq));
            }
            // oml_ts_client = ts + (client start-time − database start), and
            // the offset is 0 for the database's only client.
            if float(&row[3]) != s.ts {
                diffs.push(format!("{at}: oml_ts_client {} != ts {}", row[3], s.ts));
            }
            for (k, f) in schema.fields.iter().enumerate() {
                let stored = cell(f.ty, &row[4 + k]);
                if !stored.same_as(&s.values[k]) {
                    diffs.push(format!(
                        "{at}: {}: stored {stored:?}, decoded {:?}",
                        f.name, s.values[k]
                    ));
                }
            }
        }
    }
    (diffs, compared)
}

fn check_rows(suffix: &str, rows_suffix: &str) {
    let mut all = Vec::new();
    for c in CAPTURES {
        let (diffs, compared) =
            compare_with_rows(&format!("{c}{suffix}"), &format!("{c}{rows_suffix}"));
        assert!(compared >= 3, "{c}: only {compared} rows compared");
        all.extend(diffs.into_iter().map(|d| format!("{c}{suffix}: {d}")));
    }
    assert!(all.is_empty(), "{}", all.join("\n"));
}

#[test]
fn binary_captures_decode_to_what_the_reference_stored() {
    check_rows(".bin", ".rows.json");
}

#[test]
fn text_captures_decode_to_what_the_reference_stored() {
    check_rows(".txt", ".rows-text.json");
}

// 3.141593 is pi as liboml2's `%f` prints it, on purpose.
#[allow(clippy::approx_constant)]
#[test]
fn alltypes_capture_shows_the_documented_reference_behaviour() {
    let cap = decode("0001-ref-alltypes.bin");
    // The metadata tuple arrives twice, with the same seq.
    let meta = cap.stream(0);
    assert_eq!(meta.len(), 2);
    assert_eq!(meta[0].values, meta[1].values);
    assert_eq!((meta[0].seq, meta[1].seq), (1, 1));
    assert_eq!(
        meta[0].values,
        [
            Value::String(".vec_scalars.dbl".into()),
            Value::String("unit".into()),
            Value::String("metre".into())
        ]
    );
    let scalars = cap.stream(2);
    // pi through DOUBLE_T; 1e-300 as DOUBLE_NAN; the NULL blob re-sent.
    assert_eq!(scalars[0].values[4], Value::Double(3.141592651605606));
    assert!(matches!(scalars[2].values[4], Value::Double(x) if x.is_nan()));
    assert_eq!(scalars[2].values[6], Value::Blob(b"OML".to_vec()));
    assert_eq!(scalars[2].values[7], Value::Guid(0));
    let txt = decode("0001-ref-alltypes.txt");
    let tscalars = txt.stream(2);
    assert_eq!(tscalars[0].values[4], Value::Double(3.141593));
    assert_eq!(tscalars[2].values[4], Value::Double(0.0));
}

// ---------------------------------------------------------------------------
// Text and binary captures of the same injections.

/// A binary double `b` and the text double `t` of the same injected value
/// agree: `t` is the value rounded to 6 decimals (`%f`), `b` its DOUBLE_T
/// truncation to 30 bits; NaN in binary stands for a value DOUBLE_T cannot
/// carry (|v| < 2^-129, which `%f` shows as 0, or |v| >= 2^127).
fn doubles_agree(t: f64, b: f64) -> bool {
    if b.is_nan() {
        return t.is_nan() || t.is_infinite() || t.abs() <= 5e-7 || t.abs() >= 2f64.powi(127);
    }
    (t - b).abs() <= 5e-7 + 2f64.powi(-29) * b.abs()
}

fn values_agree(t: &Value, b: &Value) -> bool {
    match (t, b) {
        (Value::Double(t), Value::Double(b)) => doubles_agree(*t, *b),
        (Value::VecDouble(t), Value::VecDouble(b)) => {
            t.len() == b.len() && t.iter().zip(b).all(|(t, b)| doubles_agree(*t, *b))
        }
        _ => t == b,
    }
}

#[test]
fn text_and_binary_captures_agree() {
    let mut diffs = Vec::new();
    for c in CAPTURES {
        let bin = decode(&format!("{c}.bin"));
        let txt = decode(&format!("{c}.txt"));
        assert_eq!(
            Header {
                content: bin.header.content,
                ..txt.header.clone()
            },
            bin.header,
            "{c}: headers differ beyond 'content'"
        );
        assert_eq!(bin.samples.len(), txt.samples.len(), "{c}: tuple counts");
        for schema in &bin.header.schemas {
            let (b, t) = (bin.stream(schema.index), txt.stream(schema.index));
            assert_eq!(b.len(), t.len(), "{c}: {} tuple counts", schema.name);
            // Timestamps differ between the two runs, and so do the
            // instrumentation values (memory use).
            let values_too = schema.name != omsp::metadata::CLIENT_INSTRUMENTATION_NAME;
            for (n, (b, t)) in b.iter().zip(&t).enumerate() {
                let at = format!("{c}: {} tuple {}", schema.name, n + 1);
                if b.seq != t.seq {
                    diffs.push(format!("{at}: seq {} vs {}", b.seq, t.seq));
                }
                if !values_too {
                    continue;
                }
                for ((f, tv), bv) in schema.fields.iter().zip(&t.values).zip(&b.values) {
                    if !values_agree(tv, bv) {
                        diffs.push(format!("{at}: {}: text {tv:?}, binary {bv:?}", f.name));
                    }
                }
            }
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

#[allow(clippy::approx_constant)]
#[test]
fn doubles_agree_is_not_vacuous() {
    assert!(doubles_agree(3.141593, 3.141592651605606));
    assert!(doubles_agree(0.0, f64::NAN)); // 1e-300
    assert!(!doubles_agree(3.14159, 3.141592651605606));
    assert!(!doubles_agree(1.0, f64::NAN));
    assert!(!doubles_agree(f64::NAN, 1.0));
}

// ---------------------------------------------------------------------------
// Byte-identical re-encoding.

#[test]
fn reencoding_binary_captures_reproduces_the_reference_packets() {
    for c in CAPTURES {
        let name = format!("{c}.bin");
        let bytes = read(&name);
        let cap = decode(&name);
        let mut header = Vec::new();
        cap.header.write(&mut header);
        assert_eq!(
            String::from_utf8_lossy(&header),
            String::from_utf8_lossy(&bytes[..cap.header_len]),
            "{name}: header"
        );
        let mut enc = BinaryEncoder::new();
        let mut out = Vec::new();
        for s in &cap.samples {
            enc.encode_tuple(
                &mut out,
                s.stream,
                s.seq,
                s.ts,
                s.values.iter().map(Value::as_value_ref),
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let tuples = &bytes[cap.header_len..];
        if out != tuples {
            let at = out
                .iter()
                .zip(tuples)
                .position(|(a, b)| a != b)
                .unwrap_or(out.len().min(tuples.len()));
            panic!(
                "{name}: re-encoded tuples differ at capture offset {:#x} ({} vs {} bytes)",
                cap.header_len + at,
                out.len(),
                tuples.len()
            );
        }
        assert!(cap.samples.len() >= 3, "{name}");
    }
}
