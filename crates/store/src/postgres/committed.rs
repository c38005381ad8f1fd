//! The rows a commit stored, as live readers can take them without
//! reading them back from the database.
//!
//! A live tail on PostgreSQL otherwise reads every new row back from the
//! table right after the writer committed it: a second backend scanning
//! the pages the COPY is filling, on the cores that ingest. The writer
//! already holds those rows, encoded in binary COPY form (the form
//! PostgreSQL's binary protocol sends them back in, field by field), until
//! the commit ends. After a commit it can hand them over, if it can tell
//! which `oml_tuple_id` each got.
//!
//! The ids come from the table's sequence, so the writer does not choose
//! them. It knows them when it has an end `e0` below every id the commit
//! took: the table's highest committed id read at the transaction's
//! `BEGIN`, before it took any (from the first time someone followed the
//! domain live on), or else the one read after its previous commit. Every
//! id a sequence gives out is above every id it gave before, so the
//! commit's rows all lie above `e0`. If the table's highest committed id
//! is then `e` and the commit stored `e - e0` rows, those rows hold
//! exactly the ids `e0 + 1 ..= e`, in the order of the COPY (a COPY takes
//! its ids in row order). Anything else in that range (another server's
//! rows committed while the transaction was open, ids burnt by a
//! rolled-back attempt, a refused row) makes the count differ, and the
//! rows are then not handed over: readers read them from the table as
//! before.
//!
//! Reading the ends at `BEGIN` costs nothing in waiting (it rides in the
//! `BEGIN`'s round trip) and lets the first commit after a reader came be
//! handed over too, where the end read after the previous commit would
//! not exist (nobody was following then).

use std::sync::Arc;

use ::postgres::types::Type;

use super::columns::Column;

/// A table's encoded rows back to back, and where each ends.
pub type Encoded = (Vec<u8>, Vec<usize>);

/// Rows one commit stored in one table, with their ids.
#[derive(Debug)]
pub struct CommittedRows {
    /// The table.
    pub table: String,
    /// `oml_tuple_id` of the first row; the others follow without a gap.
    pub first: i64,
    /// The rows back to back, each in binary COPY form (a 16-bit field
    /// count, then per field a 32-bit length, −1 for NULL, and the value
    /// in its type's binary form).
    data: Vec<u8>,
    /// Where each row ends in `data`.
    ends: Vec<usize>,
    /// The columns of each row, in order: name and type.
    pub columns: Arc<[(String, Type)]>,
}

impl CommittedRows {
    /// Rows `data` (ending at `ends`) of `table`, the first with id
    /// `first`. The rows are checked when read ([`CommittedRows::fields`]).
    pub fn new(
        table: String,
        first: i64,
        (data, ends): Encoded,
        columns: Arc<[(String, Type)]>,
    ) -> CommittedRows {
        CommittedRows {
            table,
            first,
            data,
            ends,
            columns,
        }
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True if no row is held.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// `oml_tuple_id` of the last row.
    pub fn last(&self) -> i64 {
        self.first + self.ends.len() as i64 - 1
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.data.len()
    }

    /// The fields of row `i` (0 is the first), in column order, into
    /// `out` (`None` for NULL); `false` if the row is not there or is not
    /// well formed.
    pub fn fields<'a>(&'a self, i: usize, out: &mut Vec<Option<&'a [u8]>>) -> bool {
        out.clear();
        let Some(&end) = self.ends.get(i) else {
            return false;
        };
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        let row = &self.data[start..end];
        let Some(count) = row.get(..2) else {
            return false;
        };
        let count = i16::from_be_bytes([count[0], count[1]]);
        let mut at = 2;
        for _ in 0..count.max(0) {
            let Some(len) = row.get(at..at + 4) else {
                return false;
            };
            let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
            at += 4;
            if len < 0 {
                out.push(None);
                continue;
            }
            let Some(v) = row.get(at..at + len as usize) else {
                return false;
            };
            out.push(Some(v));
            at += len as usize;
        }
        at == row.len() && out.len() == self.columns.len()
    }
}

/// The type PostgreSQL's binary protocol names a column of ours with.
pub(super) fn pg_type(c: Column) -> Option<Type> {
    Some(match c {
        Column::Int2 => Type::INT2,
        Column::Int4 => Type::INT4,
        Column::Int8 => Type::INT8,
        Column::Numeric => Type::NUMERIC,
        Column::Float4 => Type::FLOAT4,
        Column::Float8 => Type::FLOAT8,
        Column::Bool => Type::BOOL,
        Column::Bytea => Type::BYTEA,
        Column::Text => Type::TEXT,
        Column::Other(_) => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::postgres::columns::Layout;
    use crate::postgres::copy::CopyBuffer;
    use omsp::{Field, OmlType, Schema, Value};

    #[test]
    fn fields_split_each_row_as_encoded() {
        let schema = Schema {
            index: 1,
            name: "t".into(),
            fields: vec![
                Field::new("n", OmlType::Int32),
                Field::new("s", OmlType::String),
            ],
        };
        let layout = Layout::ours(&schema, Default::default());
        let mut buf = CopyBuffer::default();
        for (seq, s) in [(1, "ab"), (2, "")] {
            let row = crate::Row {
                table: crate::TableId(0),
                sender: 3,
                seq,
                ts_client: f64::NAN,
                ts_server: 0.5,
                values: vec![Value::Int32(-seq as i32), Value::String(s.into())],
            };
            buf.push(&schema, &layout, &row).unwrap();
        }
        let cols: Arc<[(String, Type)]> = ["oml_sender_id", "oml_seq", "ts_c", "ts_s", "n", "s"]
            .iter()
            .map(|n| (n.to_string(), Type::INT8))
            .collect();
        let rows = CommittedRows::new("t".into(), 41, buf.take(), cols);
        assert_eq!((rows.len(), rows.first, rows.last()), (2, 41, 42));
        let mut f = Vec::new();
        assert!(rows.fields(1, &mut f));
        assert_eq!(f[0], Some(&3i32.to_be_bytes()[..]));
        assert_eq!(f[1], Some(&2i64.to_be_bytes()[..]));
        assert_eq!(f[2], None, "a NaN timestamp is NULL");
        assert_eq!(f[3], Some(&0.5f64.to_be_bytes()[..]));
        assert_eq!(f[4], Some(&(-2i32).to_be_bytes()[..]));
        assert_eq!(f[5], Some(&b""[..]));
        assert!(rows.fields(0, &mut f) && f[5] == Some(&b"ab"[..]));
        assert!(!rows.fields(2, &mut f), "no third row");
    }
}
