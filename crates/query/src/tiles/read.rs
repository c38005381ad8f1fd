//! Reading the rows tiles are made of: `(id, sender, timestamp, value)` of
//! one field, either every row after an id (building and catching up) or
//! the rows of given leaves (the exact edges of a request). Values are
//! decoded as the database orders them.

use omsp::OmlType;
use postgres::types::{FromSql, Type};
use store::postgres::CommittedRows;
use store::sql::quote;

use super::summary::Num;
use crate::export::pgcopy;
use crate::export::{pg_binary_cell, Cell, Column, ExportError, Kind, PgValue, Source, FETCH};

/// One row of a series: id, sender, timestamp and value, each `None` when
/// M4 cannot use it (NULL, NaN).
pub type Point = (i64, i64, Option<f64>, Option<Num>);

/// What is read: the table, its time column and one numeric field.
pub struct Columns<'a> {
    /// Stream table.
    pub table: &'a str,
    /// `oml_ts_server` or `oml_ts_client`.
    pub time: &'a str,
    /// The field.
    pub field: &'a str,
    /// Its OML type (decides how SQLite values are read).
    pub ty: OmlType,
}

impl Columns<'_> {
    /// `SELECT id, sender, time, field FROM table AS t`.
    fn select(&self) -> String {
        format!(
            "SELECT t.oml_tuple_id, t.oml_sender_id, t.{}, t.{} FROM {} AS t",
            quote(self.time),
            quote(self.field),
            quote(self.table)
        )
    }
}

fn sqlite_num(v: rusqlite::types::ValueRef<'_>, ty: OmlType) -> Option<Num> {
    use rusqlite::types::ValueRef as V;
    let unsigned = matches!(ty, OmlType::UInt32 | OmlType::UInt64 | OmlType::Guid);
    match v {
        V::Integer(i) if ty == OmlType::Double => Some(Num::F(i as f64)),
        V::Integer(i) if unsigned => Some(Num::U(i as u64)),
        V::Integer(i) => Some(Num::I(i)),
        V::Real(f) if f.is_nan() => None,
        V::Real(f) => Some(Num::F(f)),
        // uint64 above 2^63-1: 8 bytes big-endian, ordered after integers.
        V::Blob(b) if unsigned && b.len() == 8 => {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            Some(Num::U(u64::from_be_bytes(a)))
        }
        _ => None,
    }
}

/// A PostgreSQL value as M4 orders it (typed as the export types it, so
/// both ways of reading give the same variant).
fn cell_num(c: &Cell) -> Option<Num> {
    match *c {
        Cell::Int(i) => Some(Num::I(i)),
        Cell::UInt(u) => Some(Num::U(u)),
        Cell::Real(x) if !x.is_nan() => Some(Num::F(x)),
        _ => None,
    }
}

/// The timestamp (third column) of a SQLite row, `None` if unusable.
fn sqlite_time(r: &rusqlite::Row<'_>) -> rusqlite::Result<Option<f64>> {
    Ok(match r.get_ref(2)? {
        rusqlite::types::ValueRef::Real(f) if !f.is_nan() => Some(f),
        rusqlite::types::ValueRef::Integer(i) => Some(i as f64),
        _ => None,
    })
}

fn sqlite_point(r: &rusqlite::Row<'_>, ty: OmlType) -> rusqlite::Result<Point> {
    let v = sqlite_num(r.get_ref(3)?, ty);
    Ok((r.get(0)?, r.get(1)?, sqlite_time(r)?, v))
}

/// Id, sender and timestamp of a PostgreSQL row read by [`Fields`] or
/// [`Columns`] (the first three columns).
fn pg_head(r: &postgres::Row) -> Result<(i64, i64, Option<f64>), postgres::Error> {
    let id = match r.try_get::<_, PgValue>(0)? {
        PgValue::Int(i) => i,
        _ => 0,
    };
    let sender = match r.try_get::<_, Option<PgValue>>(1)? {
        Some(PgValue::Int(i)) => i,
        _ => 0,
    };
    let t = match r.try_get::<_, Option<PgValue>>(2)? {
        Some(PgValue::Real(f)) if !f.is_nan() => Some(f),
        _ => None,
    };
    Ok((id, sender, t))
}

fn pg_point(r: &postgres::Row, ty: OmlType) -> Result<Point, postgres::Error> {
    let (id, sender, t) = pg_head(r)?;
    let v = pg_binary_cell(r.try_get(3)?, Kind::Field(ty));
    Ok((id, sender, t, cell_num(&v)))
}

/// The rows after an id, with several fields of one table at once: a
/// catch-up folds each row into every field's tiles from one read.
pub struct Fields<'a> {
    /// Stream table.
    pub table: &'a str,
    /// `oml_ts_server` or `oml_ts_client`.
    pub time: &'a str,
    /// The fields and their OML types.
    pub fields: &'a [(String, OmlType)],
}

impl Fields<'_> {
    /// `SELECT id, sender, time, fields… FROM table AS t`.
    fn select(&self) -> String {
        let mut s = format!(
            "SELECT t.oml_tuple_id, t.oml_sender_id, t.{}",
            quote(self.time)
        );
        for (f, _) in self.fields {
            s.push_str(", t.");
            s.push_str(&quote(f));
        }
        s.push_str(" FROM ");
        s.push_str(&quote(self.table));
        s.push_str(" AS t");
        s
    }
}

/// A row of [`after`]: id, sender, timestamp and one value per field.
pub type Row<'a> = (i64, i64, Option<f64>, &'a [Option<Num>]);

/// Calls `f` for every row with an id above `after` and at most `end`
/// (`None`: no bound), in id order.
pub fn after(
    src: &mut Source,
    c: &Fields<'_>,
    after: i64,
    end: Option<i64>,
    mut f: impl FnMut(Row<'_>),
) -> Result<(), ExportError> {
    if end.is_some_and(|e| e <= after) {
        return Ok(());
    }
    let end = end.unwrap_or(i64::MAX);
    let sql = format!(
        "{} WHERE t.oml_tuple_id > $1 AND t.oml_tuple_id <= $2 ORDER BY t.oml_tuple_id",
        c.select()
    );
    let mut vals: Vec<Option<Num>> = Vec::with_capacity(c.fields.len());
    match src {
        Source::Sqlite(db) => {
            let mut st = db.prepare_cached(&sql.replace("$1", "?1").replace("$2", "?2"))?;
            let mut rows = st.query([after, end])?;
            while let Some(r) = rows.next()? {
                let t = sqlite_time(r)?;
                vals.clear();
                for (k, (_, ty)) in c.fields.iter().enumerate() {
                    vals.push(sqlite_num(r.get_ref(3 + k)?, *ty));
                }
                f((r.get(0)?, r.get(1)?, t, &vals));
            }
        }
        Source::Postgres(db) if after > 0 => {
            // A catch-up (after each commit, before each request) reads a
            // few new rows: a plain statement on this connection, prepared
            // once (COPY would open a connection, a backend process, every
            // time), FETCH rows per call (row by row, the blocking client
            // costs more than the rows).
            //
            // With a known end, each call reads a window of at most FETCH
            // ids: PostgreSQL's generic plan for a range between two
            // parameters is a bitmap scan and a sort, which reads the whole
            // range whatever the LIMIT (800 ms for 2 M rows, measured), so
            // the range itself must be small. Without an end, `id > $1`
            // alone keeps its ordered index scan, which stops at the LIMIT.
            let windowed = end < i64::MAX;
            let sql = if windowed {
                sql.replace("$1", "$1::int8").replace("$2", "$2::int8")
            } else {
                format!(
                    "{} WHERE t.oml_tuple_id > $1::int8 ORDER BY t.oml_tuple_id LIMIT {FETCH}",
                    c.select()
                )
            };
            let st = db.prepared(&sql)?;
            let mut from = after;
            loop {
                let hi = end.min(from.saturating_add(FETCH as i64));
                let rows = if windowed {
                    db.query(&st, &[&from, &hi])?
                } else {
                    db.query(&st, &[&from])?
                };
                for r in &rows {
                    let (id, sender, t) = pg_head(r)?;
                    vals.clear();
                    for (k, (_, ty)) in c.fields.iter().enumerate() {
                        vals.push(cell_num(&pg_binary_cell(
                            r.try_get(3 + k)?,
                            Kind::Field(*ty),
                        )));
                    }
                    from = id;
                    f((id, sender, t, &vals));
                }
                if windowed {
                    // Ids below the end that no row holds (a rolled-back
                    // transaction's) are passed over.
                    from = hi;
                    if hi >= end {
                        break;
                    }
                } else if rows.len() < FETCH {
                    break;
                }
            }
        }
        Source::Postgres(db) => {
            // A build reads every row: binary COPY. COPY takes no
            // parameters, and `after` is our own integer, not caller input.
            let sql = sql
                .replace("$1", &after.to_string())
                .replace("$2", &end.to_string());
            let meta = |name: &str, kind| Column {
                name: name.into(),
                kind,
            };
            let mut cols = vec![
                meta("id", Kind::Meta),
                meta("sender", Kind::Meta),
                meta("t", Kind::Time),
            ];
            cols.extend(c.fields.iter().map(|(n, ty)| meta(n, Kind::Field(*ty))));
            pgcopy::run(db, &sql, &cols, |cells| {
                let int = |c: &Cell| match c {
                    Cell::Int(i) => *i,
                    _ => 0,
                };
                let t = match cells[2] {
                    Cell::Real(t) if !t.is_nan() => Some(t),
                    _ => None,
                };
                vals.clear();
                vals.extend(cells[3..].iter().map(cell_num));
                f((int(&cells[0]), int(&cells[1]), t, &vals));
                Ok(())
            })?;
        }
    }
    Ok(())
}

/// Rows [`committed`] passed on since the process started.
static FOLDED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Rows tiles folded from the writer's committed rows (not read from the
/// table) since the process started.
pub fn rows_from_commits() -> u64 {
    FOLDED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Calls `f` for every row of `rows` (a commit's, handed over by the
/// writer: see [`store::postgres::committed`]) with an id above `after`,
/// decoding each value as a read of the table does. Returns the last id
/// passed to `f` (`None`: none was), which is short of the batch's last
/// if a column is not in the rows or a row is not well formed: the rest
/// is then read from the table.
pub fn committed(
    rows: &CommittedRows,
    c: &Fields<'_>,
    after: i64,
    mut f: impl FnMut(Row<'_>),
) -> Option<i64> {
    let col = |name: &str| {
        let i = rows.columns.iter().position(|(n, _)| n == name)?;
        Some((i, rows.columns[i].1.clone()))
    };
    let (sender, time) = (col("oml_sender_id")?, col(c.time)?);
    let fields: Vec<(usize, Type, OmlType)> = c
        .fields
        .iter()
        .map(|(n, ty)| col(n).map(|(i, t)| (i, t, *ty)))
        .collect::<Option<_>>()?;
    let decode = |raw: Option<&[u8]>, ty: &Type| match raw {
        None => Some(None),
        Some(b) => PgValue::from_sql(ty, b).ok().map(Some),
    };
    let start = usize::try_from(after + 1 - rows.first).ok()?;
    let mut raw = Vec::with_capacity(rows.columns.len());
    let mut vals: Vec<Option<Num>> = Vec::with_capacity(fields.len());
    let mut last = None;
    for i in start..rows.len() {
        let mut row = || -> Option<(i64, Option<f64>)> {
            if !rows.fields(i, &mut raw) {
                return None;
            }
            let s = match decode(raw[sender.0], &sender.1)? {
                Some(PgValue::Int(i)) => i,
                _ => 0,
            };
            let t = match decode(raw[time.0], &time.1)? {
                Some(PgValue::Real(t)) if !t.is_nan() => Some(t),
                _ => None,
            };
            vals.clear();
            for (k, ty, oml) in &fields {
                let v = decode(raw[*k], ty)?;
                vals.push(cell_num(&pg_binary_cell(v, Kind::Field(*oml))));
            }
            Some((s, t))
        };
        let Some((s, t)) = row() else { break };
        let id = rows.first + i as i64;
        f((id, s, t, &vals));
        last = Some(id);
        FOLDED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    last
}

/// Calls `f` for every row of the leaves `(sender, first id, last id)`.
pub fn leaves(
    src: &mut Source,
    c: &Columns<'_>,
    leaves: &[(i64, i64, i64)],
    mut f: impl FnMut(Point),
) -> Result<(), ExportError> {
    if leaves.is_empty() {
        return Ok(());
    }
    match src {
        Source::Sqlite(db) => {
            let sql = format!(
                "{} WHERE t.oml_tuple_id BETWEEN ?1 AND ?2 AND t.oml_sender_id = ?3",
                c.select()
            );
            let mut st = db.prepare(&sql)?;
            for &(s, a, b) in leaves {
                let mut rows = st.query([a, b, s])?;
                while let Some(r) = rows.next()? {
                    f(sqlite_point(r, c.ty)?);
                }
            }
        }
        Source::Postgres(db) => {
            // One statement, one primary-key range scan per leaf: the
            // lateral subquery behind OFFSET 0 is not flattened into a
            // join (which the planner would run as a scan of the table).
            let sql = format!(
                "SELECT t.* FROM unnest($1::int8[], $2::int8[], $3::int8[]) AS r(s, a, b) \
                 CROSS JOIN LATERAL ({} WHERE t.oml_tuple_id BETWEEN r.a AND r.b \
                 AND t.oml_sender_id = r.s OFFSET 0) AS t",
                c.select()
            );
            let s: Vec<i64> = leaves.iter().map(|l| l.0).collect();
            let a: Vec<i64> = leaves.iter().map(|l| l.1).collect();
            let b: Vec<i64> = leaves.iter().map(|l| l.2).collect();
            for r in db.query(sql.as_str(), &[&s, &a, &b])? {
                f(pg_point(&r, c.ty)?);
            }
        }
    }
    Ok(())
}
