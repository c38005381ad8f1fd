//! The client's time base.

use std::time::{SystemTime, UNIX_EPOCH};

/// The client's time base: `start-time` (whole Unix seconds), and a
/// monotonic clock anchored at start so that timestamps never go back.
///
/// Inject reads the raw counter of a [`quanta::Clock`] (the CPU's invariant
/// time-stamp counter where there is one; on our 2-vCPU VM about 20 ns,
/// half a `clock_gettime`) and the writer scales it to seconds, so the
/// conversion stays off the application thread.
#[derive(Debug, Clone)]
pub(crate) struct Clock {
    /// `start-time` of the header.
    pub(crate) start_time: i64,
    /// Seconds from `start_time` to the anchor (the sub-second part).
    offset: f64,
    /// The counter.
    clock: quanta::Clock,
    /// Counter value at start.
    anchor: u64,
}

impl Clock {
    pub(crate) fn start() -> Clock {
        let clock = quanta::Clock::new();
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let anchor = clock.raw();
        Clock {
            start_time: wall.as_secs() as i64,
            offset: f64::from(wall.subsec_nanos()) * 1e-9,
            clock,
            anchor,
        }
    }

    /// The raw counter (what inject stores).
    #[inline]
    pub(crate) fn raw(&self) -> u64 {
        self.clock.raw()
    }

    /// Seconds since `start_time` of a raw counter value.
    #[inline]
    pub(crate) fn seconds(&self, raw: u64) -> f64 {
        self.offset + self.clock.delta_as_nanos(self.anchor, raw) as f64 * 1e-9
    }

    /// Seconds since `start_time`.
    pub(crate) fn now(&self) -> f64 {
        self.seconds(self.raw())
    }
}
