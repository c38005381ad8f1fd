//! The tiles of one field of one stream on one time axis: a pyramid per
//! sender, how far they cover the table, and the incremental catch-up
//! that folds in rows committed since.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use omsp::OmlType;
use store::postgres::CommittedRows;
use store::sql::quote;

use super::pyramid::Pyramid;
use super::read::{self, Fields};
use crate::export::{ExportError, Source};
use crate::sql::Sql;
use crate::CommitFeed;

/// Tiles of `(table, time column, field)` in one domain.
#[derive(Debug)]
pub struct TileSet {
    /// Stream table.
    pub table: String,
    /// Time column the buckets are on.
    pub time: &'static str,
    /// The field.
    pub field: String,
    /// Its type.
    pub ty: OmlType,
    /// Highest `oml_tuple_id` folded in: rows above it are read next time.
    /// Rows are only appended, by one writer per database, so every
    /// committed row below a visible one is visible too.
    pub covered: i64,
    /// One pyramid per sender id.
    pub senders: BTreeMap<i64, Pyramid>,
    /// Per sender, earliest and latest timestamp of its rows (with or
    /// without a value): the data's range when a request gives none.
    pub span: BTreeMap<i64, (f64, f64)>,
    /// Rows folded in so far.
    pub rows: u64,
    /// Time spent reading and folding, in total (reported by the bench).
    pub build_time: Duration,
    /// Last use, for the cache's eviction.
    pub used: Instant,
}

impl TileSet {
    /// Empty tiles (built by the first [`TileSet::catch_up`]).
    pub fn new(table: &str, time: &'static str, field: &str, ty: OmlType) -> TileSet {
        TileSet {
            table: table.to_owned(),
            time,
            field: field.to_owned(),
            ty,
            covered: 0,
            senders: BTreeMap::new(),
            span: BTreeMap::new(),
            rows: 0,
            build_time: Duration::ZERO,
            used: Instant::now(),
        }
    }

    /// Folds in the rows committed since the last call (all of them the
    /// first time); see [`catch_up_all`]. Returns the rows folded.
    pub fn catch_up(&mut self, src: &mut Source, ends: Ends<'_>) -> Result<u64, ExportError> {
        catch_up_all(&mut [self], src, ends)
    }

    /// True if the last folded row still exists (the table was not
    /// truncated or recreated under the tiles).
    fn still_there(&self, src: &mut Source) -> Result<bool, ExportError> {
        let mut sql = Sql::new(src.dialect());
        sql.push("SELECT CAST(count(*) AS TEXT) FROM ")
            .push(&quote(&self.table))
            .push(" WHERE oml_tuple_id = ");
        sql.bind(
            crate::sql::Value::Int(self.covered),
            crate::sql::PgType::Int8,
        );
        let rows = src.text_rows(&sql)?;
        Ok(rows.first().and_then(|r| r[0].as_deref()) == Some("1"))
    }

    /// Memory held, in bytes.
    pub fn bytes(&self) -> usize {
        self.senders.values().map(Pyramid::bytes).sum::<usize>() + 64 * self.span.len()
    }
}

/// What the writer told of a domain's commits on PostgreSQL (see
/// [`CommitFeed`]): each table's committed end, where reads stop, and the
/// rows it handed over, which are folded without being read.
#[derive(Clone, Copy)]
pub struct Ends<'a> {
    /// The domain's feed (`None` on SQLite, or without one).
    feed: Option<&'a dyn CommitFeed>,
    /// The domain.
    domain: &'a str,
}

impl<'a> Ends<'a> {
    /// What `feed` tells of `domain`, on PostgreSQL (`pg`) only.
    pub fn of(pg: bool, feed: Option<&'a dyn CommitFeed>, domain: &'a str) -> Ends<'a> {
        Ends {
            feed: feed.filter(|_| pg),
            domain,
        }
    }

    /// `table`'s committed end, if published.
    pub fn end(&self, table: &str) -> Option<i64> {
        self.feed?.committed_end(self.domain, table)
    }

    /// The handed-over rows of `table` holding the row after `after`.
    fn rows(&self, table: &str, after: i64) -> Option<Arc<CommittedRows>> {
        self.feed?.committed_rows(self.domain, table, after)
    }
}

/// Folds into each set the rows committed since its last catch-up (all of
/// them the first time). Sets of one table and time column that cover the
/// same rows (the fields of a plotted stream, usually) read them together,
/// once. If a table was emptied or replaced (a set's last folded row is
/// gone), that set starts over. Progress is kept when a read is interrupted
/// (time budget): the next call resumes after the last row folded. Returns
/// the rows folded, summed over the sets.
pub fn catch_up_all(
    sets: &mut [&mut TileSet],
    src: &mut Source,
    ends: Ends<'_>,
) -> Result<u64, ExportError> {
    for s in sets.iter_mut() {
        if s.covered > 0 && !s.still_there(src)? {
            **s = TileSet::new(&s.table, s.time, &s.field, s.ty);
        }
    }
    let mut rest: Vec<&mut TileSet> = sets.iter_mut().map(|s| &mut **s).collect();
    let mut folded = 0;
    while let Some(first) = rest.first() {
        let at = (first.table.clone(), first.time, first.covered);
        let (mut group, others): (Vec<&mut TileSet>, Vec<&mut TileSet>) = rest
            .into_iter()
            .partition(|s| (s.table.as_str(), s.time, s.covered) == (at.0.as_str(), at.1, at.2));
        folded += fold(&mut group, src, ends)?;
        rest = others;
    }
    Ok(folded)
}

/// Reads the rows after the group's common `covered` once and folds each
/// into every set of the group.
fn fold(group: &mut [&mut TileSet], src: &mut Source, ends: Ends<'_>) -> Result<u64, ExportError> {
    let t = Instant::now();
    let fields: Vec<(String, OmlType)> = group.iter().map(|s| (s.field.clone(), s.ty)).collect();
    let (table, time, after) = (group[0].table.clone(), group[0].time, group[0].covered);
    let cols = Fields {
        table: &table,
        time,
        fields: &fields,
    };
    let mut n = 0u64;
    let end = ends.end(&table);
    let mut fold_row = |(id, sender, t, vals): read::Row<'_>| {
        for (s, v) in group.iter_mut().zip(vals) {
            s.senders.entry(sender).or_default().push(id, t.zip(*v));
            if let Some(t) = t {
                let e = s.span.entry(sender).or_insert((t, t));
                e.0 = e.0.min(t);
                e.1 = e.1.max(t);
            }
            s.covered = id;
            s.rows += 1;
        }
        n += 1;
    };
    // Rows the writer handed over, the table for those it did not (before
    // a handed batch, and after the last).
    let mut read_all = || {
        let mut after = after;
        while let Some(rows) = ends.rows(&table, after) {
            if rows.first > after + 1 {
                read::after(src, &cols, after, Some(rows.first - 1), &mut fold_row)?;
                after = rows.first - 1;
            }
            match read::committed(&rows, &cols, after, &mut fold_row) {
                Some(last) => after = last,
                None => break,
            }
            if after < rows.last() {
                break;
            }
        }
        read::after(src, &cols, after, end, &mut fold_row)
    };
    let r = read_all();
    // Each set's share of the read (the bench sums them).
    let spent = t.elapsed() / group.len() as u32;
    for s in group.iter_mut() {
        for p in s.senders.values_mut() {
            p.settle();
        }
        s.build_time += spent;
        s.used = Instant::now();
    }
    r.map(|()| n * group.len() as u64)
}
