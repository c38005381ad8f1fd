//! The time axis: ticks on round instants (whole seconds, minutes, hours,
//! days in the axis's time zone) labelled as ISO 8601 instants, or round
//! numbers of seconds since the first point.
//!
//! The chart's x coordinate is always seconds since the first plotted
//! point (small numbers keep full precision); ticks and labels are
//! computed here, before drawing, so a local-time offset that cannot be
//! read is an error rather than a wrong label.

use std::sync::OnceLock;

use time::macros::format_description;
use time::{OffsetDateTime, UtcOffset};

use crate::definition::TimeAxis;

/// Candidate steps between time ticks, in seconds.
const STEPS: &[f64] = &[
    0.001,
    0.002,
    0.005,
    0.01,
    0.02,
    0.05,
    0.1,
    0.2,
    0.5,
    1.0,
    2.0,
    5.0,
    10.0,
    15.0,
    30.0,
    60.0,
    120.0,
    300.0,
    600.0,
    900.0,
    1800.0,
    3600.0,
    7200.0,
    10800.0,
    21600.0,
    43200.0,
    86400.0,
    172_800.0,
    604_800.0,
    1_209_600.0,
];

/// Candidate steps beyond two weeks, in calendar months.
const MONTHS: &[i64] = &[1, 2, 3, 6, 12, 24, 60, 120, 240, 600, 1200];

/// A month's average length, to count month ticks.
const MONTH_SECONDS: f64 = 30.436_875 * 86_400.0;

/// Ticks on the first day of every `m`-th month (months counted from
/// year 0, so 12 gives New Year), from `t0` to `t1`, labelled as dates.
fn month_ticks(
    axis: TimeAxis,
    t0: f64,
    t1: f64,
    m: i64,
    offset: UtcOffset,
) -> Result<Vec<(f64, String)>, LocalOffsetError> {
    let start = OffsetDateTime::from_unix_timestamp(t0.floor() as i64)
        .map_err(|e| LocalOffsetError(e.to_string()))?
        .to_offset(offset);
    let mut index = (start.year() as i64 * 12 + start.month() as i64 - 1).div_euclid(m) * m;
    let mut ticks = Vec::new();
    loop {
        let (year, month) = (index.div_euclid(12), index.rem_euclid(12) + 1);
        let Some(date) = i32::try_from(year).ok().and_then(|y| {
            time::Date::from_calendar_date(y, (month as u8).try_into().ok()?, 1).ok()
        }) else {
            break;
        };
        // Midnight in the axis's zone, with the offset of that day.
        let guess = date.midnight().assume_offset(offset).unix_timestamp() as f64;
        let off = match axis {
            TimeAxis::Local => local_offset(guess)?,
            _ => offset,
        };
        let t = date.midnight().assume_offset(off).unix_timestamp() as f64;
        if t > t1 {
            break;
        }
        if t >= t0 {
            ticks.push((t - t0, iso(t, off, 86_400.0)));
        }
        index += m;
    }
    Ok(ticks)
}

/// Ticks of the x axis: positions (seconds since the first point) and
/// their labels, plus the axis description.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeTicks {
    /// (x, label) in increasing x.
    pub ticks: Vec<(f64, String)>,
    /// The axis description (`time (UTC)`).
    pub description: String,
}

impl TimeTicks {
    /// The label of the tick at `x` (the nearest one).
    pub fn label(&self, x: f64) -> String {
        self.ticks
            .iter()
            .min_by(|a, b| (a.0 - x).abs().total_cmp(&(b.0 - x).abs()))
            .map(|(_, l)| l.clone())
            .unwrap_or_default()
    }
}

/// Why the time axis could not be labelled.
#[derive(Debug, thiserror::Error)]
#[error("\"timeaxis\": \"local\": this machine's UTC offset could not be read ({0}); set TZ, or use \"utc\" or \"relative\"")]
pub struct LocalOffsetError(String);

/// A "nice" step (1, 2 or 5 × 10ⁿ) giving at most `max` ticks over `span`.
fn nice_step(span: f64, max: usize) -> f64 {
    let raw = span / max.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= max as f64)
        .unwrap_or(10.0 * mag)
}

/// Decimal digits needed to print multiples of `step`.
fn digits(step: f64) -> usize {
    (0..9)
        .find(|d| {
            let scaled = step * 10f64.powi(*d as i32);
            (scaled - scaled.round()).abs() < 1e-6
        })
        .unwrap_or(9)
}

/// An ISO 8601 instant at the resolution `step` needs, in `offset`.
fn iso(unix: f64, offset: UtcOffset, step: f64) -> String {
    let nanos = (unix * 1e9).round() as i128;
    let Ok(t) = OffsetDateTime::from_unix_timestamp_nanos(nanos) else {
        return format!("{unix}");
    };
    let t = t.to_offset(offset);
    let date = t.format(format_description!("[year]-[month]-[day]"));
    let hm = t.format(format_description!("[hour]:[minute]"));
    let zone = if offset.is_utc() {
        "Z".to_owned()
    } else {
        t.format(format_description!(
            "[offset_hour sign:mandatory]:[offset_minute]"
        ))
        .unwrap_or_default()
    };
    let (Ok(date), Ok(hm)) = (date, hm) else {
        return format!("{unix}");
    };
    if step >= 86_400.0 && t.hour() == 0 && t.minute() == 0 {
        return date;
    }
    if step >= 60.0 {
        return format!("{date}T{hm}{zone}");
    }
    let d = digits(step);
    let sec = t.second() as f64 + t.nanosecond() as f64 / 1e9;
    let sec = if d == 0 {
        format!("{:02}", sec.round() as u32)
    } else {
        format!("{:0w$.d$}", sec, w = d + 3)
    };
    format!("{date}T{hm}:{sec}{zone}")
}

/// This machine's UTC offset read while the process was still
/// single-threaded (see [`remember_local_offset`]).
static LOCAL_NOW: OnceLock<UtcOffset> = OnceLock::new();

/// Reads this machine's current UTC offset and keeps it for labels. The
/// `time` crate reads the zone only while the process has one thread (the
/// C library's reader is not thread-safe), so `streamgauge plot` calls
/// this first; an instant whose own offset cannot be read later (after
/// the HTTP client started a thread) is labelled with this one.
pub fn remember_local_offset() {
    if let Ok(o) = UtcOffset::current_local_offset() {
        let _ = LOCAL_NOW.set(o);
    }
}

/// The UTC offset of this machine at `unix` seconds.
fn local_offset(unix: f64) -> Result<UtcOffset, LocalOffsetError> {
    let t = OffsetDateTime::from_unix_timestamp(unix.floor() as i64)
        .map_err(|e| LocalOffsetError(e.to_string()))?;
    UtcOffset::local_offset_at(t).or_else(|e| {
        LOCAL_NOW
            .get()
            .copied()
            .ok_or_else(|| LocalOffsetError(e.to_string()))
    })
}

/// Ticks for points from `t0` to `t1` (Unix seconds) with room for
/// about `max_ticks` ISO labels.
pub fn ticks(
    axis: TimeAxis,
    t0: f64,
    t1: f64,
    max_ticks: usize,
) -> Result<TimeTicks, LocalOffsetError> {
    let span = (t1 - t0).max(1e-3);
    if axis == TimeAxis::Relative {
        let step = nice_step(span, max_ticks);
        let d = digits(step);
        let n = (span / step).floor() as i64;
        return Ok(TimeTicks {
            ticks: (0..=n)
                .map(|i| {
                    let x = i as f64 * step;
                    (x, format!("{x:.d$}"))
                })
                .collect(),
            description: "time since the first point (s)".to_owned(),
        });
    }
    let offset = match axis {
        TimeAxis::Local => local_offset(t0)?,
        _ => UtcOffset::UTC,
    };
    let description = match axis {
        TimeAxis::Local if offset.is_utc() => "time (local, UTC)".to_owned(),
        TimeAxis::Local => format!(
            "time (local, UTC{})",
            iso(t0, offset, 60.0).get(16..).unwrap_or("")
        ),
        _ => "time (UTC)".to_owned(),
    };
    let Some(step) = STEPS.iter().copied().find(|s| span / s <= max_ticks as f64) else {
        let m = MONTHS
            .iter()
            .copied()
            .find(|m| span / (*m as f64 * MONTH_SECONDS) <= max_ticks as f64)
            .unwrap_or(1200);
        return Ok(TimeTicks {
            ticks: month_ticks(axis, t0, t1, m, offset)?,
            description,
        });
    };
    // Round instants in the axis's own zone (local midnight, whole hours).
    let shift = offset.whole_seconds() as f64;
    let first = ((t0 + shift) / step).ceil() * step - shift;
    let mut ticks = Vec::new();
    let mut k = 0.0;
    while first + k * step <= t1 + step * 1e-9 {
        let t = first + k * step;
        let off = match axis {
            TimeAxis::Local => local_offset(t)?,
            _ => offset,
        };
        ticks.push((t - t0, iso(t, off, step)));
        k += 1.0;
    }
    Ok(TimeTicks { ticks, description })
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: f64 = 1_795_310_976.0; // 2026-11-22T01:29:36Z

    #[test]
    fn utc_ticks_are_round_iso_instants() {
        let t = ticks(TimeAxis::Utc, T, T + 3600.0, 6).unwrap();
        assert_eq!(t.description, "time (UTC)");
        assert_eq!(t.ticks[0].1, "2026-11-22T01:30Z");
        assert!((t.ticks[0].0 - 24.0).abs() < 1e-9);
        assert_eq!(t.ticks[1].1, "2026-11-22T01:40Z");
        assert!(t.ticks.len() <= 6);
        let t = ticks(TimeAxis::Utc, T + 0.1, T + 2.0, 5).unwrap();
        assert_eq!(t.ticks[0].1, "2026-11-22T01:29:36.5Z");
        let t = ticks(TimeAxis::Utc, T, T + 10.0 * 86400.0, 6).unwrap();
        assert_eq!(t.ticks[0].1, "2026-11-23");
        assert_eq!(t.label(t.ticks[1].0 + 0.1), "2026-11-25");
        // Beyond weeks: the first of the month, every few months.
        let t = ticks(TimeAxis::Utc, T, T + 200.0 * 86400.0, 6).unwrap();
        let labels: Vec<&str> = t.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["2027-01-01", "2027-03-01", "2027-05-01"]);
        let t = ticks(TimeAxis::Utc, T, T + 3.0 * 365.0 * 86400.0, 4).unwrap();
        let labels: Vec<&str> = t.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["2027-01-01", "2028-01-01", "2029-01-01"]);
    }

    #[test]
    fn relative_ticks_count_seconds() {
        let t = ticks(TimeAxis::Relative, T, T + 95.0, 10).unwrap();
        let labels: Vec<&str> = t.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(
            labels,
            ["0", "10", "20", "30", "40", "50", "60", "70", "80", "90"]
        );
        let t = ticks(TimeAxis::Relative, T, T + 0.5, 5).unwrap();
        assert_eq!(t.ticks[1].1, "0.1");
    }

    #[test]
    fn iso_in_an_offset() {
        let plus1 = UtcOffset::from_hms(1, 0, 0).unwrap();
        assert_eq!(iso(T, plus1, 60.0), "2026-11-22T02:29+01:00");
        assert_eq!(
            iso(T + 0.25, UtcOffset::UTC, 0.05),
            "2026-11-22T01:29:36.25Z"
        );
    }
}
