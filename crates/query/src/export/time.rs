//! Timestamps: `oml_ts_client` and `oml_ts_server` are seconds since the
//! experiment's `start_time`; exports show them as UTC instants.

use time::macros::format_description;
use time::OffsetDateTime;

/// How timestamp columns are written.
#[derive(Debug, Clone, Copy)]
pub struct Timestamps {
    /// Unix seconds of `start_time`; `None` keeps the raw seconds.
    start: Option<i64>,
}

impl Timestamps {
    /// Converted from `start` (Unix seconds), or raw.
    pub fn new(start: Option<i64>) -> Timestamps {
        Timestamps { start }
    }

    /// True if the raw seconds are kept.
    pub fn raw(&self) -> bool {
        self.start.is_none()
    }

    /// Microseconds since the Unix epoch of `secs` after the start.
    pub fn micros(&self, secs: f64) -> i64 {
        let start = self.start.unwrap_or(0) as f64;
        ((start + secs) * 1e6).round() as i64
    }

    /// RFC 3339 in UTC with microseconds (`2026-11-24T23:05:18.123456Z`),
    /// or the raw seconds.
    pub fn format(&self, secs: f64) -> String {
        if self.raw() || !secs.is_finite() {
            return secs.to_string();
        }
        let us = self.micros(secs);
        // Beyond the years -9999..9999 the raw seconds are kept too.
        let Ok(t) = OffsetDateTime::from_unix_timestamp_nanos(i128::from(us) * 1000) else {
            return secs.to_string();
        };
        t.format(format_description!(
            "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z"
        ))
        .unwrap_or_else(|_| secs.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339() {
        let t = Timestamps::new(Some(0));
        assert_eq!(t.format(0.0), "1970-01-01T00:00:00.000000Z");
        let t = Timestamps::new(Some(1_795_310_976));
        assert_eq!(t.format(1.5), "2026-11-22T01:29:37.500000Z");
        assert_eq!(
            Timestamps::new(Some(951_782_400)).format(0.0),
            "2000-02-29T00:00:00.000000Z"
        );
        assert_eq!(Timestamps::new(None).format(1.25), "1.25");
        assert_eq!(
            Timestamps::new(Some(0)).format(-1.0),
            "1969-12-31T23:59:59.000000Z"
        );
        assert_eq!(Timestamps::new(Some(0)).format(1e15), "1000000000000000");
    }
}
