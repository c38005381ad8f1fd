//! Time bounds: seconds relative to the experiment's start (`12.5`,
//! `-3`), or absolute ISO 8601 / RFC 3339 instants
//! (`2026-11-25T21:00:00Z`, `2026-11-25T22:00:00.25+01:00`).

/// Parses `s` into seconds after `start` (Unix seconds); `None` if it is
/// neither a number nor an ISO 8601 instant.
pub fn parse_bound(s: &str, start: i64) -> Option<f64> {
    let s = s.trim();
    if let Ok(v) = s.parse::<f64>() {
        return v.is_finite().then_some(v);
    }
    iso8601(s).map(|t| t - start as f64)
}

fn num(s: &str) -> Option<i64> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// Unix seconds of `YYYY-MM-DD[Thh:mm[:ss[.frac]]](Z|±hh:mm)`; a date
/// alone is midnight UTC.
pub fn iso8601(s: &str) -> Option<f64> {
    let (date, rest) = match s.find(['T', 't', ' ']) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, ""),
    };
    let mut d = date.split('-');
    let (y, m, day) = (num(d.next()?)?, num(d.next()?)?, num(d.next()?)?);
    if d.next().is_some() || !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    let days = days_from_civil(y, m, day);
    if rest.is_empty() {
        return Some(days as f64 * 86_400.0);
    }
    let (time, offset) = if let Some(t) = rest.strip_suffix(['Z', 'z']) {
        (t, 0)
    } else if let Some(i) = rest.rfind(['+', '-']) {
        let (t, o) = rest.split_at(i);
        let sign = if o.starts_with('-') { -1 } else { 1 };
        let (oh, om) = o[1..].split_once(':').unwrap_or((&o[1..], "0"));
        (t, sign * (num(oh)? * 3600 + num(om)? * 60))
    } else {
        return None;
    };
    let mut t = time.split(':');
    let h = num(t.next()?)?;
    let mi = num(t.next()?)?;
    let sec: f64 = match t.next() {
        Some(x) => {
            let (whole, frac) = x.split_once('.').unwrap_or((x, ""));
            num(whole)?;
            if !frac.is_empty() {
                num(frac)?;
            }
            x.parse().ok()?
        }
        None => 0.0,
    };
    if t.next().is_some() || h > 23 || mi > 59 || sec >= 61.0 {
        return None;
    }
    Some(days as f64 * 86_400.0 + (h * 3600 + mi * 60 - offset) as f64 + sec)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_and_absolute() {
        assert_eq!(parse_bound("12.5", 100), Some(12.5));
        assert_eq!(parse_bound("1970-01-01T00:02:00Z", 100), Some(20.0));
        assert_eq!(iso8601("2000-02-29"), Some(951_782_400.0));
        assert_eq!(iso8601("2026-11-22T01:29:37.5Z"), Some(1_795_310_977.5));
        assert_eq!(
            iso8601("2026-11-22T02:29:37.5+01:00"),
            Some(1_795_310_977.5)
        );
        for bad in [
            "",
            "soon",
            "2026-13-01",
            "2026-11-22T25:00Z",
            "2026-11-22T01:00",
            "NaN",
        ] {
            assert_eq!(parse_bound(bad, 0), None, "{bad}");
        }
    }
}
