//! A tail round served from the rows the writer has just committed (see
//! [`store::postgres::committed`]) instead of from the table.
//!
//! The rows arrive in binary COPY form, field by field the bytes
//! PostgreSQL's binary protocol would send back for them, so each value
//! is decoded by the very functions a read from the table uses
//! ([`PgValue`], [`pg_binary_cell`]) and the events are the same, byte
//! for byte. Only requests whose rows are every row of the stream, as
//! stored, take this way (no time, sender or value filter, raw client
//! timestamps); the others, and any row not handed over, are read from
//! the table.

use std::sync::atomic::{AtomicU64, Ordering};

use postgres::types::{FromSql, Type};
use store::postgres::CommittedRows;

use super::frames::FramesBuilder;
use super::Tail;
use crate::export::{pg_binary_cell, Cell, Column, PgValue, Timestamps};
use crate::format::json::write_api_value;
use crate::plan;
use crate::request::Clock;

/// Rows rendered this way since the process started.
static RENDERED: AtomicU64 = AtomicU64::new(0);

/// Rows live tails rendered from the writer's committed rows (not read
/// from the table) since the process started.
pub fn rows_from_commits() -> u64 {
    RENDERED.load(Ordering::Relaxed)
}

/// Where a requested value comes from.
enum Source {
    /// `oml_tuple_id`: not in the COPY, counted from the batch's first.
    Id,
    /// A field of the COPY, and its type.
    Field(usize, Type),
}

/// Renders up to `limit` rows of `rows` after `t.last` as events and
/// moves `t.last`; `None` (nothing moved) if the request is not one
/// these rows can answer, so the caller reads the table.
pub(super) fn render(t: &mut Tail, rows: &CommittedRows, limit: usize) -> Option<FramesBuilder> {
    if t.req.clock != Clock::Raw || t.last < rows.first - 1 || t.last >= rows.last() {
        return None;
    }
    let cols: Vec<Column> = plan::selected(&t.req);
    let sources: Vec<Source> = cols
        .iter()
        .map(|c| {
            if c.name == plan::ID {
                return Some(Source::Id);
            }
            let i = rows.columns.iter().position(|(n, _)| *n == c.name)?;
            Some(Source::Field(i, rows.columns[i].1.clone()))
        })
        .collect::<Option<_>>()?;
    let times = Timestamps::new(None);
    let int64_string = t.req.int64_string;
    let mut out = FramesBuilder::new(cols[1..].iter().map(|c| c.name.as_str()), t.batched);
    let mut fields = Vec::with_capacity(rows.columns.len());
    let mut cells: Vec<Cell> = Vec::with_capacity(cols.len());
    let start = (t.last + 1 - rows.first) as usize;
    let end = rows.len().min(start + limit);
    for i in start..end {
        if !rows.fields(i, &mut fields) {
            return None;
        }
        cells.clear();
        let id = rows.first + i as i64;
        for (s, c) in sources.iter().zip(&cols) {
            cells.push(match s {
                Source::Id => Cell::Int(id),
                Source::Field(f, ty) => {
                    let v = match fields[*f] {
                        None => None,
                        Some(raw) => Some(PgValue::from_sql(ty, raw).ok()?),
                    };
                    pg_binary_cell(v, c.kind)
                }
            });
        }
        out.row(id, |k, buf| {
            write_api_value(buf, &cells[k + 1], cols[k + 1].kind, times, int64_string)
        });
    }
    t.last = rows.first + end as i64 - 1;
    RENDERED.fetch_add((end - start) as u64, Ordering::Relaxed);
    Some(out)
}
