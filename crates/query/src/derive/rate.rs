//! Per-second rates of counters, per sender, with resets.

use std::collections::HashMap;

use crate::export::Cell;

/// A counter value: integers exact (uint64 above 2^63 included), doubles
/// as stored.
#[derive(Debug, Clone, Copy)]
enum Num {
    /// int32, uint32, int64, uint64.
    Int(i128),
    /// A finite double.
    Real(f64),
}

impl Num {
    /// The number in `c`; `None` for NULL, NaN and infinities.
    fn of(c: &Cell) -> Option<Num> {
        match c {
            Cell::Int(i) => Some(Num::Int(i128::from(*i))),
            Cell::UInt(u) => Some(Num::Int(i128::from(*u))),
            Cell::Real(f) if f.is_finite() => Some(Num::Real(*f)),
            _ => None,
        }
    }

    fn real(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Real(f) => f,
        }
    }

    /// How much the counter grew from `prev` to `self`: the difference,
    /// or, when it went down (the sender restarted and counts from zero
    /// again), the new value itself. Never negative for a counter.
    fn increase(self, prev: Num) -> f64 {
        match (self, prev) {
            (Num::Int(v), Num::Int(p)) if v < p => v as f64,
            (Num::Int(v), Num::Int(p)) => (v - p) as f64,
            _ => {
                let (v, p) = (self.real(), prev.real());
                if v < p {
                    v
                } else {
                    v - p
                }
            }
        }
    }
}

/// Replaces counter values by their per-second rate, one series per
/// sender: `rate_i = increase(v_(i-1), v_i) / (t_i - t_(i-1))`. A sender's
/// first row (and a row whose value or time is missing, or whose time
/// does not advance) has no rate: its cell becomes NULL.
#[derive(Debug, Default)]
pub struct Rates {
    /// Positions of the derived cells in a row.
    cols: Vec<usize>,
    /// Per sender, per derived cell: the last time and value seen.
    prev: HashMap<i64, Vec<Option<(f64, Num)>>>,
}

impl Rates {
    /// Rates of the cells at `cols`.
    pub fn new(cols: Vec<usize>) -> Rates {
        Rates {
            cols,
            prev: HashMap::new(),
        }
    }

    /// Replaces the cells at this tracker's positions in `cells` (a row of
    /// `sender` at time `t`) by their rates, and remembers their values.
    pub fn apply(&mut self, sender: i64, t: Option<f64>, cells: &mut [Cell]) {
        let n = self.cols.len();
        let prev = self.prev.entry(sender).or_insert_with(|| vec![None; n]);
        for (slot, &i) in prev.iter_mut().zip(&self.cols) {
            let Some(cell) = cells.get_mut(i) else {
                continue;
            };
            let (Some(t), Some(v)) = (t.filter(|t| t.is_finite()), Num::of(cell)) else {
                *cell = Cell::Null;
                continue;
            };
            *cell = match *slot {
                Some((tp, vp)) if t > tp => Cell::Real(v.increase(vp) / (t - tp)),
                _ => Cell::Null,
            };
            *slot = Some((t, v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rates(rows: &[(i64, f64, Cell)]) -> Vec<Cell> {
        let mut r = Rates::new(vec![0]);
        rows.iter()
            .map(|(s, t, c)| {
                let mut cells = [c.clone()];
                r.apply(*s, Some(*t), &mut cells);
                cells[0].clone()
            })
            .collect()
    }

    #[test]
    fn resets_count_from_zero_and_senders_are_separate() {
        let got = rates(&[
            (1, 0.0, Cell::UInt(100)),
            (2, 0.5, Cell::UInt(7)),
            (1, 1.0, Cell::UInt(110)),
            (1, 3.0, Cell::UInt(30)), // restarted, already counted 30
            (2, 2.5, Cell::UInt(27)),
            (1, 4.0, Cell::UInt(30)),
        ]);
        assert_eq!(
            got,
            [
                Cell::Null,
                Cell::Null,
                Cell::Real(10.0),
                Cell::Real(15.0),
                Cell::Real(10.0),
                Cell::Real(0.0)
            ]
        );
    }

    #[test]
    fn exact_above_two_to_the_63_and_missing_values() {
        let big = u64::MAX - 10;
        let got = rates(&[
            (1, 0.0, Cell::UInt(big)),
            (1, 2.0, Cell::UInt(u64::MAX)),
            (1, 3.0, Cell::Null),
            (1, 3.0, Cell::Real(f64::NAN)),
            (1, 4.0, Cell::UInt(u64::MAX)),
            (1, 4.0, Cell::UInt(u64::MAX)),
        ]);
        assert_eq!(
            got,
            [
                Cell::Null,
                Cell::Real(5.0),
                Cell::Null,
                Cell::Null,
                Cell::Real(0.0),
                Cell::Null // time did not advance
            ]
        );
        let got = rates(&[(3, 1.0, Cell::Real(2.5)), (3, 1.5, Cell::Real(0.5))]);
        assert_eq!(got, [Cell::Null, Cell::Real(1.0)]);
    }
}
