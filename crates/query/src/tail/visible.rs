//! On PostgreSQL, rows do not become visible in the order of their ids.
//!
//! `oml_tuple_id` comes from the table's sequence, which hands out ids in
//! the order transactions ask for them, not in the order they commit.
//! Two transactions writing the same table at once — two servers sharing
//! a domain (see `docs/scale-out.md`), or a writer's catalog transaction
//! beside its data transaction — interleave: one takes ids 101..=200 and
//! commits after the other took 201..=300 and committed. A tail that read
//! in between saw 201..=300, moved its position to 300 and, reading only
//! ids above its position, never saw 101..=200. The writer's published
//! end did not help: it is the highest *visible* id after our own commit,
//! and rows below it may still belong to another transaction.
//!
//! So a tail passes a missing id only once that id is *final*: once every
//! transaction that could still commit a row with it has ended. A
//! transaction holding an id below a visible row was running when that
//! row was read (a sequence gives a transaction that starts later only
//! ids above every id given out before). So after a read that stopped at
//! a gap, the tail notes the snapshot's `xmax` (every transaction running
//! then has a lower id) and the highest id it saw beyond the gap; once
//! a later snapshot's `xmin` has reached that `xmax`, every transaction
//! running at the read has ended, the rows they committed are visible,
//! and any id still missing below the noted one never will be (a rolled
//! back transaction's, or a burnt sequence value): the tail reads again
//! and passes over it. Until then it delivers the rows before the gap
//! and holds the rest back — rows arrive late by the other transaction's
//! commit time, never out of order, so `Last-Event-ID` stays a complete
//! resume point.
//!
//! A transaction that stays open for [`MAX_HOLD`] (an interactive session
//! that wrote and went to lunch) does not hold every tail forever: past
//! that, the gap is passed over as final. On SQLite none of this applies:
//! one writer at a time holds the file's lock, and ids commit in order.

use std::time::{Duration, Instant};

use crate::export::{ExportError, Source};
use crate::sql::Sql;

/// How long a gap may hold a tail back before it is passed over anyway.
pub const MAX_HOLD: Duration = Duration::from_secs(10);

/// How often a held tail looks again (the transaction it waits for may
/// belong to another server, whose commits wake nobody here).
pub const HELD_POLL: Duration = Duration::from_millis(20);

/// Where a tail may move its position on PostgreSQL.
#[derive(Debug)]
pub struct Horizon {
    /// Ids up to this one that no visible row holds never will: they are
    /// passed over.
    final_upto: i64,
    /// A gap the tail waits on, if any.
    held: Option<Held>,
}

/// A gap found above the tail's position.
#[derive(Debug)]
struct Held {
    /// The highest id seen (or known committed) beyond the gap.
    upto: i64,
    /// The snapshot `xmax` right after the read that found the gap.
    xmax: i64,
    /// When the gap was found.
    since: Instant,
}

impl Horizon {
    /// A tail positioned at `start`: ids below it do not matter.
    pub fn new(start: i64) -> Horizon {
        Horizon {
            final_upto: start,
            held: None,
        }
    }

    /// Whether the row `id` may be sent right after the row `last`: it
    /// is the next id, or every id between is final.
    pub fn may_follow(&self, last: i64, id: i64) -> bool {
        id == last.saturating_add(1) || id - 1 <= self.final_upto
    }

    /// Ids up to this one are final.
    pub fn final_upto(&self) -> i64 {
        self.final_upto
    }

    /// Whether a tail at `last` waits on a gap (one it has not passed
    /// since: rows filled it).
    pub fn held(&self, last: i64) -> bool {
        self.held.as_ref().is_some_and(|h| last < h.upto)
    }

    /// After a read stopped at a gap right after `last`: `seen` is the
    /// highest id seen or known committed beyond it. Notes the gap, or,
    /// if the transactions that could fill it have all ended since it
    /// was noted (or it has held for [`MAX_HOLD`]), makes it final; true
    /// then, and the caller reads again at once.
    pub fn gap(&mut self, src: &mut Source, last: i64, seen: i64) -> Result<bool, ExportError> {
        if !self.held(last) {
            self.held = None; // Filled: this is another gap.
        }
        let (xmin, xmax) = snapshot(src)?;
        let held = self.held.get_or_insert(Held {
            upto: seen,
            xmax,
            since: Instant::now(),
        });
        if xmin < held.xmax && held.since.elapsed() < MAX_HOLD {
            return Ok(false);
        }
        if xmin < held.xmax {
            tracing::warn!(
                upto = held.upto,
                "a transaction has held a gap in a live tail for {} s: passing over it",
                MAX_HOLD.as_secs()
            );
        }
        self.final_upto = self.final_upto.max(held.upto);
        self.held = None;
        Ok(true)
    }

    /// Ids up to `end` are final from now on (see [`settle`]).
    pub fn settled(&mut self, end: i64) {
        self.final_upto = self.final_upto.max(end);
    }
}

/// The ids missing between the first and the last of `ids` (ascending).
pub fn holes(ids: &[i64]) -> Vec<i64> {
    ids.windows(2).flat_map(|w| w[0] + 1..w[1]).collect()
}

/// Where a new tail at the end of a table starts. `end` is the highest
/// visible id and `ids` the visible ids just below it, read by
/// `read_ids`; a missing id among them may still be taken by a row that
/// commits after the tail started. If any is missing, this waits (in the
/// caller's blocking task, at most [`MAX_HOLD`]) until every transaction
/// running now has ended, reads the ids again and starts before the
/// lowest one that appeared, so that row is sent (with the rows above
/// it, committed before: a tail may send more than it must, never less).
/// Every id up to `end` is final afterwards.
pub fn settle(
    src: &mut Source,
    end: i64,
    ids: &[i64],
    read_ids: impl Fn(&mut Source) -> Result<Vec<i64>, ExportError>,
) -> Result<i64, ExportError> {
    let missing = holes(ids);
    if missing.is_empty() {
        return Ok(end);
    }
    let (_, xmax) = snapshot(src)?;
    let since = Instant::now();
    while snapshot(src)?.0 < xmax && since.elapsed() < MAX_HOLD {
        std::thread::sleep(HELD_POLL);
    }
    let now = read_ids(src)?;
    Ok(now
        .iter()
        .find(|id| missing.binary_search(id).is_ok())
        .map_or(end, |first| first - 1))
}

/// `(xmin, xmax)` of a fresh snapshot: the oldest transaction still
/// running, and the first one not yet started.
fn snapshot(src: &mut Source) -> Result<(i64, i64), ExportError> {
    let mut sql = Sql::new(src.dialect());
    sql.push(
        "SELECT CAST(txid_snapshot_xmin(s) AS TEXT), CAST(txid_snapshot_xmax(s) AS TEXT) \
         FROM txid_current_snapshot() AS s",
    );
    let rows = src.text_rows(&sql)?;
    let get = |i: usize| -> Option<i64> { rows.first()?.get(i)?.as_deref()?.parse().ok() };
    match (get(0), get(1)) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(ExportError::Invalid(
            "no snapshot from txid_current_snapshot()".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_next_id_or_one_past_final_ids_may_follow() {
        let h = Horizon::new(10);
        assert!(h.may_follow(10, 11));
        assert!(h.may_follow(5, 11), "ids 6..=10 are below the start");
        assert!(!h.may_follow(11, 13), "12 may still commit");
        assert!(!h.held(10));
    }

    #[test]
    fn holes_are_the_ids_between_visible_ones() {
        assert_eq!(holes(&[3, 4, 7, 8, 10]), vec![5, 6, 9]);
        assert!(holes(&[1, 2, 3]).is_empty());
        assert!(holes(&[]).is_empty());
    }
}
