//! M4 over derived rows, in memory: the same buckets and the same kept
//! rows (first, last, minimum, maximum, lowest id among ties) as the SQL
//! of `plan::m4`, for values the database does not store.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::export::Cell;

/// A row kept for a bucket, with its id.
type Kept = (i64, Arc<Vec<Cell>>);

/// What one (sender, field, bucket) keeps.
#[derive(Debug)]
struct Slot {
    first: Kept,
    last: Kept,
    lo: (f64, Kept),
    hi: (f64, Kept),
}

/// Folds rows, in id order, into M4 buckets.
#[derive(Debug)]
pub struct M4 {
    /// Start of the range.
    t0: f64,
    /// Bucket width (seconds).
    width: f64,
    /// Number of buckets.
    buckets: u32,
    /// Positions of the downsampled cells in a row.
    fields: Vec<usize>,
    /// Per (sender, field position, bucket).
    slots: HashMap<(i64, usize, i64), Slot>,
}

impl M4 {
    /// `buckets` equal buckets over [`t0`, `t1`] for the cells at `fields`.
    pub fn new(t0: f64, t1: f64, buckets: u32, fields: Vec<usize>) -> M4 {
        M4 {
            t0,
            // As the SQL: the same double arithmetic gives the same buckets.
            width: ((t1 - t0) / f64::from(buckets)).max(1e-9),
            buckets,
            fields,
            slots: HashMap::new(),
        }
    }

    /// The bucket of time `t`, clamped to the range (as the SQL does).
    fn bucket(&self, t: f64) -> i64 {
        (((t - self.t0) / self.width) as i64).clamp(0, i64::from(self.buckets) - 1)
    }

    /// A row of `sender` with id `id` (ascending across calls) at time `t`.
    /// Cells that are not finite numbers take no part.
    pub fn push(&mut self, sender: i64, id: i64, t: f64, row: Vec<Cell>) {
        let k = self.bucket(t);
        let row = Arc::new(row);
        for &f in &self.fields {
            let Some(Cell::Real(v)) = row.get(f).cloned() else {
                continue;
            };
            if !v.is_finite() {
                continue;
            }
            let kept = (id, Arc::clone(&row));
            self.slots
                .entry((sender, f, k))
                .and_modify(|s| {
                    s.last = kept.clone();
                    if v < s.lo.0 {
                        s.lo = (v, kept.clone());
                    }
                    if v > s.hi.0 {
                        s.hi = (v, kept.clone());
                    }
                })
                .or_insert_with(|| Slot {
                    first: kept.clone(),
                    last: kept.clone(),
                    lo: (v, kept.clone()),
                    hi: (v, kept),
                });
        }
    }

    /// The kept rows, by sender then id, each once.
    pub fn finish(self) -> Vec<Arc<Vec<Cell>>> {
        let mut kept = BTreeMap::new();
        for ((sender, _, _), s) in self.slots {
            for (id, row) in [s.first, s.last, s.lo.1, s.hi.1] {
                kept.insert((sender, id), row);
            }
        }
        kept.into_values().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_first_last_min_max_per_sender_and_bucket() {
        let mut m = M4::new(0.0, 10.0, 2, vec![0]);
        let vals = [3.0, 9.0, 1.0, 9.0, 1.0, 5.0];
        for (i, v) in vals.iter().enumerate() {
            m.push(
                1,
                i as i64 + 1,
                i as f64,
                vec![Cell::Real(*v), Cell::Int(i as i64 + 1)],
            );
        }
        m.push(2, 7, 9.0, vec![Cell::Null, Cell::Int(7)]);
        m.push(2, 8, 9.5, vec![Cell::Real(4.0), Cell::Int(8)]);
        let ids: Vec<Cell> = m.finish().iter().map(|r| r[1].clone()).collect();
        // Bucket 0 holds ids 1..=5: first 1, last 5, min 3 (lowest id), max 2.
        assert_eq!(
            ids,
            [1, 2, 3, 5, 6, 8].map(Cell::Int).to_vec(),
            "then bucket 1 (id 6) and sender 2 (id 8)"
        );
    }
}
