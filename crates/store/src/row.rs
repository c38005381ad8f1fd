//! Rows on their way into a stream table.

use omsp::Value;

/// Handle of a stream table inside one open store (returned by schema
/// registration, valid until the store is closed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TableId(pub(crate) usize);

/// One tuple, ready to be stored: the `oml_*` columns plus the field values.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Target table.
    pub table: TableId,
    /// `oml_sender_id`: the sender's id in `_senders`.
    pub sender: i64,
    /// `oml_seq`: the sender's sequence number, as received.
    pub seq: i64,
    /// `oml_ts_client`: sender timestamp rebased to the database start time.
    pub ts_client: f64,
    /// `oml_ts_server`: arrival time at the server, relative to the database start time.
    pub ts_server: f64,
    /// Field values in schema order.
    pub values: Vec<Value>,
}
