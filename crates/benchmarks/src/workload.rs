//! What the server benchmark sends: a schema preset, deterministic tuples
//! (so any stored row can be checked against what was sent), and the
//! pre-encoded byte stream of each client.

use omsp::{Content, Encoder, Header, OmlType, Schema, Value};

/// Stream index of the benchmark stream in every session.
pub const STREAM_INDEX: u32 = 1;

/// Application name in every header (the table is `<app>_<mp>`).
pub const APP: &str = "bench";

/// Schema presets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Preset {
    /// The basic tuple: int32, double, 16-character string.
    Basic,
    /// Numbers only: int32, int64, uint64 (half of them above 2^63), double.
    Numeric,
    /// Eight fields of mixed types, two of them 16-character strings.
    Wide,
}

impl Preset {
    /// The schema this preset declares (index [`STREAM_INDEX`]).
    pub fn schema(self) -> Schema {
        let fields = match self {
            Preset::Basic => "i:int32 d:double s:string",
            Preset::Numeric => "i:int32 l:int64 u:uint64 d:double",
            Preset::Wide => "a:int32 b:double c:string d:int64 e:double f:string g:uint32 h:double",
        };
        #[allow(clippy::expect_used)]
        Schema::parse(&format!("{STREAM_INDEX} {APP}_sample {fields}"))
            .expect("preset schemas are valid")
    }

    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Basic => "basic",
            Preset::Numeric => "numeric",
            Preset::Wide => "wide",
        }
    }
}

impl std::fmt::Display for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The value client `client` sends in field `field` (of type `ty`) of the
/// tuple with sequence number `seq`. Deterministic, so stored rows can be
/// checked without keeping what was sent.
pub fn value(ty: OmlType, client: usize, seq: i64, field: usize) -> Value {
    let c = client as i64;
    let f = field as i64;
    match ty {
        OmlType::Int32 => Value::Int32((seq.wrapping_mul(7) + c + f) as i32),
        OmlType::UInt32 => Value::UInt32((seq as u32).wrapping_mul(2_654_435_761)),
        OmlType::Int64 => Value::Int64(seq.wrapping_mul(1_000_003) - c),
        OmlType::UInt64 | OmlType::Guid => {
            Value::UInt64((seq as u64 + f as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        }
        OmlType::Double => Value::Double(seq as f64 * 0.25 + c as f64 + f as f64 / 8.0),
        OmlType::Bool => Value::Bool(seq % 2 == 0),
        // 16 characters: c<client:2>f<field:1>s<seq:10>.
        _ => Value::String(format!(
            "c{:02}f{}s{:010}",
            client % 100,
            field % 10,
            seq.rem_euclid(10_000_000_000)
        )),
    }
}

/// All values of one tuple.
pub fn tuple(schema: &Schema, client: usize, seq: i64) -> Vec<Value> {
    schema
        .fields
        .iter()
        .enumerate()
        .map(|(i, f)| value(f.ty, client, seq, i))
        .collect()
}

/// The client timestamp of tuple `seq` (one per microsecond).
pub fn timestamp(seq: i64) -> f64 {
    seq as f64 * 1e-6
}

/// The `sender-id` of client `client`.
pub fn sender(client: usize) -> String {
    format!("bench-{client}")
}

/// The whole session of one client: header, then `tuples` tuples with
/// sequence numbers `0..tuples`.
pub fn encode_session(
    schema: &Schema,
    content: Content,
    domain: &str,
    client: usize,
    tuples: u64,
    start_time: i64,
) -> anyhow::Result<Vec<u8>> {
    let mut header = Header::new(domain, &sender(client), APP, start_time, content);
    header.schemas.push(schema.clone());
    let mut enc = Encoder::new(content);
    let mut out = Vec::with_capacity(tuples as usize * 48 + 256);
    enc.header(&header, &mut out);
    for seq in 0..tuples as i64 {
        let values = tuple(schema, client, seq);
        enc.tuple(
            &mut out,
            STREAM_INDEX,
            seq,
            timestamp(seq),
            values.iter().map(Value::as_value_ref),
        )?;
    }
    Ok(out)
}

/// How `total` tuples are shared among `clients`: the first ones get one
/// more when it does not divide evenly.
pub fn share(total: u64, clients: usize, client: usize) -> u64 {
    let c = clients.max(1) as u64;
    total / c + u64::from((client as u64) < total % c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_have_sixteen_characters() {
        for (c, s) in [(0, 0), (3, 999_999), (99, 12_345_678_901)] {
            let Value::String(v) = value(OmlType::String, c, s, 2) else {
                panic!()
            };
            assert_eq!(v.len(), 16, "{v}");
        }
    }

    #[test]
    fn sessions_decode_to_what_was_generated() {
        let schema = Preset::Wide.schema();
        for content in [Content::Text, Content::Binary] {
            let bytes = encode_session(&schema, content, "d", 2, 5, 1_700_000_000).unwrap();
            let samples: Vec<_> = omsp::Decoder::decode_all(&bytes)
                .into_iter()
                .filter_map(|e| match e.unwrap() {
                    omsp::Event::Sample(s) => Some(s),
                    _ => None,
                })
                .collect();
            assert_eq!(samples.len(), 5);
            for s in samples {
                assert_eq!(s.values, tuple(&schema, 2, s.seq));
            }
        }
    }

    #[test]
    fn shares_add_up() {
        assert_eq!((0..4).map(|c| share(10, 4, c)).sum::<u64>(), 10);
        assert_eq!(share(10, 4, 0), 3);
        assert_eq!(share(10, 4, 3), 2);
    }
}
