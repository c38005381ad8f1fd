//! A DDSketch-style quantile sketch with bounded memory.
//!
//! Values are counted in logarithmic buckets: with `γ = (1 + α) / (1 − α)`,
//! a positive value `x` falls in bucket `i = ⌈log_γ x⌉`, which covers
//! `(γ^(i−1), γ^i]`, and the bucket stands for `2γ^i / (γ + 1)`. Every value
//! in the bucket lies within relative error `α` of that representative, so a
//! quantile read off the buckets is within `α` of the true sample at that
//! rank (Masson, Rim, Lee: "DDSketch", VLDB 2019). Negative values are
//! counted by magnitude in a second store; zero (and any magnitude below
//! `f64::MIN_POSITIVE`) has its own counter.
//!
//! Each store holds at most `max_buckets` contiguous buckets. When the range
//! would grow beyond that, the lowest-magnitude buckets are merged into the
//! lowest kept one ("collapsing lowest"). Only quantiles whose rank falls in a
//! collapsed bucket lose the guarantee (they are over-estimated in magnitude);
//! with α = 1% and 2048 buckets a store spans a ratio of about 6·10^17
//! between its smallest and largest magnitude before anything collapses.

/// Counts of a contiguous run of bucket indices.
#[derive(Debug, Clone)]
struct Store {
    /// Counts, `bins[k]` for bucket `offset + k`.
    bins: Vec<u64>,
    /// Bucket index of `bins[0]`.
    offset: i64,
    /// Most buckets kept (at least 1).
    max_buckets: usize,
}

impl Store {
    /// An empty store.
    fn new(max_buckets: usize) -> Self {
        Store {
            bins: Vec::new(),
            offset: 0,
            max_buckets: max_buckets.max(1),
        }
    }

    /// Counts one value in bucket `index`, growing or collapsing the range.
    fn add(&mut self, index: i64) {
        let max = self.max_buckets as i64;
        if self.bins.is_empty() {
            self.bins.push(0);
            self.offset = index;
        }
        let top = self.offset + self.bins.len() as i64 - 1;
        if index > top {
            let new_offset = self.offset.max(index - max + 1);
            if new_offset > self.offset {
                // Merge the buckets that fall off the bottom into the new lowest one.
                let dropped = ((new_offset - self.offset) as usize).min(self.bins.len());
                let merged: u64 = self.bins.drain(..dropped).sum();
                self.offset = new_offset;
                self.bins.resize((index - new_offset + 1) as usize, 0);
                if let Some(lowest) = self.bins.first_mut() {
                    *lowest += merged;
                }
            } else {
                self.bins.resize((index - self.offset + 1) as usize, 0);
            }
        } else if index < self.offset {
            // Grow downwards, but never below the lowest bucket the limit allows;
            // a value below that is collapsed into it.
            let new_offset = index.max(top - max + 1);
            if new_offset < self.offset {
                let grow = (self.offset - new_offset) as usize;
                self.bins.splice(0..0, std::iter::repeat_n(0, grow));
                self.offset = new_offset;
            }
        }
        let k = (index.max(self.offset) - self.offset) as usize;
        if let Some(c) = self.bins.get_mut(k) {
            *c += 1;
        }
    }

    /// (index, count) of the non-empty buckets, ascending.
    fn ascending(&self) -> impl DoubleEndedIterator<Item = (i64, u64)> + '_ {
        self.bins
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(k, c)| (self.offset + k as i64, *c))
    }

    /// Empties the store, keeping its memory.
    fn clear(&mut self) {
        self.bins.clear();
    }

    /// Buckets held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.bins.len()
    }
}

/// A quantile sketch with relative accuracy α.
#[derive(Debug, Clone)]
pub(crate) struct Sketch {
    /// ln γ.
    ln_gamma: f64,
    /// 2 / (γ + 1): a bucket's representative is γ^i times this.
    scale: f64,
    /// Positive values.
    positive: Store,
    /// Negative values, by magnitude.
    negative: Store,
    /// Zeros (and magnitudes below `f64::MIN_POSITIVE`).
    zeros: u64,
    /// Values counted.
    count: u64,
    /// Smallest value counted (clamps estimates).
    min: f64,
    /// Largest value counted (clamps estimates).
    max: f64,
}

impl Sketch {
    /// A sketch with relative accuracy `alpha` (0 < α < 1) and at most
    /// `max_buckets` buckets per sign; `None` if `alpha` is unusable.
    pub(crate) fn new(alpha: f64, max_buckets: usize) -> Option<Self> {
        if !(alpha > 0.0 && alpha < 1.0) {
            return None;
        }
        let gamma = (1.0 + alpha) / (1.0 - alpha);
        let ln_gamma = gamma.ln();
        if !(ln_gamma.is_finite() && ln_gamma > 0.0) {
            return None;
        }
        Some(Sketch {
            ln_gamma,
            scale: 2.0 / (gamma + 1.0),
            positive: Store::new(max_buckets),
            negative: Store::new(max_buckets),
            zeros: 0,
            count: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        })
    }

    /// The bucket of a magnitude ≥ `f64::MIN_POSITIVE`.
    fn index(&self, magnitude: f64) -> i64 {
        (magnitude.ln() / self.ln_gamma).ceil() as i64
    }

    /// The representative magnitude of bucket `index`.
    fn representative(&self, index: i64) -> f64 {
        (index as f64 * self.ln_gamma).exp() * self.scale
    }

    /// Counts `x`; NaN and infinities are skipped.
    pub(crate) fn add(&mut self, x: f64) {
        if !x.is_finite() {
            return;
        }
        if x.abs() < f64::MIN_POSITIVE {
            self.zeros += 1;
        } else if x > 0.0 {
            self.positive.add(self.index(x));
        } else {
            self.negative.add(self.index(-x));
        }
        self.count += 1;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }

    /// The estimate of quantile `q` (0 ≤ q ≤ 1): the value at rank
    /// `⌊q·(n − 1)⌋` (0-based) within relative error α. NaN when empty.
    pub(crate) fn quantile(&self, q: f64) -> f64 {
        if self.count == 0 {
            return f64::NAN;
        }
        let rank = q.clamp(0.0, 1.0) * (self.count - 1) as f64;
        let mut seen = 0u64;
        let mut estimate = f64::NAN;
        let negatives = self
            .negative
            .ascending()
            .rev()
            .map(|(i, c)| (-self.representative(i), c));
        let zeros = std::iter::once((0.0, self.zeros)).filter(|(_, c)| *c > 0);
        let positives = self
            .positive
            .ascending()
            .map(|(i, c)| (self.representative(i), c));
        for (value, c) in negatives.chain(zeros).chain(positives) {
            seen += c;
            estimate = value;
            if seen as f64 > rank {
                break;
            }
        }
        estimate.clamp(self.min, self.max)
    }

    /// Empties the sketch for a new window, keeping its memory.
    pub(crate) fn clear(&mut self) {
        self.positive.clear();
        self.negative.clear();
        self.zeros = 0;
        self.count = 0;
        self.min = f64::INFINITY;
        self.max = f64::NEG_INFINITY;
    }

    /// Buckets held, both signs.
    #[cfg(test)]
    fn buckets(&self) -> usize {
        self.positive.len() + self.negative.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The exact value the sketch approximates.
    fn exact(sorted: &[f64], q: f64) -> f64 {
        sorted[(q * (sorted.len() - 1) as f64).floor() as usize]
    }

    fn within(estimate: f64, exact: f64, alpha: f64) -> bool {
        (estimate - exact).abs() <= alpha * exact.abs() * (1.0 + 1e-9)
    }

    #[test]
    fn one_to_ten_thousand() {
        let mut s = Sketch::new(0.01, 2048).unwrap();
        for x in 1..=10_000 {
            s.add(f64::from(x));
        }
        for (q, want) in [(0.5, 5000.0), (0.9, 9000.0), (0.99, 9900.0)] {
            let got = s.quantile(q);
            assert!(within(got, want, 0.01), "q{q}: {got} vs {want}");
        }
        // The extremes are clamped to the exact minimum and maximum.
        assert_eq!(s.quantile(0.0), 1.0);
        assert!(within(s.quantile(1.0), 10_000.0, 0.01));
    }

    #[test]
    fn zeros_and_negatives() {
        let mut s = Sketch::new(0.01, 2048).unwrap();
        for x in [
            -100.0,
            -10.0,
            -1.0,
            0.0,
            0.0,
            1.0,
            10.0,
            100.0,
            f64::NAN,
            f64::INFINITY,
        ] {
            s.add(x);
        }
        let sorted = [-100.0, -10.0, -1.0, 0.0, 0.0, 1.0, 10.0, 100.0];
        for q in [0.0, 0.1, 0.3, 0.4, 0.5, 0.6, 0.8, 0.9, 1.0] {
            let (got, want) = (s.quantile(q), exact(&sorted, q));
            assert!(within(got, want, 0.01), "q{q}: {got} vs {want}");
        }
        s.clear();
        assert!(s.quantile(0.5).is_nan());
    }

    #[test]
    fn collapsing_bounds_memory_and_keeps_the_top_accurate() {
        let mut s = Sketch::new(0.01, 64).unwrap();
        let values: Vec<f64> = (0..2000).map(|i| 1.01f64.powi(i)).collect();
        for x in values.iter().rev() {
            s.add(*x);
        }
        assert!(s.buckets() <= 64, "{}", s.buckets());
        // The top 64 buckets cover about a factor 3.6, i.e. the values above 1.01^1870.
        for q in [0.99, 0.999, 1.0] {
            let (got, want) = (s.quantile(q), exact(&values, q));
            assert!(within(got, want, 0.01), "q{q}: {got} vs {want}");
        }
        // Low quantiles were collapsed upwards: over-estimated, never below.
        assert!(s.quantile(0.01) >= exact(&values, 0.01));
    }

    #[test]
    fn collapsing_in_both_growth_directions() {
        for ascending in [true, false] {
            let mut s = Sketch::new(0.05, 8).unwrap();
            let mut values: Vec<f64> = (0..100).map(|i| 1.2f64.powi(i)).collect();
            if !ascending {
                values.reverse();
            }
            for x in &values {
                s.add(*x);
            }
            assert!(s.buckets() <= 8);
            assert!(within(s.quantile(1.0), 1.2f64.powi(99), 0.05));
            let top = s.quantile(0.99);
            assert!(within(top, 1.2f64.powi(98), 0.05), "{top}");
        }
    }

    #[test]
    fn bad_accuracy_is_refused() {
        for a in [0.0, 1.0, -0.1, f64::NAN, 1e-300] {
            assert!(Sketch::new(a, 10).is_none(), "{a}");
        }
    }

    proptest! {
        #[test]
        fn error_stays_within_alpha(
            values in prop::collection::vec(
                prop_oneof![
                    -1e9f64..1e9,
                    1e-6f64..1.0,
                    Just(0.0),
                    (0u32..1000).prop_map(f64::from),
                ],
                1..500,
            ),
            qs in prop::collection::vec(0.0f64..=1.0, 1..8),
            // At α ≥ 1% the 2048 buckets span more than the data's range
            // (1e-6 to 1e9), so nothing collapses and the bound must hold.
            alpha in prop_oneof![Just(0.01), 0.01f64..0.2],
        ) {
            let mut s = Sketch::new(alpha, 2048).unwrap();
            for x in &values {
                s.add(*x);
            }
            let mut sorted = values.clone();
            sorted.sort_by(f64::total_cmp);
            for q in qs {
                let (got, want) = (s.quantile(q), exact(&sorted, q));
                prop_assert!(within(got, want, alpha), "q{}: {} vs {}", q, got, want);
            }
        }
    }
}
