//! A measurement stream at run time: one MP's samples, windowed and
//! filtered into rows for one destination.
//!
//! Two bodies:
//! - **pass-through**: a per-sample window whose every column is a `first`
//!   filter (the reference default). The row is the sample's own values,
//!   read straight from the queue record: no filter object, no allocation.
//! - **filters**: every other case. Each filter sees every sample of the
//!   window and emits its columns when the window closes.

use std::time::Duration;

use filters::Filter;
use omsp::{Schema, Value};

use crate::record::Parsed;

/// When a stream emits.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Window {
    /// Every sample.
    PerSample,
    /// After every `n`-th sample; `n < 1` never emits (as the reference
    /// does for negative counts).
    Count {
        /// Samples per window.
        n: i64,
        /// Samples in the current window.
        seen: i64,
    },
    /// Every `period`, driven by the writer's clock.
    Interval {
        /// Window length in seconds.
        period: f64,
        /// Client time at which the current window ends.
        due: f64,
    },
}

impl Window {
    /// The run-time window of a configured one (`Samples(0)` means 1, as
    /// in the reference).
    pub(crate) fn of(w: crate::spec::Window) -> Window {
        match w {
            crate::spec::Window::PerSample | crate::spec::Window::Samples(0 | 1) => {
                Window::PerSample
            }
            crate::spec::Window::Samples(n) => Window::Count { n, seen: 0 },
            crate::spec::Window::Interval(d) => {
                let period = d.max(Duration::from_millis(1)).as_secs_f64();
                Window::Interval { period, due: 0.0 }
            }
        }
    }

    /// True if rows aggregate several samples (the default filter of a
    /// numeric field is then `avg`, else `first`).
    pub(crate) fn aggregates(&self) -> bool {
        !matches!(self, Window::PerSample)
    }
}

/// How a filter was made, so that feedback can remake it with other
/// properties (spec/omsp.md §3.7 `set-filter`).
#[derive(Debug, Clone)]
pub(crate) struct Recipe {
    /// Filter name.
    pub(crate) op: String,
    /// Column prefix.
    pub(crate) prefix: String,
    /// Input type.
    pub(crate) ty: omsp::OmlType,
    /// Properties it was created with.
    pub(crate) properties: Vec<filters::Property>,
}

/// Which samples of a pass-through stream become rows, as feedback set it
/// (`set-samples`, `set-interval`): its columns stay the same, so the
/// stream thins out instead of switching to averaging filters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Thin {
    /// Every sample (the configured behaviour).
    All,
    /// The first of every `n` samples.
    Every {
        /// Samples per row.
        n: u64,
        /// Samples seen so far.
        seen: u64,
    },
    /// The first sample at or after each `period` seconds.
    Period {
        /// Seconds between rows.
        period: f64,
        /// Client time of the next row.
        next: f64,
    },
}

/// How a stream turns samples into rows.
pub(crate) enum Body {
    /// Copy these MP fields, in column order.
    Pass(Vec<usize>),
    /// Run these filters, each over one MP field.
    Filters {
        /// (input field, filter), in column order.
        filters: Vec<(usize, Box<dyn Filter>)>,
        /// How each filter was made, in the same order.
        recipes: Vec<Recipe>,
        /// The row being built (reused).
        row: Vec<Value>,
        /// Samples in the current window.
        samples: u64,
    },
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Body::Pass(cols) => f.debug_tuple("Pass").field(cols).finish(),
            Body::Filters { filters, .. } => write!(f, "Filters({} filters)", filters.len()),
        }
    }
}

/// One stream of one destination.
#[derive(Debug)]
pub(crate) struct Stream {
    /// Index, table name and columns, as declared.
    pub(crate) schema: Schema,
    /// The measurement point it reads.
    pub(crate) mp: u32,
    /// When it emits.
    pub(crate) window: Window,
    /// What it emits.
    pub(crate) body: Body,
    /// Sequence number of the last row (the first row is 1).
    pub(crate) seq: i64,
    /// False while feedback has disabled the stream: samples are ignored.
    pub(crate) enabled: bool,
    /// Feedback thinning of a pass-through stream.
    pub(crate) thin: Thin,
}

/// What a sample did to a stream.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Nothing to emit yet.
    Wait,
    /// Emit the sample's own values (pass-through).
    EmitSample,
    /// Emit the filters' row (in [`Stream::row`]).
    EmitRow,
}

impl Stream {
    /// Feeds one sample; says whether a row is due.
    pub(crate) fn sample(&mut self, rec: &[u8], parsed: &Parsed, ts: f64) -> Step {
        if !self.enabled {
            return Step::Wait;
        }
        let Body::Filters {
            filters, samples, ..
        } = &mut self.body
        else {
            return self.thin_step(ts);
        };
        for (field, filter) in filters.iter_mut() {
            filter.sample(parsed.value(rec, *field), ts);
        }
        *samples += 1;
        match &mut self.window {
            Window::PerSample => self.close_window(ts),
            Window::Count { n, seen } => {
                *seen += 1;
                if *n >= 1 && *seen >= *n {
                    *seen = 0;
                    self.close_window(ts)
                } else {
                    Step::Wait
                }
            }
            Window::Interval { .. } => Step::Wait,
        }
    }

    /// Whether a pass-through sample at `ts` becomes a row.
    fn thin_step(&mut self, ts: f64) -> Step {
        match &mut self.thin {
            Thin::All => Step::EmitSample,
            Thin::Every { n, seen } => {
                let first = *seen % *n == 0;
                *seen += 1;
                if first {
                    Step::EmitSample
                } else {
                    Step::Wait
                }
            }
            Thin::Period { period, next } => {
                if ts < *next {
                    return Step::Wait;
                }
                *next = ts + *period;
                Step::EmitSample
            }
        }
    }

    /// Emits the filters' row into [`Stream::row`].
    fn close_window(&mut self, now: f64) -> Step {
        if let Body::Filters {
            filters,
            row,
            samples,
            ..
        } = &mut self.body
        {
            row.clear();
            for (_, filter) in filters.iter_mut() {
                filter.emit(now, row);
            }
            *samples = 0;
        }
        Step::EmitRow
    }

    /// For interval streams: the time the current window ends.
    pub(crate) fn due(&self) -> Option<f64> {
        match self.window {
            Window::Interval { due, .. } => Some(due),
            _ => None,
        }
    }

    /// Starts the interval clock at client time `now`.
    pub(crate) fn start_clock(&mut self, now: f64) {
        if let Window::Interval { period, due } = &mut self.window {
            *due = now + *period;
        }
    }

    /// Closes an interval window that is due at `now` (the reference emits
    /// every period, samples or not). Returns `EmitRow` if it did.
    pub(crate) fn tick(&mut self, now: f64) -> Step {
        let Window::Interval { period, due } = &mut self.window else {
            return Step::Wait;
        };
        if now < *due {
            return Step::Wait;
        }
        // Skip whole periods that passed (a stalled writer), without drift.
        *due += *period * ((now - *due) / *period).floor().max(0.0) + *period;
        if !self.enabled {
            return Step::Wait;
        }
        self.close_window(now)
    }

    /// At close: emits a partial window that holds samples (count windows,
    /// as the reference, and interval windows, which the reference loses).
    pub(crate) fn flush(&mut self, now: f64) -> Step {
        match (&self.window, &self.body) {
            _ if !self.enabled => Step::Wait,
            (Window::PerSample, _) | (_, Body::Pass(_)) => Step::Wait,
            (Window::Count { n, .. }, _) if *n < 1 => Step::Wait,
            (_, Body::Filters { samples: 0, .. }) => Step::Wait,
            _ => self.close_window(now),
        }
    }

    /// The row emitted by the filters.
    pub(crate) fn row(&self) -> &[Value] {
        match &self.body {
            Body::Filters { row, .. } => row,
            Body::Pass(_) => &[],
        }
    }

    /// The pass-through columns (MP field indices).
    pub(crate) fn pass_columns(&self) -> &[usize] {
        match &self.body {
            Body::Pass(cols) => cols,
            Body::Filters { .. } => &[],
        }
    }

    /// Assigns the next sequence number.
    pub(crate) fn next_seq(&mut self) -> i64 {
        self.seq += 1;
        self.seq
    }

    /// `n` samples were dropped before reaching the writer: a per-sample
    /// stream leaves a gap of `n` in its sequence numbers (windowed streams
    /// have no row to skip).
    pub(crate) fn skip(&mut self, n: u32) {
        if matches!(self.window, Window::PerSample) {
            self.seq += i64::from(n);
        }
    }
}
