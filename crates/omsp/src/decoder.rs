//! The streaming decoder: bytes in, header, schemas and samples out.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::binary::codes::{LONG_HEADER_LEN, PACKET_LONG, PACKET_SHORT, SHORT_HEADER_LEN, SYNC};
use crate::binary::decode::decode_body;
use crate::error::{DecodeError, ErrorKind};
use crate::header::{strip_cr, Content, Header, HeaderBuilder, HeaderError, HeaderLimits};
use crate::metadata::{MetadataColumns, ROOT_SUBJECT, SCHEMA_KEY};
use crate::sample::Sample;
use crate::schema::Schema;
use crate::table::SchemaTable;
use crate::text::decode::decode_line;
use crate::value::Value;

/// Bounds that keep a decoder's memory finite whatever its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest header or text line, LF excluded.
    pub max_line: usize,
    /// Largest binary packet body.
    pub max_packet: usize,
    /// Highest schema index a session may declare.
    pub max_index: u32,
    /// Most fields in one schema.
    pub max_fields: usize,
    /// Largest connection header, in bytes (its lines and LFs, the final
    /// empty line included).
    pub max_header: usize,
    /// Most lines in a connection header.
    pub max_header_lines: usize,
    /// Most unknown (extension) keys in a connection header.
    pub max_extra_keys: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_line: 1 << 20,
            max_packet: 16 << 20,
            max_index: 4095,
            max_fields: 4096,
            max_header: 4 << 20,
            max_header_lines: 8192,
            max_extra_keys: 256,
        }
    }
}

impl Limits {
    /// The bounds a connection header is held to.
    pub fn header(&self) -> HeaderLimits {
        HeaderLimits {
            max_fields: self.max_fields,
            max_lines: self.max_header_lines,
            max_schemas: usize::try_from(self.max_index)
                .map_or(usize::MAX, |i| i.saturating_add(1)),
            max_extra_keys: self.max_extra_keys,
        }
    }
}

/// What the decoder found.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The connection header (always the first event).
    Header(Header),
    /// A stream declared after the header through schema 0. The declaring
    /// metadata tuple follows as a [`Event::Sample`] of stream 0, so that a
    /// re-encoder passes the declaration on; a store should not keep that
    /// tuple as metadata.
    Schema(Arc<Schema>),
    /// A tuple.
    Sample(Sample),
}

#[derive(Debug)]
enum Phase {
    Header(HeaderBuilder),
    Body(Content),
    Done,
}

/// Input buffer capacity a decoder keeps once its input is decoded; a
/// larger buffer (left by a large packet or line) is given back.
pub const KEPT_CAPACITY: usize = 64 * 1024;

/// Sans-I/O OMSP decoder. Feed it bytes in chunks of any size, then call
/// [`Decoder::next_event`] until it returns `None`; call
/// [`Decoder::finish`] at end of input to flush a final unterminated line and
/// learn about truncation.
///
/// Errors come back in line with the events, each with the stream offset it
/// concerns. After a fatal one ([`DecodeError::is_fatal`]) the decoder yields
/// nothing more; after any other, only that line, packet or byte run is lost.
///
/// ```
/// use omsp::{Decoder, Event};
/// let mut d = Decoder::new();
/// d.feed(b"protocol: 5\nschema: 1 app_mp x:int32\ncontent: text\n\n0.5\t1\t1\t42\n");
/// assert!(matches!(d.next_event(), Some(Ok(Event::Header(_)))));
/// let Some(Ok(Event::Sample(s))) = d.next_event() else { panic!() };
/// assert_eq!(s.values, vec![omsp::Value::Int32(42)]);
/// assert!(d.next_event().is_none());
/// ```
#[derive(Debug)]
pub struct Decoder {
    limits: Limits,
    buf: Vec<u8>,
    /// Read position in `buf`.
    pos: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    phase: Phase,
    table: SchemaTable,
    header: Option<Header>,
    pending: VecDeque<Event>,
    eof: bool,
    /// A text line over the limit is being skipped up to its LF.
    skipping_line: bool,
    /// Garbage run not yet reported: (stream offset, length).
    garbage: Option<(u64, u64)>,
    /// Stream offset up to which the bytes from the read position on are
    /// known to hold no LF, so that a line arriving in many small chunks is
    /// scanned once rather than once per chunk.
    no_lf_until: u64,
    /// Text values read the lenient way the reference reads them.
    lenient: crate::text::Leniency,
}

impl Default for Decoder {
    fn default() -> Decoder {
        Decoder::with_limits(Limits::default())
    }
}

impl Decoder {
    /// A decoder with default limits.
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// A decoder with the given limits.
    pub fn with_limits(limits: Limits) -> Decoder {
        Decoder {
            limits,
            buf: Vec::new(),
            pos: 0,
            base: 0,
            phase: Phase::Header(HeaderBuilder::with_limits(limits.header())),
            table: SchemaTable::new(limits.max_index),
            header: None,
            pending: VecDeque::new(),
            eof: false,
            skipping_line: false,
            garbage: None,
            no_lf_until: 0,
            lenient: crate::text::Leniency::default(),
        }
    }

    /// How many text values were read leniently, as the reference reads
    /// them (booleans like `yes`, values cut at a NUL byte), so far.
    pub fn lenient(&self) -> crate::text::Leniency {
        self.lenient
    }

    /// Appends input bytes. Once decoding is over (after a fatal error, or
    /// once `finish` has been drained) further input is ignored, so a caller
    /// that keeps feeding does not make the buffer grow without bound.
    pub fn feed(&mut self, data: &[u8]) {
        if let Phase::Done = self.phase {
            return;
        }
        if self.pos > 0 && (self.pos >= self.buf.len() / 2 || self.pos >= 1 << 16) {
            self.buf.drain(..self.pos);
            self.base += self.pos as u64;
            self.pos = 0;
        }
        // Room grows with what arrives (never with what a packet header
        // declares), and what a large packet or line left is given back.
        let need = self.buf.len() + data.len();
        if self.buf.capacity() > KEPT_CAPACITY.max(2 * need) {
            self.buf.shrink_to(need);
        }
        self.buf.extend_from_slice(data);
    }

    /// Bytes the input buffer holds room for: about what is buffered, and
    /// at most [`KEPT_CAPACITY`] once it has been decoded.
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Once everything fed has been decoded, gives back a buffer that a
    /// large packet or line made larger than [`KEPT_CAPACITY`].
    fn release_decoded(&mut self) {
        if self.pos == self.buf.len() && self.buf.capacity() > KEPT_CAPACITY {
            self.base += self.pos as u64;
            self.pos = 0;
            self.buf = Vec::new();
        }
    }

    /// Marks the end of input: an unfinished header, text line or packet is
    /// then reported by `next_event` (as [`ErrorKind::Truncated`]).
    pub fn finish(&mut self) {
        self.eof = true;
    }

    /// Bytes fed but not yet decoded.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Stream offset of the next byte to decode.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// The header, once decoded.
    pub fn header(&self) -> Option<&Header> {
        self.header.as_ref()
    }

    /// While the header is being read: the header so far (its complete
    /// lines), so that a server can check what decides early (such as an
    /// authentication token) without waiting for the end of the header.
    pub fn partial_header(&self) -> Option<&Header> {
        match &self.phase {
            Phase::Header(b) => Some(b.partial()),
            _ => None,
        }
    }

    /// The schema currently bound to `index`.
    pub fn schema(&self, index: u32) -> Option<&Arc<Schema>> {
        self.table.lookup(index)
    }

    /// True once a fatal error or the end of input has been reached.
    pub fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done) && self.pending.is_empty()
    }

    /// The next event or error; `None` when more input is needed (or, after
    /// [`finish`](Decoder::finish), when everything has been decoded).
    pub fn next_event(&mut self) -> Option<Result<Event, DecodeError>> {
        if let Some(ev) = self.pending.pop_front() {
            return Some(Ok(ev));
        }
        let event = match self.phase {
            Phase::Header(_) => self.header_step(),
            Phase::Body(Content::Text) => self.text_step(),
            Phase::Body(Content::Binary) => self.binary_step(),
            Phase::Done => None,
        };
        if event.is_none() {
            self.release_decoded();
        }
        event
    }

    fn err(&self, offset: u64, kind: ErrorKind) -> Option<Result<Event, DecodeError>> {
        Some(Err(DecodeError { offset, kind }))
    }

    fn fatal(&mut self, offset: u64, kind: ErrorKind) -> Option<Result<Event, DecodeError>> {
        self.phase = Phase::Done;
        self.err(offset, kind)
    }

    /// Position (from the read position) of the next LF, resuming the
    /// search where the previous unsuccessful one stopped.
    fn find_lf(&mut self) -> Option<usize> {
        let avail = &self.buf[self.pos..];
        // Bytes are never changed once fed, and the read position only moves
        // past an LF or to the end of the buffer, so the skipped bytes still
        // hold no LF.
        let skip = usize::try_from(self.no_lf_until.saturating_sub(self.offset()))
            .unwrap_or(usize::MAX)
            .min(avail.len());
        match memchr::memchr(b'\n', &avail[skip..]) {
            Some(i) => Some(skip + i),
            None => {
                self.no_lf_until = self.offset() + avail.len() as u64;
                None
            }
        }
    }

    fn header_step(&mut self) -> Option<Result<Event, DecodeError>> {
        loop {
            let off = self.offset();
            let lf = self.find_lf();
            let avail = &self.buf[self.pos..];
            // Header bytes so far: the lines taken, then this line with its
            // LF (or all that is buffered of it).
            let this = lf.map_or(avail.len(), |i| i + 1);
            if off.saturating_add(this as u64) > self.limits.max_header as u64 {
                return self.fatal(
                    off,
                    ErrorKind::Header(HeaderError::TooLarge {
                        max: self.limits.max_header,
                    }),
                );
            }
            let Some(i) = lf else {
                let n = avail.len();
                if n > self.limits.max_line {
                    return self.fatal(
                        off,
                        ErrorKind::Header(HeaderError::LineTooLong {
                            max: self.limits.max_line,
                        }),
                    );
                }
                if self.eof {
                    return self.fatal(
                        off,
                        ErrorKind::Truncated {
                            what: "header",
                            bytes: n,
                        },
                    );
                }
                return None;
            };
            if i > self.limits.max_line {
                return self.fatal(
                    off,
                    ErrorKind::Header(HeaderError::LineTooLong {
                        max: self.limits.max_line,
                    }),
                );
            }
            let line = strip_cr(&avail[..i]);
            let Phase::Header(builder) = &mut self.phase else {
                return None;
            };
            if line.is_empty() {
                self.pos += i + 1;
                let builder = std::mem::take(builder);
                return match builder.finish().and_then(|h| self.bind_header(h)) {
                    Ok(h) => {
                        self.phase = Phase::Body(h.content);
                        self.header = Some(h.clone());
                        Some(Ok(Event::Header(h)))
                    }
                    Err(e) => self.fatal(off, ErrorKind::Header(e)),
                };
            }
            let res = builder.line(line);
            self.pos += i + 1;
            if let Err(e) = res {
                return self.fatal(off, ErrorKind::Header(e));
            }
        }
    }

    fn bind_header(&mut self, h: Header) -> Result<Header, HeaderError> {
        for s in &h.schemas {
            self.table
                .bind(s.clone())
                .map_err(|source| HeaderError::BadSchema {
                    line: s.to_string(),
                    source,
                })?;
        }
        Ok(h)
    }

    fn text_step(&mut self) -> Option<Result<Event, DecodeError>> {
        loop {
            let off = self.offset();
            let lf = self.find_lf();
            let avail = &self.buf[self.pos..];
            let (end, next) = match lf {
                Some(i) => (i, i + 1),
                None if self.eof && avail.len() > self.limits.max_line && !self.skipping_line => {
                    // Over the limit: reported as such, as it is when the
                    // input arrives in chunks and the limit is passed before
                    // the end is known (the result must not depend on chunking).
                    self.pos = self.buf.len();
                    self.phase = Phase::Done;
                    return self.err(
                        off,
                        ErrorKind::LineTooLong {
                            max: self.limits.max_line,
                        },
                    );
                }
                None if self.eof && !avail.is_empty() && !self.skipping_line => {
                    // A last line without LF was cut short: its last value may
                    // be incomplete, so it is reported, never guessed at.
                    let bytes = avail.len();
                    self.pos = self.buf.len();
                    return self.fatal(
                        off,
                        ErrorKind::Truncated {
                            what: "line",
                            bytes,
                        },
                    );
                }
                None if self.eof => {
                    self.pos = self.buf.len();
                    self.phase = Phase::Done;
                    return None;
                }
                None => {
                    if avail.len() > self.limits.max_line {
                        self.pos = self.buf.len();
                        if !self.skipping_line {
                            self.skipping_line = true;
                            return self.err(
                                off,
                                ErrorKind::LineTooLong {
                                    max: self.limits.max_line,
                                },
                            );
                        }
                    }
                    return None;
                }
            };
            self.pos += next;
            if std::mem::take(&mut self.skipping_line) {
                continue;
            }
            if end > self.limits.max_line {
                return self.err(
                    off,
                    ErrorKind::LineTooLong {
                        max: self.limits.max_line,
                    },
                );
            }
            let start = self.pos - next;
            let line = strip_cr(&self.buf[start..start + end]);
            if line.is_empty() {
                continue;
            }
            let res = decode_line(line, &mut self.table, &mut self.lenient);
            return Some(self.after_sample(res, off));
        }
    }

    fn binary_step(&mut self) -> Option<Result<Event, DecodeError>> {
        loop {
            let off = self.offset();
            let avail = &self.buf[self.pos..];
            if avail.starts_with(&SYNC) {
                // A garbage run held back while waiting for more input (its
                // last byte was a lone 0xAA, or the input ended inside it)
                // ends here: report it before the frame that follows it.
                if let Some((at, bytes)) = self.garbage.take() {
                    return self.err(at, ErrorKind::Garbage { bytes });
                }
            } else {
                let found = memchr::memmem::find(avail, &SYNC);
                // Keep a last 0xAA: it may be the first half of a sync.
                let skip = found.unwrap_or(if self.eof || avail.last() != Some(&0xAA) {
                    avail.len()
                } else {
                    avail.len() - 1
                });
                if skip > 0 {
                    let g = self.garbage.get_or_insert((off, 0));
                    g.1 += skip as u64;
                    self.pos += skip;
                }
                if found.is_none() && !self.eof {
                    return None;
                }
                if let Some((at, bytes)) = self.garbage.take() {
                    return self.err(at, ErrorKind::Garbage { bytes });
                }
                if found.is_none() {
                    self.phase = Phase::Done;
                    return None;
                }
                continue;
            }
            let (hdr, len) = match avail.get(2) {
                None => return self.wait_packet(off),
                Some(&PACKET_SHORT) if avail.len() >= SHORT_HEADER_LEN => (
                    SHORT_HEADER_LEN,
                    u64::from(u16::from_be_bytes([avail[3], avail[4]])),
                ),
                Some(&PACKET_LONG) if avail.len() >= LONG_HEADER_LEN => (
                    LONG_HEADER_LEN,
                    u64::from(u32::from_be_bytes([avail[3], avail[4], avail[5], avail[6]])),
                ),
                Some(&PACKET_SHORT | &PACKET_LONG) => return self.wait_packet(off),
                Some(&t) => {
                    // Resync one byte on: the second AA may start a real sync.
                    self.pos += 1;
                    return self.err(off, ErrorKind::UnknownPacketType(t));
                }
            };
            if len > self.limits.max_packet as u64 {
                self.pos += 1;
                return self.err(
                    off,
                    ErrorKind::PacketTooLarge {
                        len,
                        max: self.limits.max_packet,
                    },
                );
            }
            let total = hdr + len as usize;
            if avail.len() < total {
                return self.wait_packet(off);
            }
            self.pos += total;
            let res = decode_body(&avail[hdr..total], &mut self.table);
            return Some(self.after_sample(res, off));
        }
    }

    fn wait_packet(&mut self, off: u64) -> Option<Result<Event, DecodeError>> {
        if self.eof {
            let bytes = self.buffered();
            self.pos = self.buf.len();
            return self.fatal(
                off,
                ErrorKind::Truncated {
                    what: "packet",
                    bytes,
                },
            );
        }
        None
    }

    /// Handles schema declarations carried on stream 0.
    fn after_sample(
        &mut self,
        res: Result<Sample, ErrorKind>,
        off: u64,
    ) -> Result<Event, DecodeError> {
        let sample = res.map_err(|kind| DecodeError { offset: off, kind })?;
        if sample.stream == 0 {
            if let Some(decl) = self.schema_declaration(&sample) {
                let schema = Schema::parse_with_limit(decl, self.limits.max_fields)
                    .and_then(|s| self.table.bind(s.clone()).map(|_| s))
                    .map_err(|e| DecodeError {
                        offset: off,
                        kind: ErrorKind::Schema(e),
                    })?;
                let schema = self
                    .table
                    .lookup(schema.index)
                    .cloned()
                    .unwrap_or_else(|| Arc::new(schema));
                self.pending.push_back(Event::Sample(sample));
                return Ok(Event::Schema(schema));
            }
        }
        Ok(Event::Sample(sample))
    }

    fn schema_declaration<'s>(&self, sample: &'s Sample) -> Option<&'s str> {
        let cols = MetadataColumns::of(self.table.lookup(0)?)?;
        let text = |i: usize| match sample.values.get(i) {
            Some(Value::String(s)) => Some(s.as_str()),
            _ => None,
        };
        (text(cols.subject)? == ROOT_SUBJECT && text(cols.key)? == SCHEMA_KEY)
            .then(|| text(cols.value))?
    }

    /// Decodes a complete input at once; returns events and errors in order.
    pub fn decode_all(input: &[u8]) -> Vec<Result<Event, DecodeError>> {
        let mut d = Decoder::new();
        d.feed(input);
        d.finish();
        std::iter::from_fn(|| d.next_event()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_after_a_fatal_error_is_not_buffered() {
        // A caller that keeps feeding after a fatal header error (as a file
        // reader looping over its input does) must not grow the buffer.
        let mut d = Decoder::new();
        d.feed(b"protocol: 9\n");
        let first = d.next_event();
        assert!(
            matches!(first, Some(Err(ref e)) if e.is_fatal()),
            "{first:?}"
        );
        let before = d.buffered();
        for _ in 0..64 {
            d.feed(&[b'x'; 4096]);
            assert!(d.next_event().is_none());
        }
        assert_eq!(d.buffered(), before);
        assert!(d.is_done());
    }

    fn events(d: &mut Decoder) -> Vec<Result<Event, DecodeError>> {
        std::iter::from_fn(|| d.next_event()).collect()
    }

    #[test]
    fn garbage_is_reported_before_the_frame_after_it_whatever_the_chunking() {
        // Found by fuzzing: a garbage run held back across a chunk boundary
        // (here ending in a lone 0xAA) was reported after the next frame,
        // and merged with the next garbage run.
        let mut input = b"protocol: 5\nschema: 1 a x:int32\ncontent: binary\n\n".to_vec();
        let header = input.len();
        let mut enc = crate::Encoder::new(crate::Content::Binary);
        input.extend_from_slice(b"xyz");
        let frame = input.len();
        enc.tuple(&mut input, 1, 1, 0.5, [crate::ValueRef::Int32(7)])
            .unwrap();
        input.extend_from_slice(b"pq");
        let whole = Decoder::decode_all(&input);
        let garbage = |at: usize, bytes: u64| {
            Err(DecodeError {
                offset: at as u64,
                kind: ErrorKind::Garbage { bytes },
            })
        };
        assert_eq!(whole[1], garbage(header, 3));
        assert!(matches!(whole[2], Ok(Event::Sample(_))));
        assert_eq!(whole[3], garbage(input.len() - 2, 2));
        assert_eq!(whole.len(), 4);
        // Split after the first 0xAA of the sync, and after the garbage.
        for split in [frame + 1, frame] {
            let mut d = Decoder::new();
            d.feed(&input[..split]);
            let mut chunked = events(&mut d);
            d.feed(&input[split..]);
            d.finish();
            chunked.extend(events(&mut d));
            assert_eq!(chunked, whole, "split at {split}");
        }
    }

    #[test]
    fn overlong_unterminated_last_line_is_reported_alike_in_any_chunking() {
        // Found by proptest: at the end of input, a last line without LF over
        // the limit came out as Truncated when fed at once but LineTooLong
        // when fed in chunks.
        let limits = Limits {
            max_line: 24,
            ..Limits::default()
        };
        let mut input = b"protocol: 5\nschema: 1 a x:string\n\n".to_vec();
        let at = input.len() as u64;
        input.extend_from_slice(&[b'x'; 40]);
        let expected = [Err(DecodeError {
            offset: at,
            kind: ErrorKind::LineTooLong { max: 24 },
        })];
        for split in [input.len(), input.len() - 30, input.len() - 10] {
            let mut d = Decoder::with_limits(limits);
            d.feed(&input[..split]);
            let mut got = events(&mut d);
            d.feed(&input[split..]);
            d.finish();
            got.extend(events(&mut d));
            assert!(matches!(got[0], Ok(Event::Header(_))));
            assert_eq!(got[1..], expected[..], "split at {split}");
            assert!(d.is_done());
        }
    }

    #[test]
    fn a_line_fed_byte_by_byte_is_scanned_once() {
        // A line of 1 MiB in one-byte chunks: without resuming the LF search
        // each feed rescans the partial line (about 5e11 byte compares).
        let mut d = Decoder::new();
        d.feed(b"protocol: 5\nschema: 1 a x:string\n\n");
        assert!(matches!(d.next_event(), Some(Ok(Event::Header(_)))));
        let start = std::time::Instant::now();
        let mut kinds = Vec::new();
        let line = [&b"0.5\t1\t1\t"[..], &[b'x'; (1 << 20) - 16], b"\n"].concat();
        for b in &line {
            d.feed(std::slice::from_ref(b));
            kinds.extend(events(&mut d).into_iter().map(|e| e.map_err(|e| e.kind)));
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(20));
        assert_eq!(kinds.len(), 1);
        assert!(matches!(kinds[0], Ok(Event::Sample(ref s)) if s.seq == 1));
        // Over the limit: reported once, when the limit is passed.
        for b in [&[b'y'; (1 << 20) + 1][..], b"\n0.5\t1\t2\tok\n"].concat() {
            d.feed(&[b]);
            kinds.extend(events(&mut d).into_iter().map(|e| e.map_err(|e| e.kind)));
        }
        assert_eq!(kinds.len(), 3);
        assert_eq!(kinds[1], Err(ErrorKind::LineTooLong { max: 1 << 20 }));
        assert!(matches!(kinds[2], Ok(Event::Sample(ref s)) if s.seq == 2));
    }

    #[test]
    fn input_after_the_end_is_ignored() {
        let mut d = Decoder::new();
        d.feed(b"protocol: 5\nschema: 1 a x:int32\n\n1\t1\t1\t2\n");
        d.finish();
        assert_eq!(std::iter::from_fn(|| d.next_event()).count(), 2);
        d.feed(b"1\t1\t2\t3\n");
        assert!(d.next_event().is_none());
        assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn room_follows_what_arrived_not_what_a_packet_declares() {
        let mut d = Decoder::with_limits(Limits {
            max_packet: 128 << 20,
            ..Limits::default()
        });
        d.feed(b"protocol: 5\nschema: 1 a x:int32\ncontent: binary\n\n");
        assert!(matches!(d.next_event(), Some(Ok(Event::Header(_)))));
        // A long packet declaring 100 MB, and 10 bytes of it.
        d.feed(&[0xAA, 0xAA, 0x02]);
        d.feed(&100_000_000u32.to_be_bytes());
        d.feed(&[0; 10]);
        assert!(d.next_event().is_none());
        assert!(d.capacity() < 4096, "{} bytes reserved", d.capacity());
        // A 1 MiB packet in 64 KiB chunks, discarded at the end of input:
        // the buffer holds about what arrived, then is given back.
        let mut d = Decoder::new();
        d.feed(b"protocol: 5\nschema: 1 a x:int32\ncontent: binary\n\n");
        assert!(matches!(d.next_event(), Some(Ok(Event::Header(_)))));
        d.feed(&[0xAA, 0xAA, 0x02]);
        d.feed(&(1u32 << 20).to_be_bytes());
        for _ in 0..8 {
            d.feed(&[0; 64 * 1024]);
            assert!(d.next_event().is_none());
            assert!(
                d.capacity() <= 2 * (d.buffered() + 64 * 1024),
                "{}",
                d.capacity()
            );
        }
        d.finish();
        assert!(matches!(d.next_event(), Some(Err(_))));
        assert!(d.next_event().is_none());
        assert!(d.capacity() <= KEPT_CAPACITY, "{} bytes kept", d.capacity());
    }
}
