//! Time bounds: seconds relative to the experiment's start (`12.5`,
//! `-3`), or absolute ISO 8601 / RFC 3339 instants
//! (`2026-11-25T21:00:00Z`, `2026-11-25T22:00:00.25+01:00`).
//!
//! Every bound, relative or absolute, must fall within the years
//! [`MIN_YEAR`]–[`MAX_YEAR`] and an offset within ±[`MAX_OFFSET_MINUTES`]:
//! nothing is stored outside them, and larger years overflowed the day
//! arithmetic (`from=9223372036854775807-01-01` used to be accepted).

/// First year a bound may name (Unix time starts there).
pub const MIN_YEAR: i64 = 1970;
/// Last year a bound may name (four-digit years, as in RFC 3339).
pub const MAX_YEAR: i64 = 9999;
/// Largest UTC offset, in minutes (`+14:00`, Kiribati; `-12:00` is the
/// most negative in use, ±14:00 is what RFC 3339 parsers commonly allow).
pub const MAX_OFFSET_MINUTES: i64 = 14 * 60;

/// Unix seconds of 1970-01-01T00:00:00Z and of (MAX_YEAR+1)-01-01T00:00:00Z.
const RANGE: (f64, f64) = (0.0, 253_402_300_800.0);

/// Why a bound was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BoundError {
    /// Neither a number nor an ISO 8601 instant.
    #[error("give seconds after the experiment start (12.5) or an ISO 8601 instant (2026-11-25T21:00:00Z)")]
    Syntax,
    /// The year of an ISO 8601 instant is outside [`MIN_YEAR`]–[`MAX_YEAR`].
    #[error("year {0} is outside {MIN_YEAR}-{MAX_YEAR}")]
    Year(i64),
    /// The UTC offset is larger than ±14:00 or its minutes are above 59.
    #[error("UTC offset {0} is outside -14:00..+14:00")]
    Offset(String),
    /// The instant (start + seconds, or after its offset) is outside the years.
    #[error("the instant is outside the years {MIN_YEAR}-{MAX_YEAR}")]
    Range,
}

/// Parses `s` into seconds after `start` (Unix seconds).
pub fn parse_bound(s: &str, start: i64) -> Result<f64, BoundError> {
    let s = s.trim();
    let unix = match s.parse::<f64>() {
        Ok(v) if v.is_finite() => start as f64 + v,
        Ok(_) => return Err(BoundError::Syntax),
        Err(_) => iso8601(s)?,
    };
    if !(RANGE.0..RANGE.1).contains(&unix) {
        return Err(BoundError::Range);
    }
    Ok(unix - start as f64)
}

fn num(s: &str) -> Option<i64> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// Unix seconds of `YYYY-MM-DD[Thh:mm[:ss[.frac]]](Z|±hh:mm)`; a date
/// alone is midnight UTC.
pub fn iso8601(s: &str) -> Result<f64, BoundError> {
    let syntax = BoundError::Syntax;
    let (date, rest) = match s.find(['T', 't', ' ']) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, ""),
    };
    let mut d = date.split('-');
    let mut part = || d.next().and_then(num).ok_or(BoundError::Syntax);
    let (y, m, day) = (part()?, part()?, part()?);
    if d.next().is_some() {
        return Err(syntax);
    }
    if !(MIN_YEAR..=MAX_YEAR).contains(&y) {
        return Err(BoundError::Year(y));
    }
    let days = days_since_epoch(y, m, day).ok_or(BoundError::Syntax)?;
    if rest.is_empty() {
        return Ok(days as f64 * 86_400.0);
    }
    let (time, offset) = if let Some(t) = rest.strip_suffix(['Z', 'z']) {
        (t, 0)
    } else if let Some(i) = rest.rfind(['+', '-']) {
        let (t, o) = rest.split_at(i);
        let sign = if o.starts_with('-') { -1 } else { 1 };
        let (oh, om) = o[1..].split_once(':').unwrap_or((&o[1..], "0"));
        let (oh, om) = (
            num(oh).ok_or(BoundError::Syntax)?,
            num(om).ok_or(BoundError::Syntax)?,
        );
        if om > 59 || oh * 60 + om > MAX_OFFSET_MINUTES {
            return Err(BoundError::Offset(o.to_owned()));
        }
        (t, sign * (oh * 3600 + om * 60))
    } else {
        return Err(syntax);
    };
    let mut t = time.split(':');
    let h = t.next().and_then(num).ok_or(BoundError::Syntax)?;
    let mi = t.next().and_then(num).ok_or(BoundError::Syntax)?;
    let sec: f64 = match t.next() {
        Some(x) => {
            let (whole, frac) = x.split_once('.').unwrap_or((x, ""));
            let digits = num(whole).is_some() && (frac.is_empty() || num(frac).is_some());
            x.parse()
                .ok()
                .filter(|_| digits)
                .ok_or(BoundError::Syntax)?
        }
        None => 0.0,
    };
    if t.next().is_some() || h > 23 || mi > 59 || sec >= 61.0 {
        return Err(syntax);
    }
    Ok(days as f64 * 86_400.0 + (h * 3600 + mi * 60 - offset) as f64 + sec)
}

/// Days since 1970-01-01 of a proleptic Gregorian date, or `None` for a
/// date that does not exist (`2026-02-31` is refused rather than read as
/// 3 March). The year is already within [`MIN_YEAR`]–[`MAX_YEAR`].
fn days_since_epoch(y: i64, m: i64, d: i64) -> Option<i64> {
    let month = time::Month::try_from(u8::try_from(m).ok()?).ok()?;
    let date = time::Date::from_calendar_date(i32::try_from(y).ok()?, month, u8::try_from(d).ok()?)
        .ok()?;
    Some(i64::from(
        date.to_julian_day() - time::OffsetDateTime::UNIX_EPOCH.date().to_julian_day(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_and_absolute() {
        assert_eq!(parse_bound("12.5", 100), Ok(12.5));
        assert_eq!(parse_bound("1970-01-01T00:02:00Z", 100), Ok(20.0));
        assert_eq!(iso8601("2000-02-29"), Ok(951_782_400.0));
        assert_eq!(iso8601("2026-11-22T01:29:37.5Z"), Ok(1_795_310_977.5));
        assert_eq!(iso8601("2026-11-22T02:29:37.5+01:00"), Ok(1_795_310_977.5));
        assert_eq!(iso8601("2026-11-21T11:29:37.5-14:00"), Ok(1_795_310_977.5));
        assert_eq!(iso8601("9999-12-31T23:59:59Z"), Ok(253_402_300_799.0));
        for bad in [
            "",
            "soon",
            "2026-13-01",
            "2026-02-29",
            "2026-04-31",
            "2026-11-22T25:00Z",
            "2026-11-22T01:00",
            "NaN",
            "inf",
        ] {
            assert_eq!(parse_bound(bad, 0), Err(BoundError::Syntax), "{bad}");
        }
    }

    #[test]
    fn years_offsets_and_instants_out_of_range() {
        assert_eq!(
            parse_bound("9223372036854775807-01-01T00:00:00Z", 0),
            Err(BoundError::Year(i64::MAX))
        );
        assert_eq!(parse_bound("10000-01-01", 0), Err(BoundError::Year(10_000)));
        assert_eq!(parse_bound("1969-12-31", 0), Err(BoundError::Year(1969)));
        for off in ["-99:99", "+14:01", "-15:00", "+00:60", "+99"] {
            let s = format!("2026-11-22T01:00:00{off}");
            assert_eq!(
                parse_bound(&s, 0),
                Err(BoundError::Offset(off.into())),
                "{s}"
            );
        }
        // In range by its year, out of range by its offset.
        assert_eq!(
            parse_bound("1970-01-01T00:00:00+01:00", 0),
            Err(BoundError::Range)
        );
        assert_eq!(parse_bound("1e300", 1_795_310_976), Err(BoundError::Range));
        assert_eq!(
            parse_bound("-1795310977", 1_795_310_976),
            Err(BoundError::Range)
        );
        assert_eq!(parse_bound("-3", 1_795_310_976), Ok(-3.0));
    }
}
