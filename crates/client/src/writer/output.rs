//! The writer's side of one destination: its streams, its encoder, and the
//! chunk being filled.

use std::sync::Arc;
use std::time::Duration;

use omsp::{EncodeError, Encoder, Schema, Value, ValueRef};

use crate::queue::dest::{
    slot_of_mp, Admission, Chunk, DestQueue, SLOT_CLOCK, SLOT_INSTR, SLOT_SCHEMA0,
};
use crate::record::Parsed;
use crate::spec::{Encoding, OverloadPolicy};
use crate::stream::{Step, Stream};

/// Longest string a binary tuple carries (what a stock server reads safely).
const MAX_BINARY_STRING: usize = 254;

/// Largest chunk handed over at once.
const MAX_CHUNK: usize = 64 << 10;

/// One destination, as the writer sees it.
#[derive(Debug)]
pub(crate) struct Output {
    /// Hands chunks to the sender.
    pub(crate) queue: Arc<DestQueue>,
    /// This destination's encoder (binary remembers long packets).
    encoder: Encoder,
    /// Binary strings are cut to 254 bytes.
    binary: bool,
    /// The overload policy.
    policy: OverloadPolicy,
    /// The chunk being filled.
    chunk: Chunk,
    /// Hand the chunk over once it holds this many bytes.
    flush_at: usize,
    /// Bytes queued at the last hand-over (the sender only lowers it).
    queued: usize,
    /// The destination's streams.
    pub(crate) streams: Vec<Stream>,
    /// Last schema-0 sequence number.
    seq0: i64,
    /// Added to every stream's sequence numbers (`Options::first_seq` − 1).
    pub(crate) seq_base: i64,
    /// Last `_client_instrumentation` sequence number.
    instr_seq: i64,
    /// Whether `_client_instrumentation` goes here.
    pub(crate) instrumentation: bool,
    /// Its window, when `--oml-samples`/`--oml-interval` (or a stream
    /// naming it) aggregate it as liboml2 does.
    pub(crate) instr_window: Option<crate::instr_window::InstrWindow>,
    /// Index of `_client_clock` if it goes here (TCP destinations).
    pub(crate) clock_index: Option<u32>,
    /// Last `_client_clock` sequence number.
    clock_seq: i64,
    /// Drops (drop-newest, encode errors) per slot, not yet added to the queue's counters.
    drops: Vec<(usize, u64)>,
    /// Strings cut since the last hand-over.
    truncated: u64,
    /// The client is closing: blocking waits at most this long.
    pub(crate) closing_limit: Option<Duration>,
    /// For logs.
    label: String,
}

impl Output {
    /// Scalar doubles and timestamps as DOUBLE64_T from now on (spec §3.8:
    /// the sender rewrites them for a receiver that does not confirm).
    pub(crate) fn encode_exact_doubles(&mut self) {
        self.encoder
            .set_doubles(omsp::binary::DoubleEncoding::Exact);
    }

    pub(crate) fn new(
        label: String,
        queue: Arc<DestQueue>,
        encoding: Encoding,
        policy: OverloadPolicy,
        streams: Vec<Stream>,
        instrumentation: bool,
    ) -> Output {
        let flush_at = (queue.budget() / 4).clamp(1, MAX_CHUNK);
        Output {
            encoder: Encoder::new(crate::header::content(encoding)),
            binary: encoding == Encoding::Binary,
            policy,
            chunk: Chunk::default(),
            flush_at,
            queued: 0,
            streams,
            seq0: 0,
            seq_base: 0,
            instr_seq: 0,
            instrumentation,
            instr_window: None,
            clock_index: None,
            clock_seq: 0,
            drops: Vec::new(),
            truncated: 0,
            queue,
            closing_limit: None,
            label,
        }
    }

    /// Feeds one sample to stream `s` and emits what is due.
    pub(crate) fn sample(&mut self, s: usize, rec: &[u8], parsed: &Parsed, ts: f64) {
        let skipped = crate::record::skipped(rec);
        if skipped > 0 {
            self.streams[s].skip(skipped);
        }
        match self.streams[s].sample(rec, parsed, ts) {
            Step::Wait => {}
            Step::EmitSample => {
                let Output {
                    streams,
                    encoder,
                    chunk,
                    binary,
                    truncated,
                    ..
                } = self;
                let st = &mut streams[s];
                let seq = st.next_seq() + self.seq_base;
                let start = chunk.bytes.len();
                let res = encoder.tuple(
                    &mut chunk.bytes,
                    st.schema.index,
                    seq,
                    ts,
                    st.pass_columns()
                        .iter()
                        .map(|&c| fit(parsed.value(rec, c), *binary, truncated)),
                );
                let slot = slot_of_mp(st.mp);
                self.after_encode(start, slot, res, s);
            }
            Step::EmitRow => self.emit_row(s, ts),
        }
    }

    /// Encodes stream `s`'s filter row at time `ts`.
    pub(crate) fn emit_row(&mut self, s: usize, ts: f64) {
        let Output {
            streams,
            encoder,
            chunk,
            binary,
            truncated,
            ..
        } = self;
        let st = &mut streams[s];
        let seq = st.next_seq() + self.seq_base;
        let start = chunk.bytes.len();
        let res = encoder.tuple(
            &mut chunk.bytes,
            st.schema.index,
            seq,
            ts,
            st.row()
                .iter()
                .map(|v| fit(v.as_value_ref(), *binary, truncated)),
        );
        let slot = slot_of_mp(st.mp);
        self.after_encode(start, slot, res, s);
    }

    /// Encodes one `_client_instrumentation` tuple.
    pub(crate) fn instrumentation(&mut self, ts: f64, values: &[Value]) {
        let folded;
        let values = match &mut self.instr_window {
            None => values,
            Some(w) => match w.report(ts, values) {
                Some(row) => {
                    folded = row;
                    &folded[..]
                }
                None => return,
            },
        };
        self.instr_seq += 1;
        let start = self.chunk.bytes.len();
        let res = self.encoder.tuple(
            &mut self.chunk.bytes,
            crate::header::INSTR_INDEX,
            self.instr_seq,
            ts,
            values.iter().map(Value::as_value_ref),
        );
        self.after_encode(start, SLOT_INSTR, res, usize::MAX);
    }

    /// Encodes one `_client_clock` tuple, if that stream goes here.
    pub(crate) fn clock(&mut self, ts: f64, values: &[Value]) {
        let Some(index) = self.clock_index else {
            return;
        };
        self.clock_seq += 1;
        let start = self.chunk.bytes.len();
        let res = self.encoder.tuple(
            &mut self.chunk.bytes,
            index,
            self.clock_seq,
            ts,
            values.iter().map(Value::as_value_ref),
        );
        self.after_encode(start, SLOT_CLOCK, res, usize::MAX);
    }

    /// Sends one schema-0 tuple in a chunk of its own (never dropped).
    pub(crate) fn schema0(&mut self, ts: f64, subject: &str, key: &str, value: &str) {
        self.schema0_declaring(ts, subject, key, value, None);
    }

    /// [`Output::schema0`], marking the chunk with the stream it declares.
    fn schema0_declaring(
        &mut self,
        ts: f64,
        subject: &str,
        key: &str,
        value: &str,
        declares: Option<&Schema>,
    ) {
        self.flush();
        self.seq0 += 1;
        let start = self.chunk.bytes.len();
        let mut t = 0;
        let values = [subject, key, value].map(|s| fit(ValueRef::String(s), self.binary, &mut t));
        self.truncated += t;
        match self
            .encoder
            .tuple(&mut self.chunk.bytes, 0, self.seq0, ts, values)
        {
            Ok(()) => {
                self.chunk.record(start, SLOT_SCHEMA0);
                self.chunk.pinned = true;
                self.chunk.declares = declares.cloned();
                let c = std::mem::take(&mut self.chunk);
                self.chunk = self.queue.push(c, Admission::Always);
            }
            Err(e) => {
                tracing::error!(destination = %self.label, error = %e, "cannot encode metadata");
                self.chunk.bytes.truncate(start);
                self.count_drop(SLOT_SCHEMA0);
            }
        }
    }

    /// Declares a stream added after start (schema 0, subject `.`, key `schema`).
    pub(crate) fn declare(&mut self, ts: f64, schema: &Schema) {
        let text = crate::layout::declaration(schema);
        self.schema0_declaring(
            ts,
            omsp::metadata::ROOT_SUBJECT,
            omsp::metadata::SCHEMA_KEY,
            &text,
            Some(schema),
        );
    }

    fn after_encode(&mut self, start: usize, slot: usize, res: Result<(), EncodeError>, s: usize) {
        if let Err(e) = res {
            let name = match self.streams.get(s) {
                Some(x) => x.schema.name.as_str(),
                None if slot == SLOT_CLOCK => crate::clock_report::CLOCK_STREAM,
                None => "_client_instrumentation",
            };
            tracing::warn!(stream = name, error = %e, "tuple cannot be encoded; dropped");
            self.chunk.bytes.truncate(start);
            self.count_drop(slot);
            return;
        }
        if let OverloadPolicy::DropNewest = self.policy {
            if self.queued + self.chunk.pending_bytes() > self.queue.budget() {
                self.chunk.bytes.truncate(start);
                self.count_drop(slot);
                return;
            }
        }
        self.chunk.record(start, slot);
        if self.chunk.pending_bytes() >= self.flush_at {
            self.flush();
        }
    }

    fn count_drop(&mut self, slot: usize) {
        match self.drops.iter_mut().find(|(s, _)| *s == slot) {
            Some((_, n)) => *n += 1,
            None => self.drops.push((slot, 1)),
        }
    }

    /// Hands the chunk being filled to the sender.
    pub(crate) fn flush(&mut self) {
        if !self.drops.is_empty() || self.truncated > 0 {
            let drops = std::mem::take(&mut self.drops);
            let truncated = std::mem::take(&mut self.truncated);
            self.queue.with_counters(|c| {
                for (slot, n) in drops {
                    c.slot(slot).emitted += n;
                    c.drop_tuples(slot, n);
                }
                c.truncated += truncated;
            });
        }
        if self.chunk.tuples.is_empty() {
            return;
        }
        let admission = match self.policy {
            OverloadPolicy::DropNewest => Admission::Always,
            OverloadPolicy::DropOldest => Admission::DropOldest,
            OverloadPolicy::Block { stall_limit } => Admission::Block {
                stall: match (stall_limit, self.closing_limit) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                },
            },
        };
        let c = std::mem::take(&mut self.chunk);
        self.chunk = self.queue.push(c, admission);
        self.queued = self.queue.queued();
    }
}

/// Cuts a binary string to 254 bytes at a character boundary, counting it.
fn fit<'a>(v: ValueRef<'a>, binary: bool, truncated: &mut u64) -> ValueRef<'a> {
    match v {
        ValueRef::String(s) if binary && s.len() > MAX_BINARY_STRING => {
            *truncated += 1;
            let mut end = MAX_BINARY_STRING;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            ValueRef::String(&s[..end])
        }
        v => v,
    }
}
