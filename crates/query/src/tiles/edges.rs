//! The straddling leaves of a request, summarised by PostgreSQL itself:
//! per (sender, bucket) the M4 summary of the leaves' rows, computed with
//! the exact query's bucket formula and aggregates, so a few hundred
//! summaries cross the wire instead of every row of those leaves (the
//! client library costs about a microsecond per row). SQLite reads the
//! rows in-process and needs none of this.

use omsp::OmlType;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;

use super::read::Columns;
use super::summary::{Num, M4};
use crate::export::{pg_binary_cell, quote, Cell, ExportError, Kind, PgValue};

/// The request's buckets: `clamp(floor((t − t0) / width), 0, last)`, rows
/// kept if within `from`–`to`.
pub struct Buckets {
    /// Start of bucket 0.
    pub t0: f64,
    /// Bucket width.
    pub width: f64,
    /// Last bucket number.
    pub last: i64,
    /// Inclusive lower bound of the rows.
    pub from: Option<f64>,
    /// Inclusive upper bound.
    pub to: Option<f64>,
}

fn int(v: Option<PgValue>) -> i64 {
    match v {
        Some(PgValue::Int(i)) => i,
        _ => 0,
    }
}

fn num(v: Option<PgValue>, ty: OmlType) -> Option<Num> {
    match pg_binary_cell(v, Kind::Field(ty)) {
        Cell::Int(i) => Some(Num::I(i)),
        Cell::UInt(u) => Some(Num::U(u)),
        Cell::Real(x) if !x.is_nan() => Some(Num::F(x)),
        _ => None,
    }
}

/// Calls `f(sender, bucket, summary)` for the rows of `leaves` (sender,
/// first id, last id) with a value, per bucket.
pub fn summaries(
    db: &mut postgres::Client,
    c: &Columns<'_>,
    leaves: &[(i64, i64, i64)],
    b: &Buckets,
    mut f: impl FnMut(i64, usize, M4),
) -> Result<(), ExportError> {
    if leaves.is_empty() {
        return Ok(());
    }
    let (ts, v) = (quote(c.time), quote(c.field));
    let mut cond = format!("t.{ts} IS NOT NULL AND t.{v} IS NOT NULL");
    if c.ty == OmlType::Double {
        // NaN sorts above every number in PostgreSQL; M4 leaves it out.
        cond += &format!(" AND t.{v} <> 'NaN'::float8");
    }
    cond += &format!(
        " AND ($7::float8 IS NULL OR t.{ts} >= $7::float8) AND ($8::float8 IS NULL OR t.{ts} <= $8::float8)"
    );
    let sql = format!(
        "WITH p AS (SELECT t.oml_sender_id AS s, t.oml_tuple_id AS id, t.{ts} AS ts, t.{v} AS v, \
           LEAST(GREATEST(floor((t.{ts} - $4::float8) / $5::float8)::int8, 0), $6::int8) AS k \
         FROM unnest($1::int8[], $2::int8[], $3::int8[]) AS r(s, a, b) \
         CROSS JOIN LATERAL (SELECT * FROM {table} AS t WHERE t.oml_tuple_id BETWEEN r.a AND r.b \
           AND t.oml_sender_id = r.s OFFSET 0) AS t WHERE {cond}), \
         a AS (SELECT s, k, min(id) AS fid, max(id) AS lid, min(v) AS lo, max(v) AS hi, \
           min(ts) AS t0, max(ts) AS t1 FROM p GROUP BY s, k), \
         x AS (SELECT a.s, a.k, min(CASE WHEN p.v = a.lo THEN p.id END) AS loid, \
           min(CASE WHEN p.v = a.hi THEN p.id END) AS hiid FROM p JOIN a \
           ON p.s = a.s AND p.k = a.k AND (p.v = a.lo OR p.v = a.hi) GROUP BY a.s, a.k) \
         SELECT a.s, a.k, a.fid, a.lid, a.lo, x.loid, a.hi, x.hiid, a.t0, a.t1 \
         FROM a JOIN x ON a.s = x.s AND a.k = x.k",
        table = quote(c.table),
    );
    let s: Vec<i64> = leaves.iter().map(|l| l.0).collect();
    let lo: Vec<i64> = leaves.iter().map(|l| l.1).collect();
    let hi: Vec<i64> = leaves.iter().map(|l| l.2).collect();
    let params: [&(dyn ToSql + Sync); 8] = [&s, &lo, &hi, &b.t0, &b.width, &b.last, &b.from, &b.to];
    let mut it = db.query_raw(sql.as_str(), params)?;
    while let Some(r) = it.next()? {
        let (Some(l), Some(h)) = (num(r.try_get(4)?, c.ty), num(r.try_get(6)?, c.ty)) else {
            continue;
        };
        let k = int(r.try_get(1)?).max(0) as usize;
        f(
            int(r.try_get(0)?),
            k,
            M4 {
                t_min: r.try_get(8)?,
                t_max: r.try_get(9)?,
                first: int(r.try_get(2)?),
                last: int(r.try_get(3)?),
                lo: l,
                lo_id: int(r.try_get(5)?),
                hi: h,
                hi_id: int(r.try_get(7)?),
            },
        );
    }
    Ok(())
}
