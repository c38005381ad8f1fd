//! One encoder for either content type.

use crate::binary::BinaryEncoder;
use crate::error::EncodeError;
use crate::header::{Content, Header};
use crate::value::ValueRef;

/// Encodes a session (header, then tuples) in text or binary.
#[derive(Debug, Clone)]
pub struct Encoder {
    content: Content,
    binary: BinaryEncoder,
}

impl Encoder {
    /// An encoder producing `content`.
    pub fn new(content: Content) -> Encoder {
        Encoder {
            content,
            binary: BinaryEncoder::new(),
        }
    }

    /// The content type produced.
    pub fn content(&self) -> Content {
        self.content
    }

    /// How binary scalar doubles are written from now on (text doubles are
    /// always exact).
    pub fn set_doubles(&mut self, doubles: crate::binary::DoubleEncoding) {
        self.binary.set_doubles(doubles);
    }

    /// Writes `header` with its `content` line set to this encoder's.
    pub fn header(&self, header: &Header, out: &mut Vec<u8>) {
        if header.content == self.content {
            header.write(out);
        } else {
            Header {
                content: self.content,
                ..header.clone()
            }
            .write(out);
        }
    }

    /// Writes one tuple.
    pub fn tuple<'a, I>(
        &mut self,
        out: &mut Vec<u8>,
        index: u32,
        seq: i64,
        ts: f64,
        values: I,
    ) -> Result<(), EncodeError>
    where
        I: IntoIterator<Item = ValueRef<'a>>,
        I::IntoIter: ExactSizeIterator,
    {
        match self.content {
            Content::Text => crate::text::encode_tuple(out, index, seq, ts, values),
            Content::Binary => self.binary.encode_tuple(out, index, seq, ts, values),
        }
    }
}
