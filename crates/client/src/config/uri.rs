//! Collection URIs (spec §8.4).
//!
//! | Form | Result |
//! |---|---|
//! | `tcp://HOST[:PORT]`, `HOST[:PORT]`, `tcp:HOST[:PORT]` (deprecated) | [`Uri::Tcp`], port 3003 by default |
//! | `[V6ADDR][:PORT]`, `tcp://[V6ADDR][:PORT]` | [`Uri::Tcp`] with the address unbracketed |
//! | `file:PATH` | [`Uri::File`] (appends) |
//! | `file:-`, `flushfile:-` | [`Uri::Stdout`] |
//! | `flushfile:PATH`, `flush:PATH` | [`Uri::FlushFile`] |
//!
//! Differences from liboml2, on purpose: `flush:PATH` is a flushed file (the
//! reference documents it but parses it as a TCP host named `flush`); URIs
//! are not truncated at 64 characters; `file://host/x`, which the reference
//! turns into the path `//host/x`, is rejected (`file:///abs/path` is fine);
//! an unknown `scheme://` is an error instead of a host name.

use std::net::IpAddr;
use std::path::PathBuf;

use super::error::{ConfigError, UriError};
use crate::spec::Uri;

/// The port used when a TCP URI gives none.
pub const DEFAULT_PORT: u16 = 3003;

/// Parses a collection URI.
///
/// ```
/// use client::config::uri;
/// use client::spec::Uri;
///
/// assert_eq!(
///     uri::parse("tcp://[::1]:3004").unwrap(),
///     Uri::Tcp { host: "::1".into(), port: 3004 }
/// );
/// assert_eq!(uri::parse("file:-").unwrap(), Uri::Stdout);
/// assert!(uri::parse("::1").is_err()); // IPv6 needs brackets
/// ```
pub fn parse(text: &str) -> Result<Uri, ConfigError> {
    parse_inner(text).map_err(|problem| ConfigError::Uri {
        origin: None,
        uri: text.to_owned(),
        problem,
    })
}

fn parse_inner(text: &str) -> Result<Uri, UriError> {
    if text.is_empty() {
        return Err(UriError::Empty);
    }
    if let Some(c) = super::value::xml_forbidden(text) {
        return Err(UriError::ControlCharacter { code: u32::from(c) });
    }
    if let Some(path) = text.strip_prefix("file:") {
        return file(path, "file", Uri::File);
    }
    if let Some(path) = text.strip_prefix("flushfile:") {
        return file(path, "flushfile", Uri::FlushFile);
    }
    if let Some(path) = text.strip_prefix("flush:") {
        return file(path, "flush", Uri::FlushFile);
    }
    if let Some(rest) = text.strip_prefix("tcp://") {
        return tcp(rest);
    }
    if text.starts_with("udp:") {
        return Err(UriError::Unsupported {
            scheme: "udp".into(),
        });
    }
    if let Some((scheme, _)) = text.split_once("://") {
        return Err(UriError::UnknownScheme {
            scheme: scheme.to_owned(),
        });
    }
    // `tcp:host:port` (deprecated) — but `tcp:3003` is host `tcp`, port 3003,
    // as in the reference's regular expression.
    if let Some(rest) = text.strip_prefix("tcp:") {
        if !rest.is_empty() && !rest.bytes().all(|b| b.is_ascii_digit()) {
            return tcp(rest);
        }
    }
    tcp(text)
}

fn file(path: &str, scheme: &str, make: fn(PathBuf) -> Uri) -> Result<Uri, UriError> {
    if path.is_empty() {
        return Err(UriError::MissingPath {
            scheme: scheme.into(),
        });
    }
    if path == "-" {
        return Ok(Uri::Stdout);
    }
    let path = match path.strip_prefix("//") {
        // `file:///abs` is the URL spelling of `/abs`.
        Some(abs) if abs.starts_with('/') => abs,
        Some(_) => {
            return Err(UriError::FileAuthority {
                scheme: scheme.into(),
            })
        }
        None => path,
    };
    Ok(make(PathBuf::from(path)))
}

fn tcp(rest: &str) -> Result<Uri, UriError> {
    let (host, port) = if let Some(inner) = rest.strip_prefix('[') {
        let Some((host, after)) = inner.split_once(']') else {
            return Err(UriError::BadHost {
                host: rest.to_owned(),
            });
        };
        if host.parse::<IpAddr>().is_err() {
            return Err(UriError::BadHost {
                host: format!("[{host}]"),
            });
        }
        let port = match after {
            "" => None,
            _ => match after.strip_prefix(':') {
                Some(p) => Some(p),
                None => {
                    return Err(UriError::BadPort {
                        port: after.to_owned(),
                    })
                }
            },
        };
        (host, port)
    } else {
        match rest.matches(':').count() {
            0 => (rest, None),
            1 => {
                let (h, p) = rest.split_once(':').unwrap_or((rest, ""));
                (h, Some(p))
            }
            _ => return Err(UriError::UnbracketedIpv6),
        }
    };
    if !valid_host(host) {
        return Err(UriError::BadHost {
            host: host.to_owned(),
        });
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => parse_port(p).ok_or_else(|| UriError::BadPort { port: p.to_owned() })?,
    };
    Ok(Uri::Tcp {
        host: host.to_owned(),
        port,
    })
}

/// Host names, IPv4 addresses and (already unbracketed) IPv6 addresses.
fn valid_host(host: &str) -> bool {
    !host.is_empty()
        && (host.parse::<IpAddr>().is_ok()
            || host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_')))
}

fn parse_port(p: &str) -> Option<u16> {
    if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    p.parse::<u16>().ok().filter(|&n| n != 0)
}

/// Writes `uri` back in the form [`parse`] reads (canonical: `tcp://`,
/// brackets around IPv6, `file:-` for standard output).
pub fn to_string(uri: &Uri) -> String {
    match uri {
        Uri::Tcp { host, port } if host.contains(':') => format!("tcp://[{host}]:{port}"),
        Uri::Tcp { host, port } => format!("tcp://{host}:{port}"),
        Uri::File(p) => format!("file:{}", path_text(p)),
        Uri::FlushFile(p) => format!("flushfile:{}", path_text(p)),
        Uri::Stdout => "file:-".to_owned(),
    }
}

fn path_text(p: &std::path::Path) -> String {
    let s = p.to_string_lossy();
    if s.starts_with("//") {
        // Bare `//x` would read back as an authority.
        format!("//{s}")
    } else if s == "-" {
        // Bare `-` would read back as standard output.
        "./-".to_owned()
    } else {
        s.into_owned()
    }
}

/// True for destinations that are files (or standard output), as opposed to TCP.
pub fn is_file(uri: &Uri) -> bool {
    !matches!(uri, Uri::Tcp { .. })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(host: &str, port: u16) -> Uri {
        Uri::Tcp {
            host: host.into(),
            port,
        }
    }

    fn err(text: &str) -> UriError {
        match parse(text) {
            Err(ConfigError::Uri { problem, uri, .. }) => {
                assert_eq!(uri, text);
                problem
            }
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn tcp_forms() {
        for (text, want) in [
            ("tcp://localhost:3004", tcp("localhost", 3004)),
            ("tcp://localhost", tcp("localhost", 3003)),
            ("localhost", tcp("localhost", 3003)),
            ("localhost:4000", tcp("localhost", 4000)),
            ("tcp:srv.example.org:5", tcp("srv.example.org", 5)),
            ("tcp:srv", tcp("srv", 3003)),
            ("tcp:3004", tcp("tcp", 3004)),
            ("10.0.0.1:65535", tcp("10.0.0.1", 65535)),
            ("[10.0.0.1]:1", tcp("10.0.0.1", 1)),
            ("tcp://[::1]:3004", tcp("::1", 3004)),
            ("[::1]", tcp("::1", 3003)),
            ("tcp:[2001:db8::2]:9", tcp("2001:db8::2", 9)),
            ("node_1", tcp("node_1", 3003)),
        ] {
            assert_eq!(parse(text).unwrap(), want, "{text}");
        }
    }

    #[test]
    fn long_uris_are_not_truncated() {
        let host = format!("{}.example.org", "a".repeat(80));
        assert_eq!(parse(&format!("tcp://{host}:7")).unwrap(), tcp(&host, 7));
        let path = format!("/tmp/{}", "p".repeat(100));
        assert_eq!(
            parse(&format!("file:{path}")).unwrap(),
            Uri::File(path.into())
        );
    }

    #[test]
    fn files() {
        assert_eq!(parse("file:out.txt").unwrap(), Uri::File("out.txt".into()));
        assert_eq!(parse("file:/a/b").unwrap(), Uri::File("/a/b".into()));
        assert_eq!(parse("file:///a/b").unwrap(), Uri::File("/a/b".into()));
        assert_eq!(parse("file:-").unwrap(), Uri::Stdout);
        assert_eq!(parse("flushfile:-").unwrap(), Uri::Stdout);
        assert_eq!(parse("file:-x").unwrap(), Uri::File("-x".into()));
        assert_eq!(parse("flushfile:x").unwrap(), Uri::FlushFile("x".into()));
        assert_eq!(parse("flush:x").unwrap(), Uri::FlushFile("x".into()));
        assert_eq!(parse("file:a:b").unwrap(), Uri::File("a:b".into()));
    }

    #[test]
    fn errors() {
        assert_eq!(err(""), UriError::Empty);
        assert_eq!(err("::1"), UriError::UnbracketedIpv6);
        assert_eq!(err("tcp:::1"), UriError::UnbracketedIpv6);
        assert_eq!(err("tcp://::1"), UriError::UnbracketedIpv6);
        assert_eq!(err("fe80::1:3003"), UriError::UnbracketedIpv6);
        for bad in [
            "host:",
            "host:0",
            "host:65536",
            "host:x",
            "host:+1",
            "host:3003/",
            "[::1]x",
        ] {
            assert!(matches!(err(bad), UriError::BadPort { .. }), "{bad}");
        }
        for bad in [
            "[::1",
            "[nothost]:3",
            ":3003",
            "tcp://",
            "a b",
            "a/b:1",
            "[]",
            "[fe80::1%eth0]",
        ] {
            assert!(matches!(err(bad), UriError::BadHost { .. }), "{bad}");
        }
        assert_eq!(
            err("file:"),
            UriError::MissingPath {
                scheme: "file".into()
            }
        );
        assert!(matches!(err("flush:"), UriError::MissingPath { .. }));
        assert!(matches!(
            err("file://host/x"),
            UriError::FileAuthority { .. }
        ));
        assert!(matches!(err("udp:host:3"), UriError::Unsupported { .. }));
        assert!(matches!(err("udp://h"), UriError::Unsupported { .. }));
        assert!(matches!(err("http://h"), UriError::UnknownScheme { .. }));
        assert!(matches!(err("TCP://h"), UriError::UnknownScheme { .. }));
    }

    #[test]
    fn error_messages_say_what_to_do() {
        let e = parse("::1").unwrap_err().to_string();
        assert!(e.contains("bracket"), "{e}");
        let e = parse("udp:h").unwrap_err().to_string();
        assert!(e.contains("not supported"), "{e}");
    }

    #[test]
    fn to_string_round_trips() {
        for text in [
            "tcp://h:1",
            "h",
            "[::1]:5",
            "file:x",
            "file:///abs",
            "flush:y",
            "file:-",
            "file:-x",
        ] {
            let uri = parse(text).unwrap();
            assert_eq!(parse(&to_string(&uri)).unwrap(), uri, "{text}");
        }
        for uri in [Uri::File("//x".into()), Uri::FlushFile("///x".into())] {
            assert_eq!(parse(&to_string(&uri)).unwrap(), uri, "{uri:?}");
        }
    }
}
