//! The answer of a `derive=rate` request, and the gaps of any request.

use std::io::Write;
use std::time::Duration;

use omsp::OmlType;

use super::{Gap, GapFinder, Rates, M4};
use crate::catalog;
use crate::error::QueryError;
use crate::export::{Cell, Column, ExportError, Kind, Source, Timestamps};
use crate::format::{Annotations, FieldNote, JsonOptions, RowSink};
use crate::plan;
use crate::request::{is_rate_field, Derive, RowsRequest};

/// Cells the derived queries select before the requested ones: id,
/// sender, time.
const HIDDEN: usize = 3;

/// `req` selecting the sender and the time column before its own columns.
pub(crate) fn with_series(req: &RowsRequest) -> RowsRequest {
    let mut inner = req.clone();
    let mut cols = vec![
        Column {
            name: "oml_sender_id".into(),
            kind: Kind::Meta,
        },
        Column {
            name: req.time.column().into(),
            kind: Kind::Time,
        },
    ];
    cols.append(&mut inner.columns);
    inner.columns = cols;
    inner
}

/// Sender and time of a row selected by [`with_series`].
pub(crate) fn series(cells: &[Cell]) -> (i64, Option<f64>) {
    let sender = match cells[1] {
        Cell::Int(s) => s,
        _ => 0,
    };
    let t = match cells[2] {
        Cell::Real(t) => Some(t),
        _ => None,
    };
    (sender, t)
}

/// The JSON notes of a rate answer: each rate field's unit per second.
fn annotations(
    src: &mut Source,
    table: &str,
    req: &RowsRequest,
) -> Result<Annotations, ExportError> {
    let meta = catalog::metadata(src)?;
    Ok(Annotations {
        derive: Some(req.derive.name()),
        fields: req
            .columns
            .iter()
            .map(|c| {
                is_rate_field(c).then(|| FieldNote {
                    unit: match catalog::field_meta(&meta, table, &c.name, "unit") {
                        Some(u) => format!("{u}/s"),
                        None => "1/s".into(),
                    },
                    derive: Derive::Rate.name(),
                })
            })
            .collect(),
    })
}

/// The rows of `req` with its numeric fields replaced by their rates per
/// sender (see [`Rates`]), downsampled by [`M4`] with `points=`; with
/// `gaps=`, the gaps of the rows read. `end` is the committed end of the
/// table (PostgreSQL), where ranges stop.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write<W: Write + Send>(
    src: &mut Source,
    table: &str,
    req: &RowsRequest,
    times: Timestamps,
    json: JsonOptions,
    out: W,
    budget: Option<Duration>,
    end: Option<i64>,
) -> Result<(), QueryError> {
    // Rates are doubles, whatever the counter's type.
    let out_cols: Vec<Column> = req
        .columns
        .iter()
        .map(|c| Column {
            name: c.name.clone(),
            kind: if is_rate_field(c) {
                Kind::Field(OmlType::Double)
            } else {
                c.kind
            },
        })
        .collect();
    src.with_budget(budget, |src| {
        let ann = annotations(src, table, req)?;
        let mut sink = RowSink::annotated(out, req.format, &out_cols, times, json, &ann)?;
        let inner = with_series(req);
        let cols = plan::selected(&inner);
        let derived: Vec<usize> = (0..req.columns.len())
            .filter(|&i| is_rate_field(&req.columns[i]))
            .collect();
        let mut rates = Rates::new(derived.clone());
        let mut gaps = req.gaps.map(|_| GapFinder::default());
        let d = src.dialect();
        let mut next = None;
        match req.points {
            None => {
                // A page's first rows are rates from the sender's row before it.
                if let Some(after) = req.after {
                    let sql = plan::previous(d, table, &inner, after);
                    src.run(&sql, &cols, |cells| {
                        let (s, t) = series(cells);
                        rates.apply(s, t, &mut cells[HIDDEN..].to_vec());
                        Ok(())
                    })?;
                }
                let sql = plan::rows(d, table, &inner);
                let (mut n, mut last) = (0u64, None);
                let limit = req.limit.unwrap_or(u64::MAX);
                src.run(&sql, &cols, |cells| {
                    n += 1;
                    if n > limit {
                        next = last;
                        return Ok(());
                    }
                    if let Cell::Int(id) = cells[0] {
                        last = Some(id);
                    }
                    let (s, t) = series(cells);
                    if let Some(g) = gaps.as_mut() {
                        g.push(s, t);
                    }
                    let mut row = cells[HIDDEN..].to_vec();
                    rates.apply(s, t, &mut row);
                    sink.row(&row)
                })?;
            }
            Some(points) => {
                let Some((t0, t1)) = range(src, table, req, end)? else {
                    let gaps = gaps.map(|g| g.finish(req.gaps.unwrap_or_default()));
                    return sink.finish_with(None, gaps.as_deref()).map(drop);
                };
                let mut m4 = M4::new(t0, t1, (points / 4).max(1), derived);
                let mut all = inner.clone();
                (all.limit, all.after, all.until) = (None, None, end);
                let sql = plan::rows(d, table, &all);
                src.run(&sql, &cols, |cells| {
                    let (s, t) = series(cells);
                    if let Some(g) = gaps.as_mut() {
                        g.push(s, t);
                    }
                    let mut row = cells[HIDDEN..].to_vec();
                    rates.apply(s, t, &mut row);
                    if let (Cell::Int(id), Some(t)) = (&cells[0], t) {
                        m4.push(s, *id, t, row);
                    }
                    Ok(())
                })?;
                for row in m4.finish() {
                    sink.row(&row)?;
                }
            }
        }
        let gaps = gaps.map(|g| g.finish(req.gaps.unwrap_or_default()));
        sink.finish_with(next, gaps.as_deref())?;
        Ok(())
    })
    .map_err(|e| QueryError::db(e, budget))
}

/// The time range of a downsampling: `from`–`to`, or the data's own.
fn range(
    src: &mut Source,
    table: &str,
    req: &RowsRequest,
    end: Option<i64>,
) -> Result<Option<(f64, f64)>, ExportError> {
    if let (Some(a), Some(b)) = (req.from, req.to) {
        return Ok(Some((a, b)));
    }
    let [lo, hi] = plan::time_range(src.dialect(), table, req, end);
    let mut get = |sql| -> Result<Option<f64>, ExportError> {
        Ok(src
            .text_rows(&sql)?
            .first()
            .and_then(|row| row[0].as_deref()?.parse::<f64>().ok()))
    };
    let (lo, hi) = (get(lo)?, get(hi)?);
    Ok(req.from.or(lo).zip(req.to.or(hi)))
}

/// The gaps of the rows of `req` with ids in (`after`, `until`]: one read
/// of the sender and time columns (the tiles do not keep intervals).
pub(crate) fn gaps_of(
    src: &mut Source,
    table: &str,
    req: &RowsRequest,
    k: f64,
    after: Option<i64>,
    until: Option<i64>,
) -> Result<Vec<Gap>, ExportError> {
    let mut inner = with_series(req);
    inner.columns.truncate(2);
    (inner.limit, inner.after, inner.until) = (None, after, until);
    let cols = plan::selected(&inner);
    let sql = plan::rows(src.dialect(), table, &inner);
    let mut g = GapFinder::default();
    src.run(&sql, &cols, |cells| {
        let (s, t) = series(cells);
        g.push(s, t);
        Ok(())
    })?;
    Ok(g.finish(k))
}
