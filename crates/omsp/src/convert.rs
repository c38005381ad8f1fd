//! Whole streams converted, as `streamgauge decode` does: OMSP in, JSON
//! lines (one per header, schema and sample) or an OMSP stream of the
//! other encoding out. No I/O: the caller feeds what it reads and writes
//! what comes back.
//!
//! ```
//! use omsp::convert::{Converter, Output};
//!
//! let mut c = Converter::new(Output::Json);
//! let mut out = Vec::new();
//! let input = b"protocol: 5\ndomain: d\nstart-time: 1\nsender-id: s\napp-name: a\n\
//!               schema: 1 a_m x:int32\ncontent: text\n\n0.5\t1\t1\t42\n";
//! c.feed(input, &mut out, |e| panic!("{e}"));
//! c.finish(&mut out, |e| panic!("{e}"));
//! assert_eq!(String::from_utf8(out).unwrap().lines().count(), 2);
//! assert_eq!(c.errors(), 0);
//! ```

use crate::{json, Content, Decoder, Encoder, Event, Value};

/// What a [`Converter`] produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// One JSON object per line ([`crate::json`]).
    Json,
    /// An OMSP text stream.
    Text,
    /// An OMSP binary stream.
    Binary,
}

/// Decodes a stream fed in chunks and re-encodes every event.
#[derive(Debug)]
pub struct Converter {
    /// The input's decoder.
    decoder: Decoder,
    /// The encoder of OMSP output (`None`: JSON lines).
    encoder: Option<Encoder>,
    /// Problems reported so far.
    errors: u64,
}

impl Converter {
    /// A converter producing `output`.
    pub fn new(output: Output) -> Converter {
        Converter {
            decoder: Decoder::new(),
            encoder: match output {
                Output::Json => None,
                Output::Text => Some(Encoder::new(Content::Text)),
                Output::Binary => Some(Encoder::new(Content::Binary)),
            },
            errors: 0,
        }
    }

    /// Decodes `bytes`, appending the output to `out`; every decoding or
    /// re-encoding problem goes to `on_error` (with its byte offset or
    /// sample), and what can be converted still is.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<u8>, on_error: impl FnMut(String)) {
        self.decoder.feed(bytes);
        self.drain(out, on_error);
    }

    /// Ends the input (a truncated last line or packet is a problem).
    pub fn finish(&mut self, out: &mut Vec<u8>, on_error: impl FnMut(String)) {
        self.decoder.finish();
        self.drain(out, on_error);
    }

    /// Problems reported so far.
    pub fn errors(&self) -> u64 {
        self.errors
    }

    fn drain(&mut self, out: &mut Vec<u8>, mut on_error: impl FnMut(String)) {
        while let Some(ev) = self.decoder.next_event() {
            let problem = match ev {
                Ok(ev) => emit(self.encoder.as_mut(), &self.decoder, &ev, out).err(),
                Err(e) => Some(e.to_string()),
            };
            if let Some(p) = problem {
                self.errors += 1;
                on_error(p);
            }
        }
    }
}

/// Writes one event; `Err` is a problem re-encoding it.
fn emit(
    encoder: Option<&mut Encoder>,
    decoder: &Decoder,
    ev: &Event,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let Some(enc) = encoder else {
        let line = match ev {
            Event::Header(h) => json::header(h),
            Event::Schema(s) => json::schema(s),
            Event::Sample(s) => json::sample(s, decoder.schema(s.stream).map(|x| x.name.as_str())),
        };
        out.extend_from_slice(line.to_string().as_bytes());
        out.push(b'\n');
        return Ok(());
    };
    match ev {
        Event::Header(h) => enc.header(h, out),
        Event::Schema(_) => {}
        Event::Sample(s) => {
            let values = s.values.iter().map(Value::as_value_ref);
            let mark = out.len();
            if let Err(e) = enc.tuple(out, s.stream, s.seq, s.ts, values) {
                out.truncate(mark);
                return Err(format!(
                    "stream {} seq {}: cannot re-encode: {e}",
                    s.stream, s.seq
                ));
            }
        }
    }
    Ok(())
}
