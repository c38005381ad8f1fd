//! The destination used when nothing names one (spec §8.4): a file in the
//! working directory named after the application, id, domain and start time.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::spec::Uri;

/// `file:<app>[_<id>][_<domain>]_<timestamp>`, as liboml2 names it.
///
/// `timestamp` is the local time formatted `YYYY-mm-ddtHH.MM.SS±zzzz` (see
/// [`utc_timestamp`] for a UTC one without platform calls). A `/` in the id
/// or domain becomes `_`, so the file stays in the working directory.
///
/// ```
/// use client::config::default_file_uri;
/// use client::spec::Uri;
///
/// let uri = default_file_uri("ping", Some("n1"), None, "2024-05-01t12.00.00+0200");
/// assert_eq!(uri, Uri::File("ping_n1_2024-05-01t12.00.00+0200".into()));
/// ```
pub fn default_file_uri(app: &str, id: Option<&str>, domain: Option<&str>, timestamp: &str) -> Uri {
    let mut name = app.to_owned();
    for part in [id, domain].into_iter().flatten() {
        name.push('_');
        name.push_str(&part.replace('/', "_"));
    }
    name.push('_');
    name.push_str(timestamp);
    Uri::File(PathBuf::from(name))
}

/// `t` in UTC, formatted `YYYY-mm-ddtHH.MM.SS+0000` as [`default_file_uri`]
/// expects. Times before 1970 are clamped to the epoch.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// let t = UNIX_EPOCH + Duration::from_secs(1_714_564_800);
/// assert_eq!(client::config::utc_timestamp(t), "2024-05-01t12.00.00+0000");
/// ```
pub fn utc_timestamp(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    // Seconds of a SystemTime fit the time crate's range until year 9999;
    // later instants are clamped to its last second.
    let t = time::OffsetDateTime::from_unix_timestamp(i64::try_from(secs).unwrap_or(i64::MAX))
        .unwrap_or(time::PrimitiveDateTime::MAX.assume_utc());
    t.format(time::macros::format_description!(
        "[year]-[month]-[day]t[hour].[minute].[second]+0000"
    ))
    .expect("every field of a UTC date-time is known")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn names() {
        let ts = "2024-01-02t03.04.05-0500";
        assert_eq!(
            default_file_uri("app", None, None, ts),
            Uri::File(format!("app_{ts}").into())
        );
        assert_eq!(
            default_file_uri("app", Some("id"), Some("dom"), ts),
            Uri::File(format!("app_id_dom_{ts}").into())
        );
        assert_eq!(
            default_file_uri("app", None, Some("dom"), ts),
            Uri::File(format!("app_dom_{ts}").into())
        );
        assert_eq!(
            default_file_uri("app", Some("a/b"), None, ts),
            Uri::File(format!("app_a_b_{ts}").into())
        );
    }

    #[test]
    fn utc() {
        let at = |s| utc_timestamp(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01t00.00.00+0000");
        assert_eq!(at(951_782_400), "2000-02-29t00.00.00+0000");
        assert_eq!(at(4_107_542_399), "2100-02-28t23.59.59+0000");
        assert_eq!(at(1_795_310_947), "2026-11-22t01.29.07+0000");
        assert_eq!(
            utc_timestamp(UNIX_EPOCH - Duration::from_secs(5)),
            "1970-01-01t00.00.00+0000"
        );
    }
}
