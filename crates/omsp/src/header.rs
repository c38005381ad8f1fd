//! The connection header: `key: value` lines ended by an empty line.

use crate::schema::{Schema, SchemaError};

/// How tuples are encoded after the header (`content:` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Content {
    /// Tab-separated text lines (the default when `content` is absent).
    #[default]
    Text,
    /// Binary packets with `AA AA` sync bytes.
    Binary,
}

impl Content {
    /// The header value: `text` or `binary`.
    pub fn name(self) -> &'static str {
        match self {
            Content::Text => "text",
            Content::Binary => "binary",
        }
    }
}

/// Highest protocol version streamgauge speaks.
pub const MAX_PROTOCOL: u8 = 5;

/// A parsed connection header.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Header {
    /// OMSP version, 1..=5.
    pub protocol: u8,
    /// Experiment domain (`domain`, or `experiment-id` before v4); names the database.
    pub domain: Option<String>,
    /// Client reference time in Unix seconds (`start-time`, or `start_time`);
    /// tuple timestamps are relative to it.
    pub start_time: Option<i64>,
    /// Sender identifier (`sender-id`).
    pub sender_id: Option<String>,
    /// Application name (`app-name`).
    pub app_name: Option<String>,
    /// Schemas declared in the header, in order.
    pub schemas: Vec<Schema>,
    /// Tuple encoding.
    pub content: Content,
    /// Keys streamgauge does not know, in order, kept verbatim: extensions are
    /// announced this way, and a stock server ignores them.
    pub extra: Vec<(String, String)>,
}

/// Why a header line or header was rejected. All of these end the session:
/// without a valid header nothing after it can be interpreted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HeaderError {
    /// A line has no `:`.
    #[error("header line {0:?} has no ':'")]
    NoColon(String),
    /// `protocol` is not an integer in 1..=5.
    #[error("unsupported protocol version {0:?} (streamgauge speaks 1 to 5)")]
    BadProtocol(String),
    /// The header ended without a `protocol` line.
    #[error("header has no 'protocol' line")]
    MissingProtocol,
    /// `start-time` is not an integer.
    #[error("start-time {0:?} is not an integer number of seconds")]
    BadStartTime(String),
    /// `content` is neither `text` nor `binary`.
    #[error("content {0:?} is neither 'text' nor 'binary'")]
    BadContent(String),
    /// A `schema` line did not parse.
    #[error("schema {line:?}: {source}")]
    BadSchema {
        /// The schema text.
        line: String,
        /// What was wrong with it.
        source: SchemaError,
    },
    /// A header line is longer than the decoder's limit.
    #[error("header line longer than {max} bytes")]
    LineTooLong {
        /// Configured maximum.
        max: usize,
    },
    /// A line is not UTF-8.
    #[error("header line is not valid UTF-8")]
    NotUtf8,
    /// The header is larger, in bytes, than the decoder's limit.
    #[error(
        "header larger than {max} bytes (a client header is a few hundred bytes plus its schemas)"
    )]
    TooLarge {
        /// Configured maximum.
        max: usize,
    },
    /// The header has more lines than the decoder's limit.
    #[error("header has more than {max} lines")]
    TooManyLines {
        /// Configured maximum.
        max: usize,
    },
    /// The header declares more schemas than a session may have.
    #[error("header declares more than {max} schemas")]
    TooManySchemas {
        /// Configured maximum.
        max: usize,
    },
    /// The header has more unknown (extension) keys than the decoder keeps.
    #[error("header has more than {max} extension keys")]
    TooManyExtraKeys {
        /// Configured maximum.
        max: usize,
    },
}

/// How much one header may hold; every bound is checked as the line
/// arrives, so a hostile header costs at most these many bytes of memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderLimits {
    /// Most fields in one schema.
    pub max_fields: usize,
    /// Most lines (the final empty line excluded).
    pub max_lines: usize,
    /// Most `schema` lines.
    pub max_schemas: usize,
    /// Most unknown keys kept in [`Header::extra`].
    pub max_extra_keys: usize,
}

impl HeaderLimits {
    /// No bound but on the fields of a schema.
    pub fn unbounded(max_fields: usize) -> HeaderLimits {
        HeaderLimits {
            max_fields,
            max_lines: usize::MAX,
            max_schemas: usize::MAX,
            max_extra_keys: usize::MAX,
        }
    }
}

impl Default for HeaderLimits {
    fn default() -> HeaderLimits {
        HeaderLimits::unbounded(usize::MAX)
    }
}

/// Builds a [`Header`] one line at a time (the decoder feeds it).
#[derive(Debug, Default)]
pub struct HeaderBuilder {
    header: Header,
    saw_protocol: bool,
    limits: HeaderLimits,
    lines: usize,
}

impl HeaderBuilder {
    /// A builder whose schemas may have at most `max_fields` fields, and
    /// no other bound.
    pub fn new(max_fields: usize) -> HeaderBuilder {
        HeaderBuilder::with_limits(HeaderLimits::unbounded(max_fields))
    }

    /// A builder that refuses a header over `limits`.
    pub fn with_limits(limits: HeaderLimits) -> HeaderBuilder {
        HeaderBuilder {
            limits,
            ..HeaderBuilder::default()
        }
    }

    /// The header so far (for checks that need not wait for its end, such
    /// as authentication).
    pub fn partial(&self) -> &Header {
        &self.header
    }

    /// Takes one line (without its LF; a trailing CR is tolerated).
    pub fn line(&mut self, line: &[u8]) -> Result<(), HeaderError> {
        self.lines += 1;
        if self.lines > self.limits.max_lines {
            return Err(HeaderError::TooManyLines {
                max: self.limits.max_lines,
            });
        }
        let line = std::str::from_utf8(line).map_err(|_| HeaderError::NotUtf8)?;
        let (key, value) = line
            .split_once(':')
            .ok_or_else(|| HeaderError::NoColon(line.to_owned()))?;
        let key = key.trim();
        let value = value.trim();
        let h = &mut self.header;
        match key {
            "protocol" => {
                h.protocol = value
                    .parse::<u8>()
                    .ok()
                    .filter(|p| (1..=MAX_PROTOCOL).contains(p))
                    .ok_or_else(|| HeaderError::BadProtocol(value.to_owned()))?;
                self.saw_protocol = true;
            }
            "domain" | "experiment-id" => h.domain = Some(value.to_owned()),
            "start-time" | "start_time" => {
                h.start_time = Some(
                    value
                        .parse()
                        .map_err(|_| HeaderError::BadStartTime(value.to_owned()))?,
                )
            }
            "sender-id" => h.sender_id = Some(value.to_owned()),
            "app-name" => h.app_name = Some(value.to_owned()),
            "schema" => {
                if h.schemas.len() >= self.limits.max_schemas {
                    return Err(HeaderError::TooManySchemas {
                        max: self.limits.max_schemas,
                    });
                }
                let schema =
                    Schema::parse_with_limit(value, self.limits.max_fields).map_err(|source| {
                        HeaderError::BadSchema {
                            line: value.to_owned(),
                            source,
                        }
                    })?;
                h.schemas.push(schema);
            }
            "content" => {
                h.content = match value {
                    "text" => Content::Text,
                    "binary" => Content::Binary,
                    _ => return Err(HeaderError::BadContent(value.to_owned())),
                }
            }
            _ => {
                if h.extra.len() >= self.limits.max_extra_keys {
                    return Err(HeaderError::TooManyExtraKeys {
                        max: self.limits.max_extra_keys,
                    });
                }
                h.extra.push((key.to_owned(), value.to_owned()))
            }
        }
        Ok(())
    }

    /// Completes the header (called at the empty line).
    pub fn finish(self) -> Result<Header, HeaderError> {
        if !self.saw_protocol {
            return Err(HeaderError::MissingProtocol);
        }
        Ok(self.header)
    }
}

impl Header {
    /// A header for protocol 5 with the given identity and no schemas.
    pub fn new(
        domain: &str,
        sender_id: &str,
        app_name: &str,
        start_time: i64,
        content: Content,
    ) -> Header {
        Header {
            protocol: MAX_PROTOCOL,
            domain: Some(domain.to_owned()),
            start_time: Some(start_time),
            sender_id: Some(sender_id.to_owned()),
            app_name: Some(app_name.to_owned()),
            schemas: Vec::new(),
            content,
            extra: Vec::new(),
        }
    }

    /// Parses a complete header (all lines up to and including the empty
    /// line); returns it with the number of bytes it took.
    pub fn parse(bytes: &[u8]) -> Result<Option<(Header, usize)>, HeaderError> {
        let mut b = HeaderBuilder::new(usize::MAX);
        let mut pos = 0;
        while let Some(lf) = memchr::memchr(b'\n', &bytes[pos..]) {
            let line = strip_cr(&bytes[pos..pos + lf]);
            pos += lf + 1;
            if line.is_empty() {
                return b.finish().map(|h| Some((h, pos)));
            }
            b.line(line)?;
        }
        Ok(None)
    }

    /// Writes the header the way liboml2 does: `protocol`, `domain`,
    /// `start-time`, `sender-id`, `app-name`, one `schema` line per schema
    /// (with liboml2's trailing space), `content`, empty line. Extension keys
    /// (which liboml2 never writes) go before the schemas, so that a server
    /// sees an authentication token or a session id within the first few
    /// hundred bytes, whatever the number of schemas. Versions below 4 use
    /// the older spellings `experiment-id` and `start_time`.
    pub fn write(&self, out: &mut Vec<u8>) {
        let old = self.protocol < 4;
        let mut line = |k: &str, v: &str| {
            out.extend_from_slice(k.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(v.as_bytes());
            out.push(b'\n');
        };
        line("protocol", itoa::Buffer::new().format(self.protocol));
        if let Some(d) = &self.domain {
            line(if old { "experiment-id" } else { "domain" }, d);
        }
        if let Some(t) = self.start_time {
            line(
                if old { "start_time" } else { "start-time" },
                itoa::Buffer::new().format(t),
            );
        }
        if let Some(s) = &self.sender_id {
            line("sender-id", s);
        }
        if let Some(a) = &self.app_name {
            line("app-name", a);
        }
        for (k, v) in &self.extra {
            line(k, v);
        }
        for s in &self.schemas {
            line("schema", &format!("{s} "));
        }
        line("content", self.content.name());
        out.push(b'\n');
    }
}

/// Removes one trailing CR (CRLF line endings are accepted).
pub(crate) fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIBOML2: &[u8] = b"protocol: 5\ndomain: vecdomain\nstart-time: 1795310947\nsender-id: vec-sender\napp-name: vec\nschema: 0 _experiment_metadata subject:string key:string value:string \nschema: 2 vec_vd v:[double] \ncontent: binary\n\nAA";

    #[test]
    fn parses_and_rewrites_liboml2_header_byte_for_byte() {
        let (h, used) = Header::parse(LIBOML2).unwrap().unwrap();
        assert_eq!(used, LIBOML2.len() - 2);
        assert_eq!(h.protocol, 5);
        assert_eq!(h.domain.as_deref(), Some("vecdomain"));
        assert_eq!(h.start_time, Some(1795310947));
        assert_eq!(h.content, Content::Binary);
        assert_eq!(h.schemas.len(), 2);
        let mut out = Vec::new();
        h.write(&mut out);
        assert_eq!(out, &LIBOML2[..used]);
    }

    #[test]
    fn old_spellings_crlf_spaces_and_unknown_keys() {
        let raw = b"protocol: 3\r\nexperiment-id :  old \r\nstart_time: 10\r\nx-auth: tok\r\n\r\n";
        let (h, _) = Header::parse(raw).unwrap().unwrap();
        assert_eq!(h.protocol, 3);
        assert_eq!(h.domain.as_deref(), Some("old"));
        assert_eq!(h.start_time, Some(10));
        assert_eq!(h.content, Content::Text);
        assert_eq!(h.extra, vec![("x-auth".to_owned(), "tok".to_owned())]);
        let mut out = Vec::new();
        h.write(&mut out);
        assert!(out.starts_with(b"protocol: 3\nexperiment-id: old\nstart_time: 10\n"));
    }

    #[test]
    fn errors() {
        let p = |s: &[u8]| Header::parse(s);
        assert_eq!(
            p(b"protocol: 6\n\n"),
            Err(HeaderError::BadProtocol("6".into()))
        );
        assert_eq!(
            p(b"protocol: 0\n\n"),
            Err(HeaderError::BadProtocol("0".into()))
        );
        assert_eq!(
            p(b"protocol: x\n\n"),
            Err(HeaderError::BadProtocol("x".into()))
        );
        assert_eq!(p(b"domain: d\n\n"), Err(HeaderError::MissingProtocol));
        assert_eq!(
            p(b"protocol 5\n\n"),
            Err(HeaderError::NoColon("protocol 5".into()))
        );
        assert_eq!(
            p(b"protocol: 5\ncontent: Binary\n\n"),
            Err(HeaderError::BadContent("Binary".into()))
        );
        assert!(matches!(
            p(b"protocol: 5\nschema: 1 a x:int\n\n"),
            Err(HeaderError::BadSchema { .. })
        ));
        assert_eq!(
            p(b"protocol: 5\nstart-time: 1.5\n\n"),
            Err(HeaderError::BadStartTime("1.5".into()))
        );
        assert_eq!(p(b"protocol: 5\n"), Ok(None));
    }
}
