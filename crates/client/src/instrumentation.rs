//! `_client_instrumentation`: the client's own health, as a stream.
//!
//! One tuple per destination that reports it, with liboml2's fields:
//!
//! | field | meaning here |
//! |---|---|
//! | `measurements_injected:uint32` | samples accepted by `inject` so far, all measurement points (cumulative, wraps at 2^32) |
//! | `measurements_dropped:uint32` | samples or tuples lost since the previous report: this destination's queue drops, plus samples dropped at inject (full per-thread ring), which every destination misses |
//! | `bytes_allocated:uint64` | bytes of queue memory (per-thread rings, destination chunks) allocated so far |
//! | `bytes_freed:uint64` | bytes of queue memory released so far |
//! | `bytes_in_use:uint64` | bytes of queue memory held now |
//! | `bytes_max:uint64` | most bytes of queue memory held at once |
//!
//! The first report directly follows the tuples of the first sample (as
//! liboml2's first report comes with the first inject), later ones every
//! `instr_interval`, driven by the writer's clock rather than by injects,
//! and a last one at close so that the totals are complete. As in liboml2,
//! `--oml-samples`/`--oml-interval` (or a configured stream naming it)
//! average the reports (`crate::instr_window`).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use omsp::Value;

use crate::mp::MpDef;
use crate::queue::Memory;
use crate::writer::output::Output;

/// When to report, and what was reported last.
#[derive(Debug)]
pub(crate) struct Instrumentation {
    /// Seconds between reports.
    interval: f64,
    /// Client time of the next report; `None` until the first sample.
    next: Option<f64>,
    /// Inject drops already reported.
    inject_drops_seen: u64,
}

impl Instrumentation {
    pub(crate) fn new(interval: Duration) -> Instrumentation {
        Instrumentation {
            interval: interval.as_secs_f64(),
            next: None,
            inject_drops_seen: 0,
        }
    }

    /// A sample was taken at `now`; true for the first one, which is
    /// reported right after its own tuple (as liboml2 does).
    pub(crate) fn sampled(&mut self, now: f64) -> bool {
        if self.next.is_none() {
            self.next = Some(now + self.interval);
            true
        } else {
            false
        }
    }

    /// Client time of the next report, if one is scheduled.
    pub(crate) fn next(&self) -> Option<f64> {
        self.next
    }

    /// Reports if one is due at `now`.
    pub(crate) fn tick(
        &mut self,
        now: f64,
        outputs: &mut [Output],
        mps: &[Arc<MpDef>],
        mem: &Memory,
    ) {
        if self.next.is_some_and(|t| now >= t) {
            self.report(now, outputs, mps, mem);
            self.next = Some(now + self.interval);
        }
    }

    /// Writes one report to every destination that takes it.
    pub(crate) fn report(
        &mut self,
        now: f64,
        outputs: &mut [Output],
        mps: &[Arc<MpDef>],
        mem: &Memory,
    ) {
        let taken: u64 = mps.iter().map(|m| m.taken.load(Relaxed)).sum();
        let inject_drops: u64 = mps.iter().map(|m| m.dropped.load(Relaxed)).sum();
        let new_inject_drops = inject_drops - self.inject_drops_seen;
        self.inject_drops_seen = inject_drops;
        let m = mem.stats();
        for out in outputs.iter_mut().filter(|o| o.instrumentation) {
            // Drops counted by the writer reach the queue's counters here.
            out.flush();
            let dropped = out.queue.take_dropped_since_report() + new_inject_drops;
            let values = [
                Value::UInt32((taken + inject_drops) as u32),
                Value::UInt32(dropped as u32),
                Value::UInt64(m.allocated),
                Value::UInt64(m.freed),
                Value::UInt64(m.in_use),
                Value::UInt64(m.max),
            ];
            out.instrumentation(now, &values);
        }
    }
}
