//! Query parameters of `GET …/rows`, parsed and checked against the
//! stream before any SQL is written.

mod derive;
pub mod instant;
pub mod predicate;

use crate::error::QueryError;
use crate::export::Column;
pub use derive::{is_rate_field, Derive, DEFAULT_GAPS};
pub use predicate::{Op, Predicate};

/// Default `limit` of JSON answers (file formats have none).
pub const DEFAULT_JSON_LIMIT: u64 = 10_000;
/// Largest `limit` of a JSON answer (it is an array in one document).
pub const MAX_JSON_LIMIT: u64 = 1_000_000;
/// Largest `points`.
pub const MAX_POINTS: u32 = 100_000;
/// Most columns in `fields=` (repeats count). Each becomes a column of
/// one SQL statement: SQLite refuses more than 2000 (a 500), PostgreSQL
/// 1664, and a long list cut an answer off after its 200. No
/// stream needs more in one request; the default (all columns) is not capped.
pub const MAX_FIELDS: usize = 1000;
/// Most `where` conditions: they are ANDed in one SQL expression, whose
/// depth SQLite caps at 1000.
pub const MAX_PREDICATES: usize = 100;
/// Most `sender=` names or ids: ORed in one SQL expression, as above.
pub const MAX_SENDERS: usize = 100;

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `{"fields":[…],"rows":[[…]],"next":…}`.
    Json,
    /// RFC 4180 with a header row (as `streamgauge export`).
    Csv,
    /// One JSON object per line (as `streamgauge export`).
    Jsonl,
    /// Apache Arrow IPC stream.
    Arrow,
    /// Apache Parquet (as `streamgauge export`).
    Parquet,
}

impl Format {
    /// The `Content-Type` of an answer.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Json => "application/json",
            Format::Csv => "text/csv; charset=utf-8",
            Format::Jsonl => "application/x-ndjson",
            Format::Arrow => "application/vnd.apache.arrow.stream",
            Format::Parquet => "application/vnd.apache.parquet",
        }
    }
}

/// Which timestamp column `from`, `to` and `points` use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeAxis {
    /// `oml_ts_server` (arrival at the server).
    Server,
    /// `oml_ts_client` (the sender's clock, rebased).
    Client,
}

impl TimeAxis {
    /// The column.
    pub fn column(self) -> &'static str {
        match self {
            TimeAxis::Server => "oml_ts_server",
            TimeAxis::Client => "oml_ts_client",
        }
    }
}

/// Which client timestamps an answer carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// `oml_ts_client` as stored: the sender's clock.
    Raw,
    /// `oml_ts_client` minus the server's estimate of the sender's clock
    /// offset (`_streamgauge_clock.clock_offset`, 0 for a sender without
    /// one): the sender's timestamps on the server's clock.
    Corrected,
}

/// A checked `rows` request.
#[derive(Debug, Clone)]
pub struct RowsRequest {
    /// Output columns, in order.
    pub columns: Vec<Column>,
    /// Lower time bound, seconds after the start (inclusive).
    pub from: Option<f64>,
    /// Upper time bound, seconds after the start (inclusive).
    pub to: Option<f64>,
    /// Time column of the bounds and the buckets.
    pub time: TimeAxis,
    /// Senders (id or name); empty = all.
    pub senders: Vec<String>,
    /// `where` predicates, all of which must hold.
    pub predicates: Vec<Predicate>,
    /// Most rows in the answer.
    pub limit: Option<u64>,
    /// Only rows with `oml_tuple_id` above this (the `next` cursor).
    pub after: Option<i64>,
    /// Only rows with `oml_tuple_id` at most this (set by live tails, not
    /// a query parameter).
    pub until: Option<i64>,
    /// Output format.
    pub format: Format,
    /// JSON integers as strings (for JavaScript, which loses digits above 2^53).
    pub int64_string: bool,
    /// Timestamps as seconds after the start rather than UTC instants.
    pub raw_timestamps: bool,
    /// Downsample to about this many points per series (M4).
    pub points: Option<u32>,
    /// Compute `points` from the pre-aggregated tiles when possible
    /// (`tiles=false`: always from the rows, for checking).
    pub tiles: bool,
    /// Raw or corrected client timestamps (in the answer, and in `from`,
    /// `to` and `points` with `time=client`).
    pub clock: Clock,
    /// Every column of the stream (the corrected view carries them all).
    pub stream_columns: Vec<String>,
    /// Values as stored, or numeric fields replaced by their per-second
    /// rate per sender (`derive=rate`).
    pub derive: Derive,
    /// With `gaps=K`: report, per sender, the intervals longer than K
    /// times the sender's median interval (JSON `gaps` member).
    pub gaps: Option<f64>,
}

impl RowsRequest {
    /// Parses the query parameters against the stream's columns `all`
    /// and the experiment's `start` (Unix seconds).
    pub fn parse(
        pairs: &[(String, String)],
        all: &[Column],
        start: i64,
    ) -> Result<RowsRequest, QueryError> {
        let get = |k: &str| {
            pairs
                .iter()
                .rev()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
        };
        let format = match get("format").unwrap_or("json") {
            "json" => Format::Json,
            "csv" => Format::Csv,
            "jsonl" | "ndjson" => Format::Jsonl,
            "arrow" => Format::Arrow,
            "parquet" => Format::Parquet,
            other => {
                return Err(QueryError::bad(
                    "format",
                    format!("{other:?}: use json, csv, jsonl, arrow or parquet"),
                ))
            }
        };
        let derive = derive::parse_derive(get("derive"))?;
        let columns = match get("fields").filter(|f| !f.trim().is_empty()) {
            // Rates exist only for numbers: all columns then means the
            // bookkeeping columns and the numeric fields.
            None if derive == Derive::Rate => derive::rate_columns(all),
            None => all.to_vec(),
            Some(list) if list.split(',').count() > MAX_FIELDS => {
                return Err(QueryError::bad(
                    "fields",
                    format!("{} fields requested, at most {MAX_FIELDS}: ask for fewer columns per request, or omit fields= for all of them", list.split(',').count()),
                ))
            }
            Some(list) => list
                .split(',')
                .map(|n| {
                    let n = n.trim();
                    all.iter().find(|c| c.name == n).cloned().ok_or_else(|| {
                        QueryError::UnknownField {
                            param: "fields",
                            field: n.to_owned(),
                            existing: all.iter().map(|c| c.name.clone()).collect(),
                        }
                    })
                })
                .collect::<Result<_, _>>()?,
        };
        let time = match get("time").unwrap_or("server") {
            "server" => TimeAxis::Server,
            "client" => TimeAxis::Client,
            other => {
                return Err(QueryError::bad(
                    "time",
                    format!("{other:?}: use server or client"),
                ))
            }
        };
        let bound = |param: &'static str| -> Result<Option<f64>, QueryError> {
            get(param)
                .map(|v| {
                    instant::parse_bound(v, start)
                        .map_err(|e| QueryError::bad(param, format!("{v:?}: {e}")))
                })
                .transpose()
        };
        let (from, to) = (bound("from")?, bound("to")?);
        if let (Some(f), Some(t)) = (from, to) {
            if f > t {
                return Err(QueryError::bad(
                    "to",
                    "the range ends before it begins (to < from)",
                ));
            }
        }
        let mut predicates = Vec::new();
        for (k, v) in pairs {
            if k == "where" {
                for p in predicate::split(v) {
                    if predicates.len() == MAX_PREDICATES {
                        return Err(QueryError::bad(
                            "where",
                            format!("more than {MAX_PREDICATES} conditions: combine them into fewer, or filter the answer"),
                        ));
                    }
                    predicates.push(predicate::parse(&p, all)?);
                }
            }
        }
        let senders: Vec<String> = pairs
            .iter()
            .filter(|(k, _)| k == "sender")
            .flat_map(|(_, v)| v.split(','))
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
            .take(MAX_SENDERS + 1)
            .map(str::to_owned)
            .collect();
        if senders.len() > MAX_SENDERS {
            return Err(QueryError::bad(
                "sender",
                format!("more than {MAX_SENDERS} senders: leave sender= out for all of them, or ask in several requests"),
            ));
        }
        let limit = get("limit")
            .map(|v| {
                v.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    QueryError::bad("limit", format!("{v:?}: give a positive integer"))
                })
            })
            .transpose()?;
        let limit = match (format, limit) {
            (Format::Json, Some(n)) if n > MAX_JSON_LIMIT => {
                return Err(QueryError::bad(
                    "limit",
                    format!("at most {MAX_JSON_LIMIT} rows per JSON page: follow `next`, or use format=arrow/csv for a full export"),
                ))
            }
            (Format::Json, None) => Some(DEFAULT_JSON_LIMIT),
            (_, l) => l,
        };
        let after = get("after")
            .map(|v| {
                v.parse::<i64>().map_err(|_| {
                    QueryError::bad(
                        "after",
                        format!("{v:?}: give the `next` cursor of the previous page"),
                    )
                })
            })
            .transpose()?;
        let int64_string = match get("int64").unwrap_or("number") {
            "number" => false,
            "string" => true,
            other => {
                return Err(QueryError::bad(
                    "int64",
                    format!("{other:?}: use number or string"),
                ))
            }
        };
        let raw_timestamps = match get("timestamps") {
            None => format == Format::Json,
            Some("raw") => true,
            Some("iso") => false,
            Some(other) => {
                return Err(QueryError::bad(
                    "timestamps",
                    format!("{other:?}: use raw or iso"),
                ))
            }
        };
        let points = get("points")
            .map(|v| {
                v.parse::<u32>()
                    .ok()
                    .filter(|n| (4..=MAX_POINTS).contains(n))
                    .ok_or_else(|| {
                        QueryError::bad(
                            "points",
                            format!("{v:?}: give an integer from 4 to {MAX_POINTS}"),
                        )
                    })
            })
            .transpose()?;
        let tiles = match get("tiles").unwrap_or("true") {
            "true" => true,
            "false" => false,
            other => {
                return Err(QueryError::bad(
                    "tiles",
                    format!("{other:?}: use true or false"),
                ))
            }
        };
        let clock = match get("clock").unwrap_or("raw") {
            "raw" => Clock::Raw,
            "corrected" => Clock::Corrected,
            other => {
                return Err(QueryError::bad(
                    "clock",
                    format!("{other:?}: use raw or corrected"),
                ))
            }
        };
        if derive == Derive::Rate {
            derive::check_rate_columns(&columns)?;
        }
        let gaps = derive::parse_gaps(get("gaps"), format)?;
        Ok(RowsRequest {
            columns,
            from,
            to,
            time,
            senders,
            predicates,
            limit,
            after,
            until: None,
            format,
            int64_string,
            raw_timestamps,
            points,
            tiles,
            clock,
            stream_columns: all.iter().map(|c| c.name.clone()).collect(),
            derive,
            gaps,
        })
    }
}
