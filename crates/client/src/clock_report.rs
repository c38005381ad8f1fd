//! `_client_clock`: the synchronisation state of the client's clock, as a
//! stream.
//!
//! | field | meaning |
//! |---|---|
//! | `source:string` | `ptp`, `ntp`, `none` (kernel says unsynchronised) or `unknown` (could not ask) |
//! | `daemon:string` | the time daemon found running (`chronyd`, `phc2sys`, …), empty if none |
//! | `synchronized:int32` | 1 if the kernel's `STA_UNSYNC` flag is clear, else 0 |
//! | `offset:double` | seconds: the offset the daemon last handed to the kernel |
//! | `maxerror:double` | seconds: the kernel's maximum error bound, −1 if unknown |
//! | `esterror:double` | seconds: the kernel's estimated error, −1 if unknown |
//!
//! The first report goes out as soon as the writer starts (it is normally
//! the first tuple a server receives on a connection, so the server's
//! offset estimate is taken from it), later ones every `clock_interval`.
//! Only TCP destinations receive it: it is meant for the collection server
//! (see `docs/clock.md`). The stream's index is the first one after the
//! streams of the measurement points known at start, so the indices of
//! those streams are the ones liboml2 would give.

use std::time::Duration;

use omsp::{Schema, Value};

use crate::clocksync::{self, ClockState};
use crate::writer::output::Output;

/// Name of the stream (and of its table).
pub const CLOCK_STREAM: &str = "_client_clock";

/// The stream's schema at `index`.
pub(crate) fn clock_schema(index: u32) -> Schema {
    let text = format!(
        "{index} {CLOCK_STREAM} source:string daemon:string synchronized:int32 \
         offset:double maxerror:double esterror:double"
    );
    // The text is fixed but for the index, and parses.
    Schema::parse(&text).unwrap_or_else(|_| unreachable!("fixed schema {text}"))
}

/// When to report next.
#[derive(Debug)]
pub(crate) struct ClockReport {
    /// Seconds between reports.
    interval: f64,
    /// Client time of the next report; `None`: the first one is due now.
    next: Option<f64>,
}

impl ClockReport {
    pub(crate) fn new(interval: Duration) -> ClockReport {
        ClockReport {
            interval: interval.as_secs_f64(),
            next: None,
        }
    }

    /// Client time of the next report, once the first is out.
    pub(crate) fn next(&self) -> Option<f64> {
        self.next
    }

    /// Reports if one is due at `now`.
    pub(crate) fn tick(&mut self, now: f64, outputs: &mut [Output]) {
        if self.next.is_some_and(|t| now < t) {
            return;
        }
        let state = clocksync::read().unwrap_or_else(|e| {
            tracing::debug!(error = %e, "clock state unknown");
            ClockState::unknown()
        });
        let values = [
            Value::String(state.source.name().to_owned()),
            Value::String(state.daemon),
            Value::Int32(i32::from(state.synchronized)),
            Value::Double(state.offset),
            Value::Double(state.maxerror),
            Value::Double(state.esterror),
        ];
        for out in outputs.iter_mut() {
            out.clock(now, &values);
        }
        self.next = Some(now + self.interval);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_parses() {
        let s = clock_schema(7);
        assert_eq!(s.index, 7);
        assert_eq!(s.name, CLOCK_STREAM);
        assert_eq!(s.fields.len(), 6);
    }

    #[test]
    fn schedule() {
        let mut r = ClockReport::new(Duration::from_secs(60));
        assert_eq!(r.next(), None);
        r.tick(5.0, &mut []);
        assert_eq!(r.next(), Some(65.0));
        r.tick(64.0, &mut []);
        assert_eq!(r.next(), Some(65.0));
        r.tick(65.0, &mut []);
        assert_eq!(r.next(), Some(125.0));
    }
}
