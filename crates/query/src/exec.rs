//! The blocking side of each request: open the domain, check the stream,
//! parse the parameters, run the SQL under the time budget and write the
//! answer. Runs on tokio's blocking pool, one database connection per
//! request (readers never block the server's writer).

use std::io::Write;
use std::time::Duration;

use crate::auth::Caller;
use crate::body::ChannelWriter;
use crate::catalog::find_stream;
use crate::derive::GapFinder;
use crate::error::QueryError;
use crate::export::{columns, Cell, ExportError, Source, Timestamps};
use crate::format::{JsonOptions, RowSink};
use crate::plan;
use crate::request::{Clock, Derive, Format, RowsRequest, TimeAxis};
use crate::sql::Dialect;
use crate::state::QueryState;
use crate::tiles::TileScope;

/// Ids per statement when fetching the rows kept by the tiles.
const ID_CHUNK: usize = 2000;

/// Opens `domain`, or 404 listing the domains `caller` may read.
pub fn open(state: &QueryState, caller: &Caller, domain: &str) -> Result<Source, QueryError> {
    match state.backend.open(domain) {
        Ok(Some(src)) => Ok(src),
        Ok(None) => Err(QueryError::UnknownDomain {
            domain: domain.to_owned(),
            existing: state
                .backend
                .domains()
                .unwrap_or_default()
                .into_iter()
                .filter(|d| caller.may_read(d))
                .collect(),
        }),
        Err(e) => Err(QueryError::Database(e)),
    }
}

/// `GET …/rows`: writes the whole answer into `out`.
pub(crate) fn rows(
    state: &QueryState,
    caller: &Caller,
    domain: &str,
    stream: &str,
    pairs: &[(String, String)],
    mut out: ChannelWriter,
) {
    let r = rows_into(state, caller, domain, stream, pairs, &mut out);
    out.finish(r);
}

fn rows_into(
    state: &QueryState,
    caller: &Caller,
    domain: &str,
    stream: &str,
    pairs: &[(String, String)],
    out: &mut ChannelWriter,
) -> Result<(), QueryError> {
    let mut src = open(state, caller, domain)?;
    let schema = find_stream(&mut src, domain, stream)?;
    let start = src.start_time().map_err(QueryError::Database)?.unwrap_or(0);
    let mut req = RowsRequest::parse(pairs, &columns(&schema), start)?;
    corrected_if_possible(&mut src, &mut req)?;
    let budget = budget_of(state, &req);
    let scope = state.tiles.as_ref().map(|cache| TileScope {
        cache,
        domain,
        feed: state.feed.as_ref(),
    });
    write_rows(&mut src, &schema.name, &req, start, out, budget, scope)
}

/// `clock=corrected` on a database without the clock table (written by an
/// older server) has nothing to correct by: the timestamps stay raw.
pub fn corrected_if_possible(src: &mut Source, req: &mut RowsRequest) -> Result<(), QueryError> {
    if req.clock == Clock::Corrected
        && !crate::catalog::has_clock_table(src).map_err(QueryError::Database)?
    {
        req.clock = Clock::Raw;
    }
    Ok(())
}

/// Runs `req` on `table` and writes the answer to `out`: the function
/// behind `GET …/rows` (also used by the benchmark). `start` is the
/// experiment's start time (Unix seconds). With `tiles`, `points=` is
/// answered from pre-aggregated tiles when the request allows it (no
/// `where`, not on corrected client time).
pub fn write_rows<W: Write + Send>(
    src: &mut Source,
    table: &str,
    req: &RowsRequest,
    start: i64,
    out: W,
    budget: Option<Duration>,
    tiles: Option<TileScope<'_>>,
) -> Result<(), QueryError> {
    let times = Timestamps::new(if req.raw_timestamps {
        None
    } else {
        Some(start)
    });
    let json = JsonOptions {
        int64_string: req.int64_string,
        start_time: start,
    };
    if req.points.is_some() && plan::m4_fields(req).is_empty() {
        return Err(QueryError::bad(
            "points",
            "points= needs a numeric field in fields= (int32, uint32, int64, uint64, double)",
        ));
    }
    if req.derive == Derive::Rate {
        // Rates come from every row of the range, not from the tiles.
        let end = tiles.and_then(|s| s.end(src.dialect() == Dialect::Postgres, table));
        return crate::derive::write(src, table, req, times, json, out, budget, end);
    }
    src.with_budget(budget, |src| {
        let mut sink = RowSink::new(out, req.format, &req.columns, times, json)?;
        let d = src.dialect();
        let mut next = None;
        // The ids a page's gaps are looked for in.
        let gap_ids;
        if let Some(points) = req.points {
            let fields = plan::m4_fields(req);
            // The range's last edge stops at the committed end: a backward
            // scan from the table's end would walk through the writer's
            // open transaction first.
            let end = tiles.and_then(|s| s.end(d == Dialect::Postgres, table));
            let tiles = tiles.filter(|_| {
                req.tiles
                    && req.predicates.is_empty()
                    && !(req.clock == Clock::Corrected && req.time == TimeAxis::Client)
            });
            let (t0, t1) = match (req.from, req.to) {
                (Some(a), Some(b)) => (a, b),
                (a, b) => {
                    let (lo, hi) = match tiles {
                        // Client time is not ordered by id: its range would
                        // be a scan; the tiles know it per sender.
                        Some(scope) if req.time == TimeAxis::Client => {
                            match scope.cache.span(&scope, src, table, req, fields[0])? {
                                Some((lo, hi)) => (
                                    Some(lo).filter(|lo| b.is_none_or(|b| *lo <= b)),
                                    Some(hi).filter(|hi| a.is_none_or(|a| *hi >= a)),
                                ),
                                None => (None, None),
                            }
                        }
                        _ => {
                            let [lo, hi] = plan::time_range(d, table, req, end);
                            let mut get = |sql| -> Result<Option<f64>, ExportError> {
                                Ok(src
                                    .text_rows(&sql)?
                                    .first()
                                    .and_then(|row| row[0].as_deref()?.parse::<f64>().ok()))
                            };
                            (get(lo)?, get(hi)?)
                        }
                    };
                    match (a.or(lo), b.or(hi)) {
                        (Some(a), Some(b)) => (a, b),
                        _ => {
                            let gaps = req.gaps.map(|_| Vec::new());
                            return sink.finish_with(None, gaps.as_deref()).map(drop);
                        }
                    }
                }
            };
            let buckets = (points / 4).max(1);
            // With gaps=, the kept rows' sender and time come first
            // (`derive::with_series`); the gaps are found among them.
            let sel = if req.gaps.is_some() {
                crate::derive::with_series(req)
            } else {
                req.clone()
            };
            let skip = 1 + sel.columns.len() - req.columns.len();
            let mut kept_times = GapFinder::default();
            let mut row = |cells: &[Cell]| {
                if skip > 1 {
                    let (s, t) = crate::derive::series(cells);
                    kept_times.push(s, t);
                }
                sink.row(&cells[skip..])
            };
            match tiles {
                Some(scope) => {
                    let kept =
                        scope
                            .cache
                            .m4(&scope, src, table, req, &fields, (t0, t1), buckets)?;
                    let ids: Vec<i64> = kept.ids.iter().map(|&(_, id)| id).collect();
                    for chunk in ids.chunks(ID_CHUNK) {
                        let sql = plan::by_ids(d, table, &sel, chunk);
                        src.run(&sql, &plan::selected(&sel), &mut row)?;
                    }
                }
                None => {
                    let sql = plan::m4(d, table, &sel, &fields, t0, t1, buckets);
                    src.run(&sql, &plan::selected(&sel), &mut row)?;
                }
            }
            let width = ((t1 - t0) / f64::from(buckets)).max(1e-9);
            let gaps = req
                .gaps
                .map(|k| kept_times.finish_downsampled(k, t0, width, buckets));
            sink.finish_with(None, gaps.as_deref())?;
            return Ok(());
        } else {
            let sql = plan::rows(d, table, req);
            let mut n = 0u64;
            let mut last = None;
            let limit = req.limit.unwrap_or(u64::MAX);
            src.run(&sql, &plan::selected(req), |cells| {
                n += 1;
                if n > limit {
                    next = last;
                    return Ok(());
                }
                if let Cell::Int(id) = cells[0] {
                    last = Some(id);
                }
                sink.row(&cells[1..])
            })?;
            // A page's gaps are those between its own rows.
            gap_ids = last.map(|l| (req.after, Some(l)));
        }
        let gaps = match (req.gaps, gap_ids) {
            (Some(k), Some((after, until))) => {
                Some(crate::derive::gaps_of(src, table, req, k, after, until)?)
            }
            (Some(_), None) => Some(Vec::new()),
            (None, _) => None,
        };
        sink.finish_with(next, gaps.as_deref())?;
        Ok(())
    })
    .map_err(|e| QueryError::db(e, budget))
}

/// Interactive budget, or the export budget for a full file export.
fn budget_of(state: &QueryState, req: &RowsRequest) -> Option<Duration> {
    if req.format != Format::Json && req.limit.is_none() && req.points.is_none() {
        state.export_budget
    } else {
        state.budget
    }
}
