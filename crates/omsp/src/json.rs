//! JSON forms of decoded events: what `streamgauge decode` prints, one object
//! per line, and what the expected decodings in `spec/vectors/` contain.

use crate::{DecodeError, Event, Header, Sample, Schema, Value};
use base64::Engine as _;
use serde_json::{json, Value as Json};

fn double(v: f64) -> Json {
    if v.is_nan() {
        Json::Null
    } else if v.is_infinite() {
        Json::from(if v > 0.0 { "inf" } else { "-inf" })
    } else {
        Json::from(v)
    }
}

/// A value as JSON: integers exact (64-bit included), NaN as null, ±Inf as
/// the strings "inf"/"-inf", blobs as base64 strings, vectors as arrays.
pub fn value(v: &Value) -> Json {
    match v {
        Value::Int32(x) => Json::from(*x),
        Value::UInt32(x) => Json::from(*x),
        Value::Int64(x) => Json::from(*x),
        Value::UInt64(x) | Value::Guid(x) => Json::from(*x),
        Value::Double(x) => double(*x),
        Value::String(s) => Json::from(s.as_str()),
        Value::Blob(b) => Json::from(base64::engine::general_purpose::STANDARD.encode(b)),
        Value::Bool(b) => Json::from(*b),
        Value::VecDouble(v) => v.iter().map(|x| double(*x)).collect(),
        Value::VecInt32(v) => Json::from(v.clone()),
        Value::VecUInt32(v) => Json::from(v.clone()),
        Value::VecInt64(v) => Json::from(v.clone()),
        Value::VecUInt64(v) => Json::from(v.clone()),
        Value::VecBool(v) => Json::from(v.clone()),
    }
}

fn fields(s: &Schema) -> Json {
    s.fields
        .iter()
        .map(|f| json!([f.name, f.ty.name()]))
        .collect()
}

/// `{"kind":"header", ...}`.
pub fn header(h: &Header) -> Json {
    json!({
        "kind": "header",
        "protocol": h.protocol,
        "domain": h.domain,
        "sender_id": h.sender_id,
        "app_name": h.app_name,
        "start_time": h.start_time,
        "content": h.content.name(),
        "schemas": h.schemas.iter().map(|s| json!({"index": s.index, "name": s.name, "fields": fields(s)})).collect::<Json>(),
        "extra": h.extra.iter().map(|(k, v)| json!([k, v])).collect::<Json>(),
    })
}

/// `{"kind":"schema", ...}` for a stream declared after the header.
pub fn schema(s: &Schema) -> Json {
    json!({"kind": "schema", "index": s.index, "name": s.name, "fields": fields(s)})
}

/// `{"kind":"sample", ...}`.
pub fn sample(s: &Sample, name: Option<&str>) -> Json {
    json!({
        "kind": "sample",
        "stream": s.stream,
        "name": name,
        "seq": s.seq,
        "ts": double(s.ts),
        "values": s.values.iter().map(value).collect::<Json>(),
    })
}

/// Any event as JSON; `name` resolves a stream index to its schema name.
pub fn event(ev: &Event, name: impl Fn(u32) -> Option<String>) -> Json {
    match ev {
        Event::Header(h) => header(h),
        Event::Schema(s) => schema(s),
        Event::Sample(s) => sample(s, name(s.stream).as_deref()),
    }
}

/// `{"offset":N,"code":"...","fatal":bool,"message":"..."}` for an error.
pub fn error(e: &DecodeError) -> Json {
    json!({"offset": e.offset, "code": e.kind.code(), "fatal": e.is_fatal(), "message": e.kind.to_string()})
}
