//! The path the manager relays to a collector, as typed segments.
//!
//! Why: the relay once checked for `..` after one decoding, joined
//! strings into the upstream URL, and the HTTP client then normalised a
//! doubly encoded `%252e%252e` into a dot segment that left the
//! experiment's domain. Here the path that arrived is decoded until it no
//! longer changes, anything that could move between segments (a dot
//! segment, a backslash, an encoded slash, a control character, a `;`
//! parameter) is refused, the rest must be one of the query API's shapes
//! with stream names by the server's own rule
//! ([`omsp::names::is_valid_name`]), and the upstream URL is built from
//! those segments by the URL library (each one percent-encoded, never a
//! joined string). The final, normalised path is checked to still lie
//! under `/api/v1/domains/{domain}` before anything is sent.

use omsp::names::{is_valid_domain, is_valid_name};
use percent_encoding::percent_decode_str;
use url::Url;

/// Percent-decodings applied before giving up: three layers of encoding
/// are plenty for any honest client (the web UI encodes once).
const MAX_DECODES: usize = 4;

/// Why a relayed path is refused (400 `bad_path`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RelayPathError {
    /// A `.` or `..` segment, however encoded.
    #[error("the path may not contain '.' or '..' segments (in any encoding)")]
    DotSegment,
    /// A backslash, which some servers read as a separator.
    #[error("the path may not contain a backslash (in any encoding)")]
    Backslash,
    /// A `/` hidden in one segment by percent-encoding.
    #[error("the path may not contain an encoded slash")]
    EncodedSlash,
    /// NUL or another control character, or a `;` path parameter.
    #[error("the path may not contain control characters or ';'")]
    Forbidden,
    /// Bytes that are not UTF-8 once decoded (overlong forms such as `%c0%ae`).
    #[error("the path is not UTF-8 once percent-decoded")]
    NotUtf8,
    /// Still changing after several percent-decodings.
    #[error("the path is percent-encoded too many times")]
    TooDeep,
    /// An empty segment (`//`).
    #[error("the path may not contain empty segments")]
    Empty,
    /// Not one of the query API's resources.
    #[error("{0:?} is not one of: (nothing), streams, streams/{{stream}}, streams/{{stream}}/rows, streams/{{stream}}/tail")]
    Unknown(String),
    /// A stream name the collection server would not accept.
    #[error("{0:?} is not a stream name ([A-Za-z_][A-Za-z0-9_]*)")]
    BadStream(String),
    /// The experiment's domain is not a valid domain name.
    #[error("the experiment's domain {0:?} is not a valid domain name")]
    BadDomain(String),
    /// The built URL left the domain (never expected: a second line of defence).
    #[error("the upstream path {0:?} is outside the experiment's domain")]
    Outside(String),
    /// The collector's address does not make a URL.
    #[error("the collector's address {0:?} is not a valid URL")]
    BadBase(String),
}

/// A resource of the query API under one domain (docs/query-api.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resource {
    /// `GET /api/v1/domains/{domain}`.
    Domain,
    /// `…/streams`.
    Streams,
    /// `…/streams/{stream}`.
    Stream(String),
    /// `…/streams/{stream}/rows`.
    Rows(String),
    /// `…/streams/{stream}/tail`.
    Tail(String),
}

/// One segment decoded until it no longer changes, then checked.
fn segment(raw: &str) -> Result<String, RelayPathError> {
    let mut cur = raw.to_owned();
    for _ in 0..MAX_DECODES {
        let next = percent_decode_str(&cur)
            .decode_utf8()
            .map_err(|_| RelayPathError::NotUtf8)?
            .into_owned();
        check_decoded(&next)?;
        if next == cur {
            return Ok(cur);
        }
        cur = next;
    }
    Err(RelayPathError::TooDeep)
}

/// Refuses what could move a request between segments or confuse a server.
fn check_decoded(s: &str) -> Result<(), RelayPathError> {
    if s.contains('/') {
        return Err(RelayPathError::EncodedSlash);
    }
    if s.contains('\\') {
        return Err(RelayPathError::Backslash);
    }
    if s.chars().any(|c| c.is_control() || c == ';') {
        return Err(RelayPathError::Forbidden);
    }
    // `.` or `..`, also with the whitespace some parsers trim.
    if matches!(s.trim(), "." | "..") {
        return Err(RelayPathError::DotSegment);
    }
    Ok(())
}

fn stream(s: String) -> Result<String, RelayPathError> {
    if is_valid_name(&s) {
        Ok(s)
    } else {
        Err(RelayPathError::BadStream(s))
    }
}

impl Resource {
    /// Parses the path after `/query/` exactly as the client sent it
    /// (raw, still percent-encoded). A single trailing `/` is allowed.
    pub fn parse(raw: &str) -> Result<Self, RelayPathError> {
        let raw = raw.strip_suffix('/').unwrap_or(raw);
        if raw.is_empty() {
            return Ok(Resource::Domain);
        }
        let mut segs = Vec::new();
        for s in raw.split('/') {
            if s.is_empty() {
                return Err(RelayPathError::Empty);
            }
            segs.push(segment(s)?);
        }
        let mut it = segs.into_iter();
        let first = it.next().unwrap_or_default();
        let (second, third, rest) = (it.next(), it.next(), it.next());
        match (first.as_str(), second, third.as_deref(), rest) {
            ("streams", None, None, None) => Ok(Resource::Streams),
            ("streams", Some(s), None, None) => Ok(Resource::Stream(stream(s)?)),
            ("streams", Some(s), Some("rows"), None) => Ok(Resource::Rows(stream(s)?)),
            ("streams", Some(s), Some("tail"), None) => Ok(Resource::Tail(stream(s)?)),
            _ => Err(RelayPathError::Unknown(raw.to_owned())),
        }
    }

    /// The segments after the domain.
    fn segments(&self) -> Vec<&str> {
        match self {
            Resource::Domain => vec![],
            Resource::Streams => vec!["streams"],
            Resource::Stream(s) => vec!["streams", s],
            Resource::Rows(s) => vec!["streams", s, "rows"],
            Resource::Tail(s) => vec!["streams", s, "tail"],
        }
    }
}

/// `base` with the path `/api/v1/domains/{domain}` followed by `extra`,
/// each segment percent-encoded by the URL library.
fn build(base: &str, domain: &str, extra: &[&str]) -> Result<Url, RelayPathError> {
    let mut url = Url::parse(base).map_err(|_| RelayPathError::BadBase(base.to_owned()))?;
    url.set_query(None);
    url.set_fragment(None);
    url.path_segments_mut()
        .map_err(|_| RelayPathError::BadBase(base.to_owned()))?
        .clear()
        .extend(["api", "v1", "domains", domain])
        .extend(extra);
    Ok(url)
}

/// The upstream URL of `resource` in `domain` on the collector at
/// `base`, with the client's query string; refused unless its final
/// path lies under the domain's prefix.
pub fn upstream_url(
    base: &str,
    domain: &str,
    resource: &Resource,
    query: Option<&str>,
) -> Result<Url, RelayPathError> {
    if !is_valid_domain(domain) {
        return Err(RelayPathError::BadDomain(domain.to_owned()));
    }
    let root = build(base, domain, &[])?;
    let mut url = build(base, domain, &resource.segments())?;
    if let Some(q) = query.filter(|q| !q.is_empty()) {
        url.set_query(Some(q));
    }
    // Re-parse the serialised URL as the HTTP client will, then compare.
    let sent = Url::parse(url.as_str()).map_err(|_| RelayPathError::Outside(url.to_string()))?;
    let (prefix, path) = (root.path(), sent.path());
    let inside = path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|tail| tail.starts_with('/'));
    if !inside || sent.host() != root.host() || sent.port() != root.port() {
        return Err(RelayPathError::Outside(path.to_owned()));
    }
    Ok(sent)
}

#[cfg(test)]
#[path = "relay_path_tests.rs"]
mod tests;
