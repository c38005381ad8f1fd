//! The tiles of one field of one stream on one time axis: a pyramid per
//! sender, how far they cover the table, and the incremental catch-up
//! that folds in rows committed since.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use omsp::OmlType;

use super::pyramid::Pyramid;
use super::read::{self, Columns};
use crate::export::{quote, ExportError, Source};
use crate::sql::Sql;

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
    /// first time). If the table was emptied or replaced (its last folded
    /// row is gone), starts over. Progress is kept when the read is
    /// interrupted (time budget): the next call resumes after the last row
    /// folded. Returns the rows folded.
    pub fn catch_up(&mut self, src: &mut Source) -> Result<u64, ExportError> {
        let t = Instant::now();
        if self.covered > 0 && !self.still_there(src)? {
            *self = TileSet::new(&self.table, self.time, &self.field, self.ty);
        }
        let cols = Columns {
            table: &self.table,
            time: self.time,
            field: &self.field,
            ty: self.ty,
        };
        let (senders, span) = (&mut self.senders, &mut self.span);
        let (mut covered, mut n) = (self.covered, 0u64);
        let r = read::after(src, &cols, self.covered, |(id, s, t, v)| {
            senders.entry(s).or_default().push(id, t.zip(v));
            if let Some(t) = t {
                let e = span.entry(s).or_insert((t, t));
                e.0 = e.0.min(t);
                e.1 = e.1.max(t);
            }
            covered = id;
            n += 1;
        });
        self.covered = covered;
        self.rows += n;
        for p in self.senders.values_mut() {
            p.settle();
        }
        self.build_time += t.elapsed();
        self.used = Instant::now();
        r.map(|()| n)
    }

    /// True if the last folded row still exists (the table was not
    /// truncated or recreated under the tiles).
    fn still_there(&self, src: &mut Source) -> Result<bool, ExportError> {
        let mut sql = Sql::new(src.dialect());
        sql.push("SELECT CAST(count(*) AS TEXT) FROM ")
            .push(&quote(&self.table))
            .push(" WHERE oml_tuple_id = ");
        sql.bind(
            crate::sql::Param::Int(self.covered),
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
