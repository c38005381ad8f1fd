//! The writer thread: drains the per-thread rings, runs streams and
//! filters, encodes, and hands chunks to the destinations' senders.
//!
//! One writer per client assigns every sequence number, in emit order, so
//! each stream's sequence numbers always increase whatever the number of
//! injecting threads. Rows of one thread keep their inject order; rows of
//! different threads interleave in the order the writer takes them.
//!
//! The writer never waits for I/O except through a blocking destination's
//! queue (the overload policy asking for back-pressure). When there is
//! nothing to do it sleeps 1 ms, doubling up to 20 ms while it stays idle,
//! and less when an interval window or a report is due; a thread that finds
//! its ring full wakes it.

mod feedback;
pub(crate) mod output;

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::client::{Clock, Control, Shared};
use crate::clock_report::ClockReport;
use crate::instrumentation::Instrumentation;
use crate::mp::MpDef;
use crate::queue::ring::{lock, RingReader};
use crate::record::{self, Parsed};
use crate::stream::Step;
use output::Output;

/// Shortest idle sleep.
const IDLE_MIN: Duration = Duration::from_millis(1);
/// Longest idle sleep.
const IDLE_MAX: Duration = Duration::from_millis(20);
/// Below this many bytes per round, the writer pauses before the next one.
const BATCH: usize = 64 << 10;
/// That pause.
const BATCH_WAIT: Duration = Duration::from_micros(200);

/// The writer's state.
pub(crate) struct Writer {
    shared: Arc<Shared>,
    clock: Clock,
    /// One per destination.
    outputs: Vec<Output>,
    /// Per MP id: the (output, stream) pairs its samples feed.
    routes: Vec<Vec<(usize, usize)>>,
    /// Per MP id.
    mps: Vec<Arc<MpDef>>,
    /// Samples taken per MP id (published to [`MpDef::taken`]).
    taken: Vec<u64>,
    /// The per-thread rings.
    rings: Vec<RingReader>,
    /// Records taken from one ring (reused).
    batch: Vec<u8>,
    /// The record being processed (reused).
    parsed: Parsed,
    /// Sender threads, joined at close.
    senders: Vec<JoinHandle<()>>,
    /// `_client_instrumentation`, if reported anywhere.
    instr: Option<Instrumentation>,
    /// `_client_clock`, if reported anywhere.
    clock_report: Option<ClockReport>,
}

impl Writer {
    pub(crate) fn new(
        shared: Arc<Shared>,
        clock: Clock,
        outputs: Vec<Output>,
        mps: Vec<Arc<MpDef>>,
        senders: Vec<JoinHandle<()>>,
        instr: Option<Instrumentation>,
        clock_report: Option<ClockReport>,
    ) -> Writer {
        let mut routes = vec![Vec::new(); mps.len()];
        for (o, out) in outputs.iter().enumerate() {
            for (s, st) in out.streams.iter().enumerate() {
                routes[st.mp as usize].push((o, s));
            }
        }
        Writer {
            taken: vec![0; mps.len()],
            shared,
            clock,
            outputs,
            routes,
            mps,
            rings: Vec::new(),
            batch: Vec::new(),
            parsed: Parsed::default(),
            senders,
            instr,
            clock_report,
        }
    }

    /// The thread's body: runs until the client closes, then flushes.
    pub(crate) fn run(mut self) {
        let now = self.clock.now();
        for out in &mut self.outputs {
            for st in &mut out.streams {
                st.start_clock(now);
            }
        }
        // The clock's state goes first, so the server's estimate of the
        // offset between the clocks is taken from a fresh timestamp.
        if let Some(c) = &mut self.clock_report {
            c.tick(now, &mut self.outputs);
        }
        let mut idle = IDLE_MIN;
        loop {
            let closing = self.shared.is_closed();
            if closing {
                let limit = Some(self.shared.options.close_timeout);
                for out in &mut self.outputs {
                    out.closing_limit = limit;
                }
            }
            self.news_first();
            for out in &mut self.outputs {
                for msg in out.queue.take_controls() {
                    feedback::handle(out, &msg, self.clock.now());
                }
            }
            self.rings.extend(
                self.shared
                    .rings
                    .take_new()
                    .into_iter()
                    .map(RingReader::new),
            );
            let moved = self.drain();
            let now = self.clock.now();
            self.timers(now);
            for out in &mut self.outputs {
                out.flush();
            }
            if closing && moved == 0 {
                break;
            }
            if moved >= BATCH {
                idle = IDLE_MIN;
                continue;
            }
            if moved > 0 {
                // Let records accumulate: draining a ring while its thread
                // writes the same cache lines slows that thread down.
                idle = IDLE_MIN;
                std::thread::park_timeout(BATCH_WAIT);
                continue;
            }
            let until_timer = self
                .next_timer()
                .map(|t| Duration::from_secs_f64((t - now).max(0.0)));
            std::thread::park_timeout(until_timer.map_or(idle, |t| t.min(idle)));
            idle = (idle * 2).min(IDLE_MAX);
        }
        self.finish();
    }

    /// Processes every record in every ring; returns the bytes taken.
    fn drain(&mut self) -> usize {
        let mut moved = 0;
        let mut batch = std::mem::take(&mut self.batch);
        for i in 0..self.rings.len() {
            batch.clear();
            moved += self.rings[i].drain_into(&mut batch);
            // Metadata and measurement points declared before these
            // records were written go out before them.
            self.news_first();
            let mut at = 0;
            while at + record::HEADER_LEN <= batch.len() {
                let len = record::len(&batch[at..]);
                if len < record::HEADER_LEN || at + len > batch.len() {
                    tracing::error!(len, "malformed queue record; rest of the batch skipped");
                    break;
                }
                self.process(&batch[at..at + len]);
                at += len;
            }
        }
        self.batch = batch;
        let mut i = 0;
        while i < self.rings.len() {
            if self.rings[i].is_finished() {
                let r = self.rings.swap_remove(i);
                self.shared.memory.free(r.capacity());
            } else {
                i += 1;
            }
        }
        if moved > 0 {
            for (mp, &n) in self.mps.iter().zip(&self.taken) {
                mp.taken.store(n, Relaxed);
            }
        }
        moved
    }

    /// Routes one sample to its streams.
    fn process(&mut self, rec: &[u8]) {
        let mp = record::mp(rec) as usize;
        let ts = self.clock.seconds(record::ts(rec));
        if mp >= self.mps.len() {
            // Added after start, and injected before this loop saw it.
            self.take_news(ts);
            if mp >= self.mps.len() {
                tracing::error!(mp, "sample for an unknown measurement point; skipped");
                return;
            }
        }
        let Writer {
            mps,
            routes,
            outputs,
            parsed,
            taken,
            instr,
            ..
        } = self;
        parsed.parse(rec, &mps[mp].types);
        taken[mp] += 1;
        for &(o, s) in &routes[mp] {
            outputs[o].sample(s, rec, parsed, ts);
        }
        if let Some(i) = instr {
            if i.sampled(ts) {
                mps[mp].taken.store(taken[mp], Relaxed);
                i.report(ts, outputs, mps, &self.shared.memory);
            }
        }
    }

    /// Takes late measurement points and metadata, if any were declared
    /// since the last look. Called again after each ring is drained: a
    /// record read there was written after the declarations made before
    /// it (the ring's release/acquire orders them), so they are seen here
    /// and sent ahead of it, never after.
    fn news_first(&mut self) {
        if self.shared.news.load(Acquire) && self.shared.news.swap(false, AcqRel) {
            self.take_news(self.clock.now());
        }
    }

    /// Late measurement points (declared through schema 0) and metadata.
    fn take_news(&mut self, now: f64) {
        let late = std::mem::take(&mut lock(&self.shared.registry).late);
        for (mp, streams) in late {
            if mp.id as usize != self.mps.len() {
                tracing::error!(mp = %mp.name, "measurement point out of order; skipped");
                continue;
            }
            self.mps.push(mp);
            self.taken.push(0);
            let mut route = Vec::new();
            for (o, mut st) in streams {
                let out = &mut self.outputs[o];
                out.declare(now, &st.schema);
                st.start_clock(now);
                route.push((o, out.streams.len()));
                out.streams.push(st);
            }
            self.routes.push(route);
        }
        let control = std::mem::take(&mut *lock(&self.shared.control));
        for Control::Metadata {
            subject,
            key,
            value,
            ts,
        } in control
        {
            for out in &mut self.outputs {
                out.schema0(ts.unwrap_or(now), &subject, &key, &value);
            }
        }
    }

    /// Interval windows and instrumentation reports that are due.
    fn timers(&mut self, now: f64) {
        for out in &mut self.outputs {
            for s in 0..out.streams.len() {
                if out.streams[s].tick(now) == Step::EmitRow {
                    out.emit_row(s, now);
                }
            }
        }
        if let Some(i) = &mut self.instr {
            i.tick(now, &mut self.outputs, &self.mps, &self.shared.memory);
        }
        if let Some(c) = &mut self.clock_report {
            c.tick(now, &mut self.outputs);
        }
    }

    /// The earliest interval window end or report, in client time.
    fn next_timer(&self) -> Option<f64> {
        let streams = self
            .outputs
            .iter()
            .flat_map(|o| o.streams.iter().filter_map(|s| s.due()));
        streams
            .chain(self.instr.as_ref().and_then(Instrumentation::next))
            .chain(self.clock_report.as_ref().and_then(ClockReport::next))
            .min_by(f64::total_cmp)
    }

    /// At close: partial windows, a last report, then the senders finish.
    fn finish(mut self) {
        let now = self.clock.now();
        for out in &mut self.outputs {
            for s in 0..out.streams.len() {
                if out.streams[s].flush(now) == Step::EmitRow {
                    out.emit_row(s, now);
                }
            }
        }
        if let Some(mut i) = self.instr.take() {
            i.report(now, &mut self.outputs, &self.mps, &self.shared.memory);
        }
        for out in &mut self.outputs {
            out.flush();
            out.queue.close();
        }
        for h in self.senders.drain(..) {
            if h.join().is_err() {
                tracing::error!("a sender thread panicked");
            }
        }
        for out in &self.outputs {
            out.queue.release();
        }
        for r in self.rings.drain(..) {
            self.shared.memory.free(r.capacity());
        }
    }
}
