//! `derive=` and `gaps=`: parsed and checked against the requested
//! columns before any SQL is written.

use super::Format;
use crate::error::QueryError;
use crate::export::{Column, Kind};

/// `gaps=true`: an interval more than three typical periods long is a gap.
pub const DEFAULT_GAPS: f64 = 3.0;

/// What the answer carries for the numeric fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Derive {
    /// The values as stored.
    None,
    /// Per-second rate per sender, counter resets handled (`derive=rate`).
    Rate,
}

impl Derive {
    /// The parameter value, as the JSON answer repeats it.
    pub fn name(self) -> &'static str {
        match self {
            Derive::None => "none",
            Derive::Rate => "rate",
        }
    }
}

/// `derive=none|rate`.
pub(super) fn parse_derive(v: Option<&str>) -> Result<Derive, QueryError> {
    match v.unwrap_or("none") {
        "none" => Ok(Derive::None),
        "rate" => Ok(Derive::Rate),
        other => Err(QueryError::bad(
            "derive",
            format!("{other:?}: use none (values as stored) or rate (per-second rate of counters)"),
        )),
    }
}

/// True for a field whose rate can be computed.
pub fn is_rate_field(c: &Column) -> bool {
    matches!(c.kind, Kind::Field(t) if t.is_numeric())
}

/// The default columns with `derive=rate`: bookkeeping and numeric fields.
pub(super) fn rate_columns(all: &[Column]) -> Vec<Column> {
    all.iter()
        .filter(|c| !matches!(c.kind, Kind::Field(_)) || is_rate_field(c))
        .cloned()
        .collect()
}

/// Every requested field must be a number (bookkeeping columns pass
/// through unchanged).
pub(super) fn check_rate_columns(cols: &[Column]) -> Result<(), QueryError> {
    if let Some(c) = cols
        .iter()
        .find(|c| matches!(c.kind, Kind::Field(_)) && !is_rate_field(c))
    {
        let Kind::Field(t) = c.kind else {
            unreachable!("matched a field")
        };
        return Err(QueryError::bad(
            "derive",
            format!(
                "field {:?} is {}, not a number: derive=rate needs int32, uint32, int64, uint64 or double fields; leave {:?} out of fields=",
                c.name,
                t.name(),
                c.name
            ),
        ));
    }
    if !cols.iter().any(is_rate_field) {
        return Err(QueryError::bad(
            "derive",
            "derive=rate needs a numeric field in fields= (int32, uint32, int64, uint64, double)",
        ));
    }
    Ok(())
}

/// `gaps=K` (K > 1), `gaps=true` (K = 3) or `gaps=false`; JSON only (the
/// gaps are a member of the document).
pub(super) fn parse_gaps(v: Option<&str>, format: Format) -> Result<Option<f64>, QueryError> {
    let k = match v {
        None | Some("false") => return Ok(None),
        Some("true") => DEFAULT_GAPS,
        Some(v) => v
            .parse::<f64>()
            .ok()
            .filter(|k| k.is_finite() && *k > 1.0)
            .ok_or_else(|| {
                QueryError::bad(
                    "gaps",
                    format!("{v:?}: give a number above 1 (a gap is an interval longer than that many typical periods), or true for {DEFAULT_GAPS}"),
                )
            })?,
    };
    if format != Format::Json {
        return Err(QueryError::bad(
            "gaps",
            "gaps are a member of the JSON answer: use format=json",
        ));
    }
    Ok(Some(k))
}
