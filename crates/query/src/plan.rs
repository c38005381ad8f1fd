//! The SQL of a `rows` request: filters, keyset pagination on
//! `oml_tuple_id` (never OFFSET), and M4 downsampling computed by the
//! database (see `docs/query-api.md`).

use omsp::OmlType;

use crate::export::{select_list, Column, Kind};
use crate::request::{Clock, RowsRequest, TimeAxis};
use crate::sql::{Dialect, PgType, Sql, Value};

/// The row id column, selected first by every row query.
pub const ID: &str = "oml_tuple_id";

/// Columns a row query selects: the id, then the requested columns.
pub fn selected(req: &RowsRequest) -> Vec<Column> {
    let mut cols = vec![Column {
        name: ID.into(),
        kind: Kind::Meta,
    }];
    cols.extend(req.columns.iter().cloned());
    cols
}

/// Appends what a row query reads from: the table, or with
/// `clock=corrected` a view of it under the same name whose
/// `oml_ts_client` is corrected by the sender's clock offset estimate
/// (docs/clock.md §4), so filters, buckets and the answer all see the
/// corrected time.
pub fn source(sql: &mut Sql, table: &str, req: &RowsRequest) {
    match req.clock {
        Clock::Raw => {
            sql.ident(table);
        }
        Clock::Corrected => {
            sql.push("(SELECT ");
            for (i, c) in req.stream_columns.iter().enumerate() {
                if i > 0 {
                    sql.push(", ");
                }
                if c == "oml_ts_client" {
                    sql.push("t.oml_ts_client - COALESCE(c.clock_offset, 0) AS oml_ts_client");
                } else {
                    sql.push("t.").ident(c);
                }
            }
            sql.push(" FROM ").ident(table);
            sql.push(
                " AS t LEFT JOIN _streamgauge_clock AS c ON c.sender_id = t.oml_sender_id) AS ",
            )
            .ident(table);
        }
    }
}

/// `SELECT <the request's columns> FROM <the table and its joins>`.
fn select_rows(sql: &mut Sql, table: &str, req: &RowsRequest) {
    sql.push("SELECT ");
    select_list(sql, &selected(req));
    sql.push(" FROM ");
    source(sql, table, req);
}

/// ` WHERE "table"."id" IN (` (the caller writes the list and closes it).
fn where_id_in(sql: &mut Sql, table: &str) {
    sql.push(" WHERE ")
        .ident(table)
        .push(".")
        .ident(ID)
        .push(" IN (");
}

/// The rows `ids` (ordered by sender then id: callers chunk a sorted list),
/// with the request's columns: the answer of a downsampling from tiles.
pub fn by_ids(dialect: Dialect, table: &str, req: &RowsRequest, ids: &[i64]) -> Sql {
    let mut sql = Sql::new(dialect);
    select_rows(&mut sql, table, req);
    where_id_in(&mut sql, table);
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            sql.push(", ");
        }
        sql.bind(Value::Int(*id), PgType::Int8);
    }
    sql.push(") ORDER BY ")
        .ident(table)
        .push(".oml_sender_id, ")
        .ident(table)
        .push(".")
        .ident(ID);
    sql
}

/// Appends the request's conditions (time range, senders, predicates),
/// each as ` AND …`.
pub fn filters(sql: &mut Sql, req: &RowsRequest) {
    let ts = req.time.column();
    if let Some(f) = req.from {
        sql.push(" AND ").ident(ts).push(" >= ");
        sql.bind(Value::Real(f), PgType::Float8);
    }
    if let Some(t) = req.to {
        sql.push(" AND ").ident(ts).push(" <= ");
        sql.bind(Value::Real(t), PgType::Float8);
    }
    if !req.senders.is_empty() {
        sql.push(" AND (");
        for (i, s) in req.senders.iter().enumerate() {
            if i > 0 {
                sql.push(" OR ");
            }
            sql.push("oml_sender_id IN (SELECT id FROM _senders WHERE name = ");
            sql.bind(Value::Text(s.clone()), PgType::Text);
            sql.push(")");
            if let Ok(id) = s.parse::<i64>() {
                sql.push(" OR oml_sender_id = ");
                sql.bind(Value::Int(id), PgType::Int8);
            }
        }
        sql.push(")");
    }
    for p in &req.predicates {
        p.write(sql);
    }
}

/// `SELECT id, cols FROM table WHERE filters AND id > after ORDER BY id
/// LIMIT limit+1` (one more row than the page says whether there is a next).
pub fn rows(dialect: Dialect, table: &str, req: &RowsRequest) -> Sql {
    let mut sql = Sql::new(dialect);
    select_rows(&mut sql, table, req);
    sql.push(" WHERE 1 = 1");
    if let Some(a) = req.after {
        sql.push(" AND ").ident(ID).push(" > ");
        sql.bind(Value::Int(a), PgType::Int8);
    }
    if let Some(u) = req.until {
        sql.push(" AND ").ident(ID).push(" <= ");
        sql.bind(Value::Int(u), PgType::Int8);
    }
    filters(&mut sql, req);
    // Qualified: PostgreSQL would otherwise order by the `::text` output column.
    sql.push(" ORDER BY ").ident(table).push(".").ident(ID);
    if let Some(l) = req.limit {
        let n = l.saturating_add(1).min(i64::MAX as u64);
        sql.push(" LIMIT ");
        sql.bind(Value::Int(n as i64), PgType::Int8);
        sql.max_rows = Some(n);
    }
    sql
}

/// Per sender, the last row with an id at most `after` that matches the
/// request's filters: what the first rows of a page after `after` are
/// derived from (`derive=rate`). One grouped read of the rows before the
/// page (within `from`/`to` when given).
pub fn previous(dialect: Dialect, table: &str, req: &RowsRequest, after: i64) -> Sql {
    let mut sql = Sql::new(dialect);
    select_rows(&mut sql, table, req);
    where_id_in(&mut sql, table);
    sql.push("SELECT max(").ident(ID).push(") FROM ");
    source(&mut sql, table, req);
    sql.push(" WHERE ").ident(ID).push(" <= ");
    sql.bind(Value::Int(after), PgType::Int8);
    filters(&mut sql, req);
    sql.push(" GROUP BY oml_sender_id)");
    sql
}

/// Fields M4 can aggregate (ordered numbers).
pub fn m4_fields(req: &RowsRequest) -> Vec<&Column> {
    req.columns
        .iter()
        .filter(|c| matches!(c.kind, Kind::Field(t) if t.is_numeric() || t == OmlType::Guid))
        .collect()
}

/// M4 downsampling: the time range [`t0`, `t1`] is cut into `buckets`
/// equal buckets; per sender, bucket and field the database keeps the
/// first and last row and a row with the minimum and the maximum, all
/// with GROUP BY aggregates (no window functions, same results in SQLite
/// and PostgreSQL). The answer is those rows, by sender then id.
pub fn m4(
    dialect: Dialect,
    table: &str,
    req: &RowsRequest,
    fields: &[&Column],
    t0: f64,
    t1: f64,
    buckets: u32,
) -> Sql {
    let width = ((t1 - t0) / f64::from(buckets)).max(1e-9);
    let ts = req.time.column();
    let mut sql = Sql::new(dialect);
    sql.push("WITH ");
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            sql.push(", ");
        }
        // b: the rows with their bucket; a: per bucket first/last id and
        // min/max value; x: the first row holding the min and the max.
        sql.push(&format!(
            "b{i} AS (SELECT oml_tuple_id AS id, oml_sender_id AS s, "
        ));
        let last = Value::Int(i64::from(buckets) - 1);
        match dialect {
            Dialect::Sqlite => {
                sql.push("max(0, min(");
                sql.bind(last, PgType::Int8);
                sql.push(", CAST((").ident(ts).push(" - ");
                sql.bind(Value::Real(t0), PgType::Float8);
                sql.push(") / ");
                sql.bind(Value::Real(width), PgType::Float8);
                sql.push(" AS INTEGER)))");
            }
            Dialect::Postgres => {
                sql.push("LEAST(GREATEST(floor((").ident(ts).push(" - ");
                sql.bind(Value::Real(t0), PgType::Float8);
                sql.push(") / ");
                sql.bind(Value::Real(width), PgType::Float8);
                sql.push(")::int8, 0), ");
                sql.bind(last, PgType::Int8);
                sql.push(")");
            }
        }
        sql.push(" AS k, ").ident(&f.name).push(" AS v FROM ");
        source(&mut sql, table, req);
        sql.push(" WHERE ")
            .ident(&f.name)
            .push(" IS NOT NULL AND ")
            .ident(ts)
            .push(" IS NOT NULL");
        if dialect == Dialect::Postgres && f.kind == Kind::Field(OmlType::Double) {
            // NaN sorts above every number in PostgreSQL; SQLite stores it as NULL.
            sql.push(" AND ").ident(&f.name).push(" <> 'NaN'::float8");
        }
        filters(&mut sql, req);
        sql.push(&format!(
            "), a{i} AS (SELECT s, k, min(id) AS fid, max(id) AS lid, min(v) AS lo, max(v) AS hi FROM b{i} GROUP BY s, k), \
             x{i} AS (SELECT min(CASE WHEN b.v = a.lo THEN b.id END) AS loid, min(CASE WHEN b.v = a.hi THEN b.id END) AS hiid \
             FROM b{i} b JOIN a{i} a ON b.s = a.s AND b.k = a.k AND (b.v = a.lo OR b.v = a.hi) GROUP BY a.s, a.k)"
        ));
    }
    sql.push(" ");
    select_rows(&mut sql, table, req);
    where_id_in(&mut sql, table);
    for i in 0..fields.len() {
        if i > 0 {
            sql.push(" UNION ");
        }
        sql.push(&format!(
            "SELECT fid FROM a{i} UNION SELECT lid FROM a{i} UNION SELECT loid FROM x{i} UNION SELECT hiid FROM x{i}"
        ));
    }
    sql.push(") ORDER BY ")
        .ident(table)
        .push(".oml_sender_id, ")
        .ident(table)
        .push(".")
        .ident(ID);
    sql
}

/// The data's time range when the request gives none. Server time grows
/// with arrival, so the first and last matching rows by id give it with
/// two primary-key probes instead of a scan (a row slightly outside falls
/// into the edge bucket: bucket numbers are clamped); client time needs
/// `min`/`max`. Each SQL yields one text value.
/// With `end` (a committed end, see [`crate::CommitFeed::committed_end`]),
/// rows above it are left out.
pub fn time_range(dialect: Dialect, table: &str, req: &RowsRequest, end: Option<i64>) -> [Sql; 2] {
    let ts = req.time.column();
    let one = |first: bool| {
        let mut sql = Sql::new(dialect);
        match req.time {
            TimeAxis::Server => {
                sql.push("SELECT CAST(").ident(ts).push(" AS TEXT) FROM ");
                source(&mut sql, table, req);
                sql.push(" WHERE ").ident(ts).push(" IS NOT NULL");
                filters(&mut sql, req);
                at_most(&mut sql, table, end);
                sql.push(" ORDER BY ").ident(table).push(".").ident(ID);
                sql.push(if first { " LIMIT 1" } else { " DESC LIMIT 1" });
            }
            TimeAxis::Client => {
                let agg = if first { "min" } else { "max" };
                sql.push(&format!("SELECT CAST({agg}("))
                    .ident(ts)
                    .push(") AS TEXT) FROM ");
                source(&mut sql, table, req);
                sql.push(" WHERE 1 = 1");
                filters(&mut sql, req);
                at_most(&mut sql, table, end);
            }
        }
        sql
    };
    [one(true), one(false)]
}

/// ` AND table.oml_tuple_id <= end`, if there is an end.
fn at_most(sql: &mut Sql, table: &str, end: Option<i64>) {
    if let Some(e) = end {
        sql.push(" AND ")
            .ident(table)
            .push(".")
            .ident(ID)
            .push(" <= ");
        sql.bind(Value::Int(e), PgType::Int8);
    }
}
