//! The M4 summary of a set of rows of one series (one sender, one field):
//! what a bucket of the exact M4 query keeps, in a form that merges, so a
//! bucket's summary is the merge of its tiles' summaries.

use std::cmp::Ordering;

/// A numeric value, compared as the database compares it. One field's
/// values are all of the same variant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    /// int32, int64.
    I(i64),
    /// uint32, uint64, guid (exact above 2^63).
    U(u64),
    /// double (never NaN here: M4 leaves NaN out).
    F(f64),
}

impl Num {
    /// Order of two values of the same field. Mixed variants (never
    /// produced by one field) compare by variant, so the order stays total.
    pub fn order(self, o: Num) -> Ordering {
        match (self, o) {
            (Num::I(a), Num::I(b)) => a.cmp(&b),
            (Num::U(a), Num::U(b)) => a.cmp(&b),
            // -0.0 == 0.0, as in SQL.
            (Num::F(a), Num::F(b)) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
            (a, b) => a.rank().cmp(&b.rank()),
        }
    }

    fn rank(self) -> u8 {
        match self {
            Num::I(_) => 0,
            Num::U(_) => 1,
            Num::F(_) => 2,
        }
    }
}

/// First, last, minimum and maximum of some rows of a series, with the ids
/// that M4 returns for them and the time span of the rows (on the axis the
/// tiles are built for).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct M4 {
    /// Earliest timestamp of the rows: with `t_max`, tells whether they all
    /// fall into one bucket of a request.
    pub t_min: f64,
    /// Latest timestamp of the rows.
    pub t_max: f64,
    /// Lowest id (M4's "first").
    pub first: i64,
    /// Highest id (M4's "last").
    pub last: i64,
    /// Smallest value.
    pub lo: Num,
    /// Lowest id holding `lo` (the exact query's tie rule).
    pub lo_id: i64,
    /// Largest value.
    pub hi: Num,
    /// Lowest id holding `hi`.
    pub hi_id: i64,
}

impl M4 {
    /// The summary of one row.
    pub fn one(id: i64, t: f64, v: Num) -> M4 {
        M4 {
            t_min: t,
            t_max: t,
            first: id,
            last: id,
            lo: v,
            lo_id: id,
            hi: v,
            hi_id: id,
        }
    }

    /// Adds `o`'s rows to this summary (associative and commutative, so
    /// tiles merge in any order).
    pub fn merge(&mut self, o: &M4) {
        self.t_min = self.t_min.min(o.t_min);
        self.t_max = self.t_max.max(o.t_max);
        self.first = self.first.min(o.first);
        self.last = self.last.max(o.last);
        match o.lo.order(self.lo) {
            Ordering::Less => (self.lo, self.lo_id) = (o.lo, o.lo_id),
            Ordering::Equal => self.lo_id = self.lo_id.min(o.lo_id),
            Ordering::Greater => {}
        }
        match o.hi.order(self.hi) {
            Ordering::Greater => (self.hi, self.hi_id) = (o.hi, o.hi_id),
            Ordering::Equal => self.hi_id = self.hi_id.min(o.hi_id),
            Ordering::Less => {}
        }
    }

    /// Merges `o` into `slot`, which may be empty.
    pub fn merge_into(slot: &mut Option<M4>, o: &M4) {
        match slot {
            Some(s) => s.merge(o),
            None => *slot = Some(*o),
        }
    }

    /// The ids M4 returns for these rows.
    pub fn ids(&self) -> [i64; 4] {
        [self.first, self.last, self.lo_id, self.hi_id]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_extremes_and_the_lowest_id_among_ties() {
        let mut a = M4::one(5, 1.0, Num::F(2.0));
        a.merge(&M4::one(3, 0.5, Num::F(2.0)));
        a.merge(&M4::one(9, 3.0, Num::F(-1.0)));
        a.merge(&M4::one(7, 2.0, Num::F(-1.0)));
        assert_eq!(a.ids(), [3, 9, 7, 3]);
        assert_eq!((a.t_min, a.t_max), (0.5, 3.0));
        let mut u = M4::one(1, 0.0, Num::U(u64::MAX));
        u.merge(&M4::one(2, 0.0, Num::U(1 << 63)));
        assert_eq!((u.lo, u.hi), (Num::U(1 << 63), Num::U(u64::MAX)));
    }
}
