//! `loss`: packet loss from gaps in a sequence-number field.
//!
//! The field is an integer sequence number (int32, uint32, int64, uint64) that
//! the sender increments by one per sample. Columns:
//! - `<prefix>_received` (uint64): samples that arrived in the window,
//!   duplicates and late ones included;
//! - `<prefix>_lost` (uint64): sequence numbers skipped in the window, i.e.
//!   for each sample above the highest number seen so far, the numbers between
//!   the two. The highest number carries over windows, so a gap spanning a
//!   window boundary is counted in the window where it is seen. Nothing is
//!   counted before the very first sample;
//! - `<prefix>_loss_ratio` (double): `lost / (lost + received)`, NaN when
//!   both are 0.
//!
//! A sample at or below the highest number seen is counted as received and
//! never creates loss. If it fills a gap counted in the *same* window (a
//! reordered packet), that window's `_lost` goes back down by one; the filter
//! remembers up to 64 such gaps per window, forgetting the lowest first. A
//! late sample for a gap already reported in an earlier window, or a
//! duplicate, only adds to `_received`: rows already emitted are not revised,
//! so over several windows `lost + received` can exceed the numbers sent.
//! There is no wrap-around or restart detection: after a jump backwards,
//! samples count as received, without loss, until they pass the old highest.

use omsp::{OmlType, Value, ValueRef};

use crate::props::Props;
use crate::value::require_input;
use crate::{Filter, FilterError, Output, Property};

/// Most gaps remembered per window for reordering.
const MAX_GAPS: usize = 64;

/// The `loss` filter.
pub(crate) struct Loss {
    /// `_received`, `_lost`, `_loss_ratio`.
    outputs: [Output; 3],
    /// Highest sequence number ever seen (wide enough for every integer type).
    highest: Option<i128>,
    /// Samples received in this window.
    received: u64,
    /// Sequence numbers skipped in this window (less those filled late).
    lost: u64,
    /// Missing ranges (inclusive) counted in this window, ascending.
    gaps: Vec<(i128, i128)>,
}

/// The sequence number in `v`, if it is an integer.
fn sequence(v: ValueRef<'_>) -> Option<i128> {
    match v {
        ValueRef::Int32(x) => Some(x.into()),
        ValueRef::UInt32(x) => Some(x.into()),
        ValueRef::Int64(x) => Some(x.into()),
        ValueRef::UInt64(x) => Some(x.into()),
        _ => None,
    }
}

impl Loss {
    /// Creates the filter; it takes an integer input and no properties.
    pub(crate) fn new(input: OmlType, props: &[Property]) -> Result<Self, FilterError> {
        let integer = matches!(
            input,
            OmlType::Int32 | OmlType::UInt32 | OmlType::Int64 | OmlType::UInt64
        );
        require_input(
            "loss",
            input,
            integer,
            "an integer type (int32, uint32, int64, uint64)",
        )?;
        Props::new("loss", props, &[])?;
        Ok(Loss {
            outputs: [
                Output::named("received", OmlType::UInt64),
                Output::named("lost", OmlType::UInt64),
                Output::named("loss_ratio", OmlType::Double),
            ],
            highest: None,
            received: 0,
            lost: 0,
            gaps: Vec::new(),
        })
    }

    /// Removes `seq` from this window's gaps; true if it was in one.
    fn fill(&mut self, seq: i128) -> bool {
        let Some(i) = self
            .gaps
            .iter()
            .position(|&(lo, hi)| lo <= seq && seq <= hi)
        else {
            return false;
        };
        let Some(gap) = self.gaps.get_mut(i) else {
            return false;
        };
        let (lo, hi) = *gap;
        match (seq == lo, seq == hi) {
            (true, true) => {
                self.gaps.remove(i);
            }
            (true, false) => gap.0 = seq + 1,
            (false, true) => gap.1 = seq - 1,
            (false, false) => {
                gap.1 = seq - 1;
                self.gaps.insert(i + 1, (seq + 1, hi));
                self.forget_excess_gaps();
            }
        }
        true
    }

    /// Keeps at most [`MAX_GAPS`] gaps, dropping the lowest.
    fn forget_excess_gaps(&mut self) {
        if self.gaps.len() > MAX_GAPS {
            let excess = self.gaps.len() - MAX_GAPS;
            self.gaps.drain(..excess);
        }
    }
}

impl Filter for Loss {
    fn outputs(&self) -> &[Output] {
        &self.outputs
    }

    fn sample(&mut self, value: ValueRef<'_>, _ts: f64) {
        let Some(seq) = sequence(value) else {
            return;
        };
        self.received = self.received.saturating_add(1);
        match self.highest {
            None => self.highest = Some(seq),
            Some(high) if seq > high => {
                let skipped = seq - high - 1;
                if skipped > 0 {
                    let skipped = u64::try_from(skipped).unwrap_or(u64::MAX);
                    self.lost = self.lost.saturating_add(skipped);
                    self.gaps.push((high + 1, seq - 1));
                    self.forget_excess_gaps();
                }
                self.highest = Some(seq);
            }
            Some(_) => {
                if self.fill(seq) {
                    self.lost = self.lost.saturating_sub(1);
                }
            }
        }
    }

    fn emit(&mut self, _now: f64, out: &mut Vec<Value>) {
        let (received, lost) = (self.received as f64, self.lost as f64);
        let ratio = if self.received == 0 && self.lost == 0 {
            f64::NAN
        } else {
            lost / (lost + received)
        };
        out.push(Value::UInt64(self.received));
        out.push(Value::UInt64(self.lost));
        out.push(Value::Double(ratio));
        self.received = 0;
        self.lost = 0;
        self.gaps.clear();
    }
}

#[cfg(test)]
mod tests {
    use omsp::{OmlType, Value, ValueRef};

    use crate::testutil::{assert_row, emit, make};

    fn feed(f: &mut dyn crate::Filter, seqs: &[u32]) {
        for s in seqs {
            f.sample(ValueRef::UInt32(*s), 0.0);
        }
    }

    fn row(received: u64, lost: u64, ratio: f64) -> Vec<Value> {
        vec![
            Value::UInt64(received),
            Value::UInt64(lost),
            Value::Double(ratio),
        ]
    }

    #[test]
    fn gaps_are_lost() {
        let mut f = make("loss", OmlType::UInt32);
        feed(&mut *f, &[1, 2, 4, 7]);
        assert_row(&emit(&mut *f, 1.0), &row(4, 3, 3.0 / 7.0));
    }

    #[test]
    fn the_gap_from_the_previous_window_counts() {
        let mut f = make("loss", OmlType::UInt32);
        feed(&mut *f, &[10, 11]);
        assert_row(&emit(&mut *f, 1.0), &row(2, 0, 0.0));
        assert_row(&emit(&mut *f, 2.0), &row(0, 0, f64::NAN));
        feed(&mut *f, &[15]);
        assert_row(&emit(&mut *f, 3.0), &row(1, 3, 0.75));
    }

    #[test]
    fn reordering_within_a_window_is_not_loss() {
        let mut f = make("loss", OmlType::Int64);
        for s in [1i64, 3, 2, 6, 4] {
            f.sample(ValueRef::Int64(s), 0.0);
        }
        // 5 is still missing.
        assert_row(&emit(&mut *f, 1.0), &row(5, 1, 1.0 / 6.0));
        // 5 arrives late, in the next window: received, not un-lost; no negative loss.
        f.sample(ValueRef::Int64(5), 1.5);
        assert_row(&emit(&mut *f, 2.0), &row(1, 0, 0.0));
    }

    #[test]
    fn duplicates_are_received_and_never_unlose() {
        let mut f = make("loss", OmlType::Int32);
        for s in [5, 8, 8, 5, 7, 7] {
            f.sample(ValueRef::Int32(s), 0.0);
        }
        // 6 and 7 skipped; 7 filled late once; the second 7 is a duplicate.
        assert_row(&emit(&mut *f, 1.0), &row(6, 1, 1.0 / 7.0));
    }

    #[test]
    fn splitting_gaps_and_extremes() {
        let mut f = make("loss", OmlType::UInt64);
        for s in [0u64, 10, 5, 4, 6, 9, 1] {
            f.sample(ValueRef::UInt64(s), 0.0);
        }
        // Missing after all: 2, 3, 7, 8.
        assert_row(&emit(&mut *f, 1.0), &row(7, 4, 4.0 / 11.0));
        f.sample(ValueRef::UInt64(u64::MAX), 2.0);
        let r = emit(&mut *f, 2.0);
        assert_eq!(r[1], Value::UInt64(u64::MAX - 11));
    }

    #[test]
    fn remembered_gaps_are_bounded() {
        let mut f = make("loss", OmlType::UInt32);
        // 100 single gaps: 1, 3, 5, … 199.
        let seqs: Vec<u32> = (0..=100).map(|i| i * 2).collect();
        feed(&mut *f, &seqs);
        // Fill them all late: only the 64 highest are remembered.
        let late: Vec<u32> = (0..100).map(|i| i * 2 + 1).collect();
        feed(&mut *f, &late);
        assert_row(&emit(&mut *f, 1.0), &row(201, 36, 36.0 / 237.0));
    }
}
