//! Tuple boundaries of a client stream, found with the omsp decoder.
//!
//! The journal holds only whole tuples: the accept side appends a client's
//! bytes up to the last boundary the decoder has passed, and recovery keeps
//! a journal's unrecorded tail only up to its last complete tuple. Both
//! use this wrapper, so the protocol is parsed in one place (the codec).

use omsp::{DecodeError, Decoder, Event, Limits};

use crate::journal::schemas::Declaration;

/// A decoder positioned after a header, reporting data offsets.
#[derive(Debug)]
pub struct Framer {
    /// The codec.
    decoder: Decoder,
    /// Decoder offset of the first data byte (the header's length).
    header_len: u64,
    /// Data offset of the first data byte fed after the header.
    base: u64,
    /// Whether bytes the decoder rejected (malformed lines, garbage) count
    /// as consumed: yes on the accept side (they are journaled verbatim,
    /// the upstream rejects them the same way), no in recovery (a torn
    /// write must not be kept).
    errors_consume: bool,
}

/// What one [`Framer::drain`] found.
#[derive(Debug, Default)]
pub struct Frames {
    /// Data offset just after the last whole tuple (or consumed run).
    pub boundary: u64,
    /// Streams declared through schema 0 in the drained tuples.
    pub declarations: Vec<Declaration>,
    /// Tuples seen.
    pub tuples: u64,
    /// Non-fatal decode errors seen (logged by the caller).
    pub errors: Vec<DecodeError>,
}

impl Framer {
    /// Wraps a decoder that has just returned the header; `base` is the data
    /// offset of the next byte it will be fed.
    pub fn after_header(decoder: Decoder, base: u64, errors_consume: bool) -> Framer {
        Framer {
            header_len: decoder.offset(),
            decoder,
            base,
            errors_consume,
        }
    }

    /// A framer primed with a complete header (as bytes).
    pub fn with_header(
        limits: Limits,
        header: &[u8],
        base: u64,
        errors_consume: bool,
    ) -> Result<Framer, String> {
        let mut d = Decoder::with_limits(limits);
        d.feed(header);
        match d.next_event() {
            Some(Ok(Event::Header(_))) => Ok(Framer::after_header(d, base, errors_consume)),
            Some(Err(e)) => Err(e.to_string()),
            _ => Err("incomplete header".into()),
        }
    }

    /// Data offset of the next byte to decode.
    pub fn offset(&self) -> u64 {
        self.base + (self.decoder.offset() - self.header_len)
    }

    /// Feeds data bytes.
    pub fn feed(&mut self, data: &[u8]) {
        self.decoder.feed(data);
    }

    /// Marks the end of input.
    pub fn finish(&mut self) {
        self.decoder.finish();
    }

    /// Decodes what was fed; `frames.boundary` moves past each whole tuple.
    /// A fatal error (the stream cannot go on) is returned after the
    /// boundary has been updated up to it.
    pub fn drain(&mut self, frames: &mut Frames) -> Result<(), DecodeError> {
        while let Some(event) = self.decoder.next_event() {
            match event {
                Ok(Event::Sample(_)) => {
                    frames.tuples += 1;
                    frames.boundary = self.offset();
                }
                Ok(Event::Schema(s)) => frames.declarations.push(Declaration {
                    end: self.offset(),
                    schema: (*s).clone(),
                }),
                Ok(Event::Header(_)) => {}
                Err(e) if e.is_fatal() => return Err(e),
                Err(e) => {
                    if self.errors_consume {
                        frames.boundary = self.offset();
                    }
                    frames.errors.push(e);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_and_declarations() {
        let header = b"protocol: 5\nschema: 0 _experiment_metadata subject:string key:string value:string\nschema: 1 a_b x:int32\ncontent: text\n\n";
        let mut f = Framer::with_header(Limits::default(), header, 100, false).unwrap();
        let data = b"0.1\t1\t1\t5\n0.2\t0\t1\t.\tschema\t2 a_c y:int32\n0.3\t2\t1\t7\n0.4\t1\t2\t";
        f.feed(data);
        let mut fr = Frames::default();
        f.drain(&mut fr).unwrap();
        let whole = data.len() - b"0.4\t1\t2\t".len();
        assert_eq!(fr.boundary, 100 + whole as u64);
        assert_eq!(fr.tuples, 3);
        assert_eq!(fr.declarations.len(), 1);
        assert_eq!(fr.declarations[0].schema.index, 2);
        let decl_end = b"0.1\t1\t1\t5\n0.2\t0\t1\t.\tschema\t2 a_c y:int32\n".len() as u64;
        assert_eq!(fr.declarations[0].end, 100 + decl_end);
        f.finish();
        assert!(f.drain(&mut fr).is_err());
        assert_eq!(fr.boundary, 100 + whole as u64);
    }
}
