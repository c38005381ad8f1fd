//! Reading a PostgreSQL query through `COPY (…) TO STDOUT (FORMAT binary)`:
//! the rows arrive as one byte stream (no per-row protocol round in the
//! client library), each value in its binary send format, decoded exactly
//! by [`PgValue`]. COPY cannot take parameters, so this serves statements
//! without any (full exports); the others use the extended protocol.

use std::io::{BufRead, BufReader, Read};

use postgres::types::{FromSql, Type};

use super::cell::{Cell, Column};
use super::error::ExportError;
use super::pgbin::{pg_binary_cell, PgValue};

/// The 11-byte signature that opens a binary COPY stream.
const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

/// Runs `select` (no parameters) through binary COPY, calling `row` with
/// each row's cells; `cols` says how to type them.
pub fn run(
    c: &mut postgres::Client,
    select: &str,
    cols: &[Column],
    mut row: impl FnMut(&[Cell]) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    // The column types, which the binary COPY stream does not carry.
    let types: Vec<Type> = c
        .prepare(select)?
        .columns()
        .iter()
        .map(|c| c.type_().clone())
        .collect();
    if types.len() != cols.len() {
        return Err(ExportError::Invalid(format!(
            "the query returns {} columns, {} expected",
            types.len(),
            cols.len()
        )));
    }
    let reader = c.copy_out(&format!("COPY ({select}) TO STDOUT (FORMAT binary)"))?;
    let mut r = BufReader::with_capacity(1 << 16, reader);
    let mut head = [0u8; 19];
    r.read_exact(&mut head).map_err(copy_error)?;
    if &head[..11] != SIGNATURE {
        return Err(bad("no binary COPY signature"));
    }
    let ext = u32::from_be_bytes([head[15], head[16], head[17], head[18]]);
    std::io::copy(&mut (&mut r).take(u64::from(ext)), &mut std::io::sink()).map_err(copy_error)?;
    let mut cells = Vec::with_capacity(cols.len());
    let mut buf = Vec::new();
    loop {
        let n = i16::from_be_bytes(read::<2>(&mut r)?);
        if n == -1 {
            break;
        }
        if n as usize != cols.len() {
            return Err(bad("a row with an unexpected number of columns"));
        }
        cells.clear();
        for (ty, col) in types.iter().zip(cols) {
            let len = i32::from_be_bytes(read::<4>(&mut r)?);
            if len < 0 {
                cells.push(Cell::Null);
                continue;
            }
            let len = len as usize;
            // Most values are in the buffer already: decode them in place.
            let avail = r.fill_buf().map_err(copy_error)?;
            let v = if avail.len() >= len {
                let v = PgValue::from_sql(ty, &avail[..len]).map_err(decode)?;
                r.consume(len);
                v
            } else {
                buf.resize(len, 0);
                r.read_exact(&mut buf).map_err(copy_error)?;
                PgValue::from_sql(ty, &buf).map_err(decode)?
            };
            cells.push(pg_binary_cell(Some(v), col.kind));
        }
        row(&cells)?;
    }
    Ok(())
}

fn read<const N: usize>(r: &mut impl Read) -> Result<[u8; N], ExportError> {
    let mut b = [0u8; N];
    r.read_exact(&mut b).map_err(copy_error)?;
    Ok(b)
}

/// The COPY reader reports the server's errors (a cancelled statement
/// among them: the time budget) as I/O errors wrapping them: give them
/// back their PostgreSQL identity, so a timeout is told as one.
fn copy_error(e: std::io::Error) -> ExportError {
    if e.get_ref()
        .is_some_and(|inner| inner.is::<postgres::Error>())
    {
        if let Some(Ok(pg)) = e
            .into_inner()
            .map(|inner| inner.downcast::<postgres::Error>())
        {
            return ExportError::Postgres(*pg);
        }
        unreachable!("checked just above");
    }
    ExportError::Io(e)
}

fn bad(what: &str) -> ExportError {
    ExportError::Invalid(format!("PostgreSQL binary COPY: {what}"))
}

fn decode(e: Box<dyn std::error::Error + Sync + Send>) -> ExportError {
    ExportError::Invalid(format!("PostgreSQL binary value: {e}"))
}
