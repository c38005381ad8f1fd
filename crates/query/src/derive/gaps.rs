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
        for (sender, mut times) in self.times {
            times.sort_by(f64::total_cmp);
            let mut steps: Vec<f64> = times
                .windows(2)
                .map(|w| w[1] - w[0])
                .filter(|d| *d > 0.0)
                .collect();
            if steps.len() < 2 {
                continue;
            }
            steps.sort_by(f64::total_cmp);
            let m = steps.len() / 2;
            let median = if steps.len() % 2 == 1 {
                steps[m]
            } else {
                (steps[m - 1] + steps[m]) / 2.0
            };
            let limit = k * median;
            out.extend(
                times
                    .windows(2)
                    .filter(|w| w[1] - w[0] > limit)
                    .map(|w| Gap {
                        sender,
                        from: w[0],
                        to: w[1],
                    }),
            );
        }
        out
    }
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
}
