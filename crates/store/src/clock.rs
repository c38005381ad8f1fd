//! `_streamgauge_clock`: what the server knows about each sender's clock.
//!
//! One row per sender (`sender_id` as in `_senders`), replaced as newer
//! information arrives: the server's own estimate of the offset between the
//! sender's clock and its own, taken when the sender's latest connection
//! started (see [`ClockEstimate`]), and the sender's latest `_client_clock`
//! report of its synchronisation state (see [`ClockReport`]). It is not a
//! stream table (no `oml_*` columns, no `table_` bookkeeping row), so
//! readers of the OML layout never see it among the streams; every
//! `_client_clock` report is also stored, as sent, in the ordinary stream
//! table `_client_clock`. The reference for readers is `docs/clock.md`.

/// The table's name.
pub const CLOCK_TABLE: &str = "_streamgauge_clock";

/// Creates the table if needed. The same text serves SQLite (which gives
/// `DOUBLE PRECISION` the REAL affinity) and PostgreSQL. `offset` is a
/// reserved word in PostgreSQL, hence `clock_offset`.
pub const CREATE_CLOCK: &str = "CREATE TABLE IF NOT EXISTS _streamgauge_clock (\
     sender_id INTEGER PRIMARY KEY, \
     sender TEXT, \
     start_time BIGINT, \
     connected_at DOUBLE PRECISION, \
     clock_offset DOUBLE PRECISION, \
     offset_samples INTEGER, \
     source TEXT, \
     daemon TEXT, \
     synchronized INTEGER, \
     sync_offset DOUBLE PRECISION, \
     maxerror DOUBLE PRECISION, \
     esterror DOUBLE PRECISION, \
     reported_at DOUBLE PRECISION);";

/// Upsert of an estimate (`?N` placeholders; PostgreSQL's use `$N`).
pub(crate) const UPSERT_ESTIMATE: &str = "INSERT INTO _streamgauge_clock \
     (sender_id, sender, start_time, connected_at, clock_offset, offset_samples) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (sender_id) DO UPDATE SET \
     sender = excluded.sender, start_time = excluded.start_time, \
     connected_at = excluded.connected_at, clock_offset = excluded.clock_offset, \
     offset_samples = excluded.offset_samples";

/// Upsert of a report (`?N` placeholders; PostgreSQL's use `$N`).
pub(crate) const UPSERT_REPORT: &str = "INSERT INTO _streamgauge_clock \
     (sender_id, sender, source, daemon, synchronized, sync_offset, maxerror, esterror, \
     reported_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) \
     ON CONFLICT (sender_id) DO UPDATE SET \
     sender = excluded.sender, source = excluded.source, daemon = excluded.daemon, \
     synchronized = excluded.synchronized, sync_offset = excluded.sync_offset, \
     maxerror = excluded.maxerror, esterror = excluded.esterror, \
     reported_at = excluded.reported_at";

/// The SQL with PostgreSQL's `$N` placeholders.
pub(crate) fn pg(sql: &str) -> String {
    sql.replace('?', "$")
}

/// The server's estimate of a sender's clock offset on one connection.
///
/// For each tuple, `start-time + timestamp` is the sender's clock when it
/// stamped the tuple and the server's clock when it read it is later by the
/// network and queueing delay `d ≥ 0`, so `sender − server = offset − d`:
/// each tuple gives a lower bound of the true offset, and the estimate is
/// the largest over the connection's first tuples.
#[derive(Debug, Clone, PartialEq)]
pub struct ClockEstimate {
    /// The sender's `oml_sender_id`.
    pub sender: i64,
    /// Its `sender-id`.
    pub name: String,
    /// The header's `start-time` (Unix seconds, sender's clock).
    pub start_time: i64,
    /// Server's Unix time when the connection's first tuple was read.
    pub connected_at: f64,
    /// Seconds: sender's clock minus server's clock (a lower bound: the
    /// delay of the best tuple is not subtracted).
    pub offset: f64,
    /// How many tuples the estimate is the best of.
    pub samples: u32,
}

/// A sender's own report of its clock's synchronisation state (a
/// `_client_clock` tuple).
#[derive(Debug, Clone, PartialEq)]
pub struct ClockReport {
    /// The sender's `oml_sender_id`.
    pub sender: i64,
    /// Its `sender-id`.
    pub name: String,
    /// `ptp`, `ntp`, `none` or `unknown`.
    pub source: String,
    /// The time daemon the sender found running, empty if none.
    pub daemon: String,
    /// The sender's kernel says its clock is synchronised.
    pub synchronized: bool,
    /// Seconds: the offset from its reference the sender's daemon last applied.
    pub offset: f64,
    /// Seconds: the sender's kernel's maximum error (−1: unknown).
    pub maxerror: f64,
    /// Seconds: the sender's kernel's estimated error (−1: unknown).
    pub esterror: f64,
    /// Server's Unix time when the report was read.
    pub reported_at: f64,
}

impl ClockReport {
    /// Reads a `_client_clock` tuple (fields by name, so that a later
    /// client with more fields still reads); `None` if a field is missing
    /// or of another type.
    pub fn from_tuple(
        schema: &omsp::Schema,
        values: &[omsp::Value],
        sender: i64,
        name: &str,
        reported_at: f64,
    ) -> Option<ClockReport> {
        use omsp::Value;
        let get = |field: &str| {
            let i = schema.fields.iter().position(|f| f.name == field)?;
            values.get(i)
        };
        let text = |field: &str| match get(field) {
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        };
        let num = |field: &str| match get(field) {
            Some(Value::Double(x)) => Some(*x),
            _ => None,
        };
        Some(ClockReport {
            sender,
            name: name.to_owned(),
            source: text("source")?,
            daemon: text("daemon").unwrap_or_default(),
            synchronized: matches!(get("synchronized"), Some(Value::Int32(1))),
            offset: num("offset")?,
            maxerror: num("maxerror")?,
            esterror: num("esterror")?,
            reported_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use omsp::{Schema, Value};

    #[test]
    fn reads_a_tuple_by_field_name() {
        let s = Schema::parse(
            "5 _client_clock source:string daemon:string synchronized:int32 \
             offset:double maxerror:double esterror:double",
        )
        .unwrap();
        let v = vec![
            Value::String("ntp".into()),
            Value::String("chronyd".into()),
            Value::Int32(1),
            Value::Double(1e-5),
            Value::Double(0.02),
            Value::Double(1e-4),
        ];
        let r = ClockReport::from_tuple(&s, &v, 3, "n1", 10.0).unwrap();
        assert_eq!(r.source, "ntp");
        assert!(r.synchronized);
        assert_eq!(r.maxerror, 0.02);
        assert!(ClockReport::from_tuple(&s, &v[..2], 3, "n1", 10.0).is_none());
    }

    #[test]
    fn placeholders() {
        assert!(pg(UPSERT_REPORT).contains("$9"));
        assert!(!pg(UPSERT_ESTIMATE).contains('?'));
    }
}
