//! UTC timestamp formatting (calendar arithmetic by the `time` crate).

use time::format_description::BorrowedFormatItem;
use time::macros::format_description;
use time::OffsetDateTime;

/// The UTC date and time of `ts_ns` nanoseconds since the Unix epoch
/// (always representable: a `u64` of nanoseconds ends in 2554).
fn utc(ts_ns: u64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ts_ns))
        .expect("u64 nanoseconds lie within the time crate's range")
}

/// `YYYYmmddTHHMMSSZ` (compact, for file names).
pub fn compact(ts_ns: u64) -> String {
    format(
        ts_ns,
        format_description!("[year][month][day]T[hour][minute][second]Z"),
    )
}

/// RFC 3339 with nanoseconds, UTC.
pub fn rfc3339(ts_ns: u64) -> String {
    format(
        ts_ns,
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:9]Z"),
    )
}

fn format(ts_ns: u64, description: &[BorrowedFormatItem<'_>]) -> String {
    utc(ts_ns)
        .format(description)
        .expect("every field of a UTC date-time is known")
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
        assert_eq!(super::rfc3339(u64::MAX), "2554-07-21T23:34:33.709551615Z");
    }
}
