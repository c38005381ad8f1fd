//! The relay path against traversal encodings: no
//! generated path reaches another domain; every dot segment, backslash or
//! encoded slash is refused.

use proptest::prelude::*;

use super::*;

const BASE: &str = "http://127.0.0.1:8080";
const PREFIX: &str = "/api/v1/domains/mine";

/// What the manager would send for `raw`, or why it refuses.
fn relay(raw: &str) -> Result<Url, RelayPathError> {
    let r = Resource::parse(raw)?;
    upstream_url(BASE, "mine", &r, Some("limit=5"))
}

fn assert_inside(raw: &str) {
    if let Ok(url) = relay(raw) {
        let path = url.path();
        assert!(
            path == PREFIX || path.starts_with(&format!("{PREFIX}/streams")),
            "{raw:?} reached {path:?}"
        );
        assert!(!path.contains("other"), "{raw:?} reached {path:?}");
        assert_eq!(url.host_str(), Some("127.0.0.1"), "{raw:?}");
    }
}

/// One `.` in the encodings attackers use.
fn dot() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        ".",
        "%2e",
        "%2E",
        "%252e",
        "%252E",
        "%25252e",
        "%25252E",
        "%c0%ae",
        "%C0%AE",
        "%e0%80%ae",
        "%25c0%25ae",
        "%u002e",
    ])
}

/// A separator, plain or disguised.
fn sep() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "/", "/", "/", "%2f", "%2F", "%252f", "%252F", "\\", "%5c", "%5C", "%255c", "%25255c",
    ])
}

/// Noise some servers strip from a segment.
fn suffix() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["", "", ";x", ";", "%00", "%2500", "%09", "%20", "%0a"])
}

/// A `..` segment in some encoding.
fn dotdot() -> impl Strategy<Value = String> {
    (dot(), dot(), suffix()).prop_map(|(a, b, s)| format!("{a}{b}{s}"))
}

fn part() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => dotdot(),
        1 => prop::sample::select(vec!["other", "streams", "s", "rows", "tail", "domains", "metrics", "api", "v1"])
            .prop_map(str::to_owned),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn no_traversal_leaves_the_domain(parts in prop::collection::vec((part(), sep()), 1..8)) {
        let raw: String = parts.iter().map(|(p, s)| format!("{p}{s}")).collect();
        assert_inside(&raw);
        // With plain separators a dot segment is always refused.
        let plain: Vec<&str> = parts.iter().map(|(p, _)| p.as_str()).collect();
        let raw = plain.join("/");
        if plain.iter().any(|p| p.contains('.') || p.contains('%')) {
            let r = relay(&raw);
            prop_assert!(r.is_err(), "{raw:?} was accepted: {r:?}");
        }
    }

    #[test]
    fn any_string_stays_inside(raw in "[./%25cCeE2fF05a\\\\;ostrmw_x ]{0,40}") {
        assert_inside(&raw);
    }
}

#[test]
fn the_reported_paths_are_refused() {
    for raw in [
        "%252e%252e/other/streams/s/rows",
        "%2e%2e/other/streams/s/rows",
        "../other/streams/s/rows",
        "%252e%252e/%252e%252e/domains",
        "%252e%252e/%252e%252e/%252e%252e/metrics",
        "streams/..%2f..%2fother",
        "streams/s%2f..%2f..%2fother/rows",
        "streams/%2e",
        "streams\\..\\..\\other",
        "streams/s;x/rows",
        "streams/s%00/rows",
        "streams/%c0%ae%c0%ae/rows",
        "streams//rows",
        "metrics",
    ] {
        assert!(relay(raw).is_err(), "{raw:?} accepted");
    }
}

#[test]
fn the_query_api_shapes_are_relayed() {
    for (raw, path) in [
        ("", PREFIX.to_owned()),
        ("streams", format!("{PREFIX}/streams")),
        ("streams/", format!("{PREFIX}/streams")),
        ("streams/ping_rtt", format!("{PREFIX}/streams/ping_rtt")),
        (
            "streams/ping_rtt/rows",
            format!("{PREFIX}/streams/ping_rtt/rows"),
        ),
        (
            "streams/p%69ng_rtt/tail",
            format!("{PREFIX}/streams/ping_rtt/tail"),
        ),
    ] {
        let url = relay(raw).unwrap();
        assert_eq!(url.path(), path, "{raw:?}");
        assert_eq!(url.query(), Some("limit=5"));
    }
    let e = relay("streams/bad-name/rows").unwrap_err();
    assert_eq!(e, RelayPathError::BadStream("bad-name".into()));
}

#[test]
fn the_domain_itself_is_checked() {
    let r = Resource::Streams;
    assert!(upstream_url(BASE, "..", &r, None).is_err());
    assert!(upstream_url(BASE, "a/b", &r, None).is_err());
    assert!(upstream_url(BASE, "", &r, None).is_err());
    let u = upstream_url("http://[::1]:9", "d.e-1", &r, Some("")).unwrap();
    assert_eq!(u.as_str(), "http://[::1]:9/api/v1/domains/d.e-1/streams");
}
