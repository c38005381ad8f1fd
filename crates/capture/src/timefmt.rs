//! UTC timestamp formatting without a calendar dependency.

/// (year, month, day) of a day count since 1970-01-01 (proleptic Gregorian).
fn civil(days: i64) -> (i64, u32, u32) {
    // Howard Hinnant's days-to-civil algorithm.
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

/// `YYYYmmddTHHMMSSZ` (compact, for file names).
pub fn compact(ts_ns: u64) -> String {
    let s = (ts_ns / 1_000_000_000) as i64;
    let (y, m, d) = civil(s.div_euclid(86_400));
    let t = s.rem_euclid(86_400);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        t / 3600,
        t / 60 % 60,
        t % 60
    )
}

/// RFC 3339 with nanoseconds, UTC.
pub fn rfc3339(ts_ns: u64) -> String {
    let s = (ts_ns / 1_000_000_000) as i64;
    let (y, m, d) = civil(s.div_euclid(86_400));
    let t = s.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:09}Z",
        t / 3600,
        t / 60 % 60,
        t % 60,
        ts_ns % 1_000_000_000
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats() {
        assert_eq!(super::compact(0), "19700101T000000Z");
        assert_eq!(
            super::rfc3339(1_709_251_199_000_000_001),
            "2024-02-29T23:59:59.000000001Z"
        );
    }
}
