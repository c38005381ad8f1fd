//! Timestamps: `oml_ts_client` and `oml_ts_server` are seconds since the
//! experiment's `start_time`; exports show them as UTC instants.

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
        let (days, rem) = (us.div_euclid(86_400_000_000), us.rem_euclid(86_400_000_000));
        let (y, m, d) = civil(days);
        let s = rem / 1_000_000;
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
            s / 3600,
            s / 60 % 60,
            s % 60,
            rem % 1_000_000
        )
    }
}

/// Year, month, day of a day count since 1970-01-01 (proleptic Gregorian),
/// by counting 400-year eras of 146 097 days from 0000-03-01.
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
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
    }
}
