//! Reading a PostgreSQL query through `COPY (…) TO STDOUT (FORMAT binary)`:
//! the rows arrive as one byte stream, each value in its binary send
//! format, decoded exactly by [`PgValue`]. COPY cannot take parameters, so
//! this serves statements without any (full exports, tile builds); the
//! others use the extended protocol.
//!
//! PostgreSQL sends one protocol message per row. The blocking client
//! crosses into its runtime for every message, which halved the rate
//! (measured: 0.30 against 0.62–0.65 M rows/s for the same 10 M rows), so
//! the COPY runs on an asynchronous connection of its own, on a
//! current-thread runtime entered once per batch of messages: the caller's
//! row function still runs outside any runtime (it may block, e.g. on an
//! HTTP body's channel).

use bytes::{Buf, Bytes, BytesMut};
use futures_util::TryStreamExt;
use postgres::types::{FromSql, Type};

use super::cell::{Cell, Column};
use super::error::ExportError;
use super::pgbin::{pg_binary_cell, PgValue};
use super::source::Pg;

/// The 11-byte signature that opens a binary COPY stream.
const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

/// Messages taken from the connection per runtime entry.
const BATCH: usize = 512;

/// Runs `select` (no parameters) through binary COPY, calling `row` with
/// each row's cells; `cols` says how to type them.
pub fn run(
    pg: &mut Pg,
    select: &str,
    cols: &[Column],
    mut row: impl FnMut(&[Cell]) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    // The column types, which the binary COPY stream does not carry.
    let types: Vec<Type> = pg
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
    // The budget set on the main connection applies to this one too.
    let timeout: String = pg
        .query_one("SHOW statement_timeout", &[])?
        .get::<_, String>(0);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ExportError::Io)?;
    let config = pg.copy_config().clone();
    let hosts = config.get_hosts().to_vec();
    let copy = format!("COPY ({select}) TO STDOUT (FORMAT binary)");
    let stream = rt.block_on(async move {
        let (client, conn) = config.connect(tokio_postgres::NoTls).await?;
        tokio::spawn(conn);
        let pid: i32 = client
            .query_one("SELECT pg_backend_pid()", &[])
            .await?
            .get(0);
        crate::priority::backend_follows_thread(pid, &hosts);
        client
            .batch_execute(&format!(
                "SET statement_timeout = '{}'",
                timeout.replace('\'', "")
            ))
            .await?;
        let stream = client.copy_out(copy.as_str()).await?;
        // The stream keeps the connection's request alive; the client is
        // dropped when the stream is.
        Ok::<_, tokio_postgres::Error>((client, Box::pin(stream)))
    });
    let (_client, mut stream) = stream.map_err(postgres_error)?;
    let mut parser = Parser::new(&types, cols);
    let mut batch: Vec<Bytes> = Vec::with_capacity(BATCH);
    loop {
        batch.clear();
        let done = rt.block_on(async {
            while batch.len() < BATCH {
                match stream.try_next().await? {
                    Some(b) => batch.push(b),
                    None => return Ok::<_, tokio_postgres::Error>(true),
                }
            }
            Ok(false)
        });
        let done = done.map_err(postgres_error)?;
        for chunk in batch.drain(..) {
            parser.feed(chunk, &mut row)?;
        }
        if done {
            return parser.finish();
        }
    }
}

/// The binary COPY format, fed in chunks: a row split across chunks is
/// kept until it is whole; whole rows are decoded where they lie.
struct Parser<'a> {
    types: &'a [Type],
    cols: &'a [Column],
    /// The start of a row not yet whole (or the header).
    pending: BytesMut,
    header_read: bool,
    trailer_read: bool,
    cells: Vec<Cell>,
}

impl<'a> Parser<'a> {
    fn new(types: &'a [Type], cols: &'a [Column]) -> Parser<'a> {
        Parser {
            types,
            cols,
            pending: BytesMut::new(),
            header_read: false,
            trailer_read: false,
            cells: Vec::with_capacity(cols.len()),
        }
    }

    fn feed(
        &mut self,
        chunk: Bytes,
        row: &mut impl FnMut(&[Cell]) -> Result<(), ExportError>,
    ) -> Result<(), ExportError> {
        if self.pending.is_empty() {
            let used = self.consume(&chunk, row)?;
            self.pending.extend_from_slice(&chunk[used..]);
        } else {
            self.pending.extend_from_slice(&chunk);
            let pending = std::mem::take(&mut self.pending);
            let used = self.consume(&pending, row)?;
            self.pending = pending;
            self.pending.advance(used);
        }
        Ok(())
    }

    /// Decodes every whole item at the start of `buf`; returns the bytes used.
    fn consume(
        &mut self,
        buf: &[u8],
        row: &mut impl FnMut(&[Cell]) -> Result<(), ExportError>,
    ) -> Result<usize, ExportError> {
        let mut at = 0;
        if !self.header_read {
            let Some(n) = header_len(buf)? else {
                return Ok(0);
            };
            self.header_read = true;
            at = n;
        }
        while at < buf.len() {
            if self.trailer_read {
                return Err(bad("data after the end marker"));
            }
            let Some(n) = self.row(&buf[at..], row)? else {
                break;
            };
            at += n;
        }
        Ok(at)
    }

    /// One row (or the end marker) from the start of `buf`, if it is whole.
    fn row(
        &mut self,
        buf: &[u8],
        row: &mut impl FnMut(&[Cell]) -> Result<(), ExportError>,
    ) -> Result<Option<usize>, ExportError> {
        let Some(n) = be_i16(buf, 0) else {
            return Ok(None);
        };
        if n == -1 {
            self.trailer_read = true;
            return Ok(Some(2));
        }
        if n as usize != self.cols.len() {
            return Err(bad("a row with an unexpected number of columns"));
        }
        // Check the row is whole before decoding any of it.
        let mut at = 2;
        for _ in 0..self.cols.len() {
            let Some(len) = be_i32(buf, at) else {
                return Ok(None);
            };
            at += 4 + usize::try_from(len).unwrap_or(0);
            if at > buf.len() {
                return Ok(None);
            }
        }
        self.cells.clear();
        let mut at = 2;
        for (ty, col) in self.types.iter().zip(self.cols) {
            let len = be_i32(buf, at).expect("checked above");
            at += 4;
            if len < 0 {
                self.cells.push(Cell::Null);
                continue;
            }
            let raw = &buf[at..at + len as usize];
            at += len as usize;
            let v = PgValue::from_sql(ty, raw).map_err(decode)?;
            self.cells.push(pg_binary_cell(Some(v), col.kind));
        }
        row(&self.cells)?;
        Ok(Some(at))
    }

    fn finish(self) -> Result<(), ExportError> {
        if !self.trailer_read || !self.pending.is_empty() {
            return Err(bad("the stream ended inside a row"));
        }
        Ok(())
    }
}

/// The header's length (signature, flags, extension area), if whole.
fn header_len(buf: &[u8]) -> Result<Option<usize>, ExportError> {
    if buf.len() < 19 {
        return Ok(None);
    }
    if &buf[..11] != SIGNATURE {
        return Err(bad("no binary COPY signature"));
    }
    let ext = be_i32(buf, 15).expect("19 bytes") as u32 as usize;
    Ok((buf.len() >= 19 + ext).then_some(19 + ext))
}

fn be_i16(buf: &[u8], at: usize) -> Option<i16> {
    Some(i16::from_be_bytes(buf.get(at..at + 2)?.try_into().ok()?))
}

fn be_i32(buf: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_be_bytes(buf.get(at..at + 4)?.try_into().ok()?))
}

/// The server's errors (a cancelled statement among them: the time
/// budget) keep their PostgreSQL identity, so a timeout is told as one.
fn postgres_error(e: tokio_postgres::Error) -> ExportError {
    ExportError::Postgres(e)
}

fn bad(what: &str) -> ExportError {
    ExportError::Invalid(format!("PostgreSQL binary COPY: {what}"))
}

fn decode(e: Box<dyn std::error::Error + Sync + Send>) -> ExportError {
    ExportError::Invalid(format!("PostgreSQL binary value: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::Kind;

    /// A binary COPY stream of two INT8 rows (one NULL), cut at every
    /// position, parses to the same rows.
    #[test]
    fn rows_split_anywhere_parse_the_same() {
        let mut s = Vec::new();
        s.extend_from_slice(SIGNATURE);
        s.extend_from_slice(&0i32.to_be_bytes());
        s.extend_from_slice(&4i32.to_be_bytes());
        s.extend_from_slice(b"xxxx");
        for v in [Some(7i64), None, Some(-1)] {
            s.extend_from_slice(&1i16.to_be_bytes());
            match v {
                Some(v) => {
                    s.extend_from_slice(&8i32.to_be_bytes());
                    s.extend_from_slice(&v.to_be_bytes());
                }
                None => s.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        s.extend_from_slice(&(-1i16).to_be_bytes());
        let types = [Type::INT8];
        let cols = [Column {
            name: "n".into(),
            kind: Kind::Meta,
        }];
        for a in 0..=s.len() {
            for b in a..=s.len() {
                let mut p = Parser::new(&types, &cols);
                let mut got = Vec::new();
                let mut f = |c: &[Cell]| {
                    got.push(c[0].clone());
                    Ok(())
                };
                for part in [&s[..a], &s[a..b], &s[b..]] {
                    p.feed(Bytes::copy_from_slice(part), &mut f).unwrap();
                }
                p.finish().unwrap();
                assert_eq!(
                    got,
                    vec![Cell::Int(7), Cell::Null, Cell::Int(-1)],
                    "cut at {a}, {b}"
                );
            }
        }
        let mut p = Parser::new(&types, &cols);
        p.feed(Bytes::copy_from_slice(&s[..s.len() - 3]), &mut |_| Ok(()))
            .unwrap();
        assert!(p.finish().is_err(), "a cut stream is an error");
    }
}
