//! One series' tiles: the sender's rows cut into leaves of [`LEAF`]
//! consecutive rows (by id), each with its M4 summary, and above them
//! levels of merged pairs, so that any time range is covered by O(log n)
//! summaries per bucket of a request.

use super::summary::{Num, M4};

/// Rows of the sender per leaf. A leaf whose rows straddle a bucket
/// boundary of a request is re-read from the database (a primary-key
/// range), so this bounds the rows read per boundary; memory is about
/// 300 bytes per leaf with the levels above it.
pub const LEAF: u32 = 128;

/// Tiles of one sender for one field.
#[derive(Debug, Default, Clone)]
pub struct Pyramid {
    /// `[first id, last id]` of every leaf's rows (all rows of the sender,
    /// with or without a value): re-reading a leaf is `id BETWEEN a AND b
    /// AND oml_sender_id = s`.
    ranges: Vec<(i64, i64)>,
    /// Rows in the last leaf (it fills up as rows arrive).
    last_len: u32,
    /// `levels[0]` are the leaves' summaries (`None`: no row with a value),
    /// `levels[l][i]` merges `levels[l-1][2i]` and `levels[l-1][2i+1]`.
    levels: Vec<Vec<Option<M4>>>,
    /// First leaf changed since the upper levels were last brought up to date.
    dirty: Option<usize>,
}

/// What a request gets from the tiles of one series.
pub struct Cover<'a> {
    /// Bucket of a timestamp (the request's formula).
    pub bucket: &'a dyn Fn(f64) -> usize,
    /// Inclusive lower bound of the rows wanted.
    pub from: Option<f64>,
    /// Inclusive upper bound.
    pub to: Option<f64>,
}

impl Pyramid {
    /// Adds a row (ids increase). `value` is `None` for a row without a
    /// usable value or timestamp: it still counts towards its leaf.
    pub fn push(&mut self, id: i64, value: Option<(f64, Num)>) {
        if self.levels.is_empty() {
            self.levels.push(Vec::new());
        }
        if self.ranges.is_empty() || self.last_len >= LEAF {
            self.ranges.push((id, id));
            self.levels[0].push(None);
            self.last_len = 0;
        }
        let leaf = self.ranges.len() - 1;
        self.ranges[leaf].1 = id;
        self.last_len += 1;
        if let Some((t, v)) = value {
            M4::merge_into(&mut self.levels[0][leaf], &M4::one(id, t, v));
        }
        self.dirty = Some(self.dirty.map_or(leaf, |d| d.min(leaf)));
    }

    /// Recomputes the upper levels above the leaves changed since the last call.
    pub fn settle(&mut self) {
        let Some(from) = self.dirty.take() else {
            return;
        };
        let mut l = 0;
        let mut start = from;
        while self.levels[l].len() > 1 {
            let below = self.levels[l].len();
            let len = below.div_ceil(2);
            if self.levels.len() <= l + 1 {
                self.levels.push(Vec::new());
            }
            start /= 2;
            let (lower, upper) = self.levels.split_at_mut(l + 1);
            let (src, dst) = (&lower[l], &mut upper[0]);
            dst.truncate(start);
            for i in start..len {
                let mut m = src[2 * i];
                if let Some(b) = src.get(2 * i + 1).copied().flatten() {
                    M4::merge_into(&mut m, &b);
                }
                dst.push(m);
            }
            l += 1;
        }
        self.levels.truncate(l + 1);
    }

    /// Merges into `acc` (one slot per bucket) every tile whose rows all
    /// lie inside the range and in one bucket, and lists the leaves that
    /// straddle a boundary (to be read exactly). Visits O(buckets × log n)
    /// tiles.
    pub fn cover(&self, c: &Cover<'_>, acc: &mut [Option<M4>], reads: &mut Vec<(i64, i64)>) {
        if let Some(top) = self.levels.len().checked_sub(1) {
            for i in 0..self.levels[top].len() {
                self.visit(top, i, c, acc, reads);
            }
        }
    }

    fn visit(
        &self,
        l: usize,
        i: usize,
        c: &Cover<'_>,
        acc: &mut [Option<M4>],
        reads: &mut Vec<(i64, i64)>,
    ) {
        let Some(m) = self.levels[l][i] else { return };
        if c.from.is_some_and(|f| m.t_max < f) || c.to.is_some_and(|t| m.t_min > t) {
            return;
        }
        let inside = c.from.is_none_or(|f| m.t_min >= f) && c.to.is_none_or(|t| m.t_max <= t);
        if inside {
            let k = (c.bucket)(m.t_min);
            if k == (c.bucket)(m.t_max) {
                M4::merge_into(&mut acc[k], &m);
                return;
            }
        }
        if l == 0 {
            reads.push(self.ranges[i]);
            return;
        }
        for j in [2 * i, 2 * i + 1] {
            if j < self.levels[l - 1].len() {
                self.visit(l - 1, j, c, acc, reads);
            }
        }
    }

    /// Memory held, in bytes (for the cache's limit).
    pub fn bytes(&self) -> usize {
        let summaries: usize = self.levels.iter().map(Vec::capacity).sum();
        self.ranges.capacity() * std::mem::size_of::<(i64, i64)>()
            + summaries * std::mem::size_of::<Option<M4>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cover_merges_whole_tiles_and_reads_straddling_leaves() {
        let mut p = Pyramid::default();
        for id in 1..=1000i64 {
            let v = if id == 700 { 1e9 } else { (id % 17) as f64 };
            p.push(id, Some((id as f64, Num::F(v))));
            if id % 300 == 0 {
                p.settle(); // incremental settling gives the same levels
            }
        }
        p.settle();
        let bucket = |t: f64| ((((t - 1.0) / 250.0) as i64).clamp(0, 3)) as usize;
        let c = Cover {
            bucket: &bucket,
            from: None,
            to: None,
        };
        let mut acc = vec![None; 4];
        let mut reads = Vec::new();
        p.cover(&c, &mut acc, &mut reads);
        // Boundaries at t = 251, 501, 751: leaves [129,256], [385,512], [641,768].
        assert_eq!(reads, vec![(129, 256), (385, 512), (641, 768)]);
        let b3 = acc[3].unwrap();
        assert_eq!((b3.first, b3.last), (769, 1000));
        // The spike's leaf straddles t = 751, so it is among the reads.
        assert!(acc.iter().flatten().all(|m| m.hi != Num::F(1e9)));
    }
}
