//! Where a sender fell silent: intervals longer than K times its typical
//! period.

use std::collections::BTreeMap;

/// An interval of one sender without rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Gap {
    /// `oml_sender_id`.
    pub sender: i64,
    /// Time of the last row before the silence (seconds after the start).
    pub from: f64,
    /// Time of the first row after it.
    pub to: f64,
}

/// Collects each sender's row times, then finds its gaps.
#[derive(Debug, Default)]
pub struct GapFinder {
    /// Row times per sender.
    times: BTreeMap<i64, Vec<f64>>,
}

impl GapFinder {
    /// A row of `sender` at `t` (rows without a time are left out).
    pub fn push(&mut self, sender: i64, t: Option<f64>) {
        if let Some(t) = t.filter(|t| t.is_finite()) {
            self.times.entry(sender).or_default().push(t);
        }
    }

    /// The intervals, per sender in time order, longer than `k` times the
    /// sender's typical period: the median of its positive intervals
    /// between consecutive row times (rows stamped alike, e.g. one per
    /// interface in a batch, do not shrink it to zero). A sender needs
    /// two intervals for a period to be told apart from a gap.
    pub fn finish(self, k: f64) -> Vec<Gap> {
        let mut out = Vec::new();
        for (sender, times) in self.times {
            let times = sorted(times);
            let steps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
            if let Some(period) = median(steps) {
                out.extend(longer_than(sender, &times, k * period));
            }
        }
        out
    }

    /// The gaps of the rows M4 kept with `buckets` buckets of `width`
    /// seconds from `t0`, when a sender's time grows with its ids: M4
    /// keeps the first and the last row of every non-empty bucket, so
    /// a silence across a bucket boundary lies between two consecutive
    /// kept rows exactly, and one inside a bucket is shorter than
    /// `width`. Reported: the intervals longer than the larger of `width`
    /// and `k` times the period, where the period is the median of the
    /// positive intervals that cross a bucket boundary (each is a real
    /// interval between two consecutive rows), or, for a sender with
    /// fewer than two such, the median of all its kept rows' intervals.
    pub fn finish_downsampled(self, k: f64, t0: f64, width: f64, buckets: u32) -> Vec<Gap> {
        let last = i64::from(buckets) - 1;
        let bucket = |t: f64| (((t - t0) / width) as i64).clamp(0, last);
        let mut out = Vec::new();
        for (sender, times) in self.times {
            let times = sorted(times);
            let across: Vec<f64> = times
                .windows(2)
                .filter(|w| bucket(w[0]) != bucket(w[1]))
                .map(|w| w[1] - w[0])
                .collect();
            let all: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
            if let Some(period) = median(across).or_else(|| median(all)) {
                out.extend(longer_than(sender, &times, (k * period).max(width)));
            }
        }
        out
    }
}

/// `times` in ascending order.
fn sorted(mut times: Vec<f64>) -> Vec<f64> {
    times.sort_by(f64::total_cmp);
    times
}

/// The median of the positive `steps`, if there are two or more.
fn median(steps: Vec<f64>) -> Option<f64> {
    let mut steps: Vec<f64> = steps.into_iter().filter(|d| *d > 0.0).collect();
    if steps.len() < 2 {
        return None;
    }
    steps.sort_by(f64::total_cmp);
    let m = steps.len() / 2;
    Some(if steps.len() % 2 == 1 {
        steps[m]
    } else {
        (steps[m - 1] + steps[m]) / 2.0
    })
}

/// The intervals between consecutive `times` longer than `limit`.
fn longer_than(sender: i64, times: &[f64], limit: f64) -> impl Iterator<Item = Gap> + '_ {
    times
        .windows(2)
        .filter(move |w| w[1] - w[0] > limit)
        .map(move |w| Gap {
            sender,
            from: w[0],
            to: w[1],
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silences_longer_than_k_periods() {
        let mut g = GapFinder::default();
        for t in [0.0, 1.0, 2.0, 3.0, 10.0, 11.0, 12.0, 15.5] {
            g.push(1, Some(t));
        }
        for t in [0.0, 0.5, 1.0, 1.0, 1.5, 2.0] {
            g.push(2, Some(t));
        }
        g.push(3, Some(0.0));
        g.push(3, Some(100.0));
        assert_eq!(
            g.finish(3.0),
            [
                Gap {
                    sender: 1,
                    from: 3.0,
                    to: 10.0
                },
                Gap {
                    sender: 1,
                    from: 12.0,
                    to: 15.5
                }
            ]
        );
    }

    #[test]
    fn downsampled_gaps_need_a_bucket_and_k_periods() {
        // Rows every second from 0 to 100 but none in (30, 45) and
        // (60, 62); buckets of 10 s: M4 kept the first and last per bucket.
        let rows: Vec<f64> = (0..=100)
            .map(f64::from)
            .filter(|t| !((31.0..45.0).contains(t) || *t == 61.0))
            .collect();
        let mut g = GapFinder::default();
        for t in &rows {
            let b = (*t / 10.0).min(9.0) as usize;
            let first = rows.iter().find(|r| (**r / 10.0).min(9.0) as usize == b);
            let last = rows.iter().rfind(|r| (**r / 10.0).min(9.0) as usize == b);
            if Some(t) == first || Some(t) == last {
                g.push(7, Some(*t));
            }
        }
        // The period is 1 s (the intervals across boundaries); 60–62 is
        // narrower than a bucket.
        assert_eq!(
            g.finish_downsampled(3.0, 0.0, 10.0, 10),
            [Gap {
                sender: 7,
                from: 30.0,
                to: 45.0
            }]
        );
    }
}
