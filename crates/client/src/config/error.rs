//! What can go wrong while reading a configuration, and where.

use std::fmt;
use std::path::PathBuf;

/// A place in a configuration file: its name and, when known, a 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file name as given (or a description such as `<string>`).
    pub file: String,
    /// 1-based line number, when the parser knows it.
    pub line: Option<usize>,
}

impl Location {
    /// The location of byte `offset` of `text`, in `file`.
    pub(crate) fn at(file: &str, text: &str, offset: usize) -> Location {
        let offset = offset.min(text.len());
        let line = 1 + text.as_bytes()[..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        Location {
            file: file.to_owned(),
            line: Some(line),
        }
    }

    /// A location in `file` without a line.
    pub(crate) fn file(file: &str) -> Location {
        Location {
            file: file.to_owned(),
            line: None,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}", self.file),
            None => f.write_str(&self.file),
        }
    }
}

/// Where a rejected value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A command-line option, such as `--oml-samples`.
    Option(String),
    /// An environment variable, such as `OML_OVERLOAD`.
    Env(String),
    /// A key or attribute of a configuration file.
    File {
        /// Where in the file.
        location: Location,
        /// The key, e.g. ``attribute `interval` of <stream>`` or ``key `interval` of [[collect.stream]]``.
        key: String,
    },
    /// The application name given to the library.
    AppName,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Option(o) => write!(f, "option {o}"),
            Origin::Env(v) => write!(f, "environment variable {v}"),
            Origin::File { location, key } => write!(f, "{location}: {key}"),
            Origin::AppName => f.write_str("application name"),
        }
    }
}

/// Why a collection URI was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UriError {
    /// Nothing to parse.
    #[error("the URI is empty; use tcp://HOST:PORT, file:PATH or flushfile:PATH")]
    Empty,
    /// An IPv6 literal without brackets, such as `::1`.
    #[error("IPv6 addresses must be bracketed, as in tcp://[::1]:3003")]
    UnbracketedIpv6,
    /// The port is not a number in 1..=65535.
    #[error("bad port `{port}`: give a number from 1 to 65535")]
    BadPort {
        /// The port text.
        port: String,
    },
    /// The host part is empty or contains characters no host name has.
    #[error("bad host `{host}`: give a host name, an IPv4 address or a bracketed IPv6 address")]
    BadHost {
        /// The host text.
        host: String,
    },
    /// A control character other than tab, line feed or carriage return
    /// (which a configuration file could not write back).
    #[error("the URI contains control character U+{code:04X}; remove it")]
    ControlCharacter {
        /// The character's code point.
        code: u32,
    },
    /// `file:` or `flushfile:` without a path.
    #[error("{scheme}: needs a path, as in {scheme}:out.oml (`file:-` is standard output)")]
    MissingPath {
        /// `file` or `flushfile`.
        scheme: String,
    },
    /// `file://host/...`: a URL authority, which would silently become a path from `/`.
    #[error(
        "`{scheme}://` is not supported: write {scheme}:relative/path or {scheme}:///absolute/path"
    )]
    FileAuthority {
        /// `file` or `flushfile`.
        scheme: String,
    },
    /// A scheme the reference parses but does not implement.
    #[error(
        "the {scheme}: transport is not supported (neither is it by liboml2); use tcp: or file:"
    )]
    Unsupported {
        /// The scheme, e.g. `udp`.
        scheme: String,
    },
    /// A scheme nobody knows.
    #[error("unknown scheme `{scheme}`; use tcp, file, flushfile (or flush)")]
    UnknownScheme {
        /// The scheme text.
        scheme: String,
    },
}

/// Why a configuration (options, environment or file) was rejected.
///
/// Every message names where the problem is and what is allowed instead.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A collection URI could not be parsed.
    #[error("{}invalid collection URI `{uri}`: {problem}", prefix(origin))]
    Uri {
        /// Where the URI came from, when known.
        origin: Option<Origin>,
        /// The URI text.
        uri: String,
        /// What is wrong with it.
        problem: UriError,
    },
    /// An option that takes an argument was last on the command line.
    #[error("option {option} needs an argument: {option} {metavar}")]
    MissingArgument {
        /// The option as written.
        option: String,
        /// What the argument stands for, e.g. `URI`.
        metavar: &'static str,
    },
    /// A flag was given a value with `--oml-flag=value`.
    #[error("option {option} takes no argument (got `{value}`)")]
    UnexpectedArgument {
        /// The option.
        option: String,
        /// The value given.
        value: String,
    },
    /// An `--oml-*` option that does not exist.
    #[error("unknown option {option}; run with --oml-help to list the --oml-* options")]
    UnknownOption {
        /// The option as written.
        option: String,
    },
    /// A value of the wrong form.
    #[error("{origin}: invalid value `{value}`; expected {expected}")]
    InvalidValue {
        /// Where the value came from.
        origin: Origin,
        /// The value as given.
        value: String,
        /// What would have been accepted.
        expected: String,
    },
    /// A measurement point, stream, field, filter or application name that is
    /// not an OML name.
    #[error(
        "{origin}: `{name}` is not a valid name; a name is an ASCII letter or `_` \
         followed by ASCII letters, digits or `_`"
    )]
    InvalidName {
        /// Where the name came from.
        origin: Origin,
        /// The name as given.
        name: String,
    },
    /// The configuration file could not be read.
    #[error("cannot read configuration file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The configuration is not UTF-8.
    #[error("{location}: configuration files must be UTF-8")]
    NotUtf8 {
        /// Where the first invalid byte is.
        location: Location,
    },
    /// The XML or TOML is malformed (or, for TOML, a key is unknown or has the wrong type).
    #[error("{location}: {message}")]
    Syntax {
        /// Where the parser stopped.
        location: Location,
        /// The parser's message.
        message: String,
    },
    /// The XML root element is not `<omlc>`.
    #[error(
        "{location}: the root element is <{found}>; an OML configuration is an <omlc> element"
    )]
    WrongRoot {
        /// The root element.
        location: Location,
        /// Its name.
        found: String,
    },
    /// An XML element that is not allowed where it is.
    #[error(
        "{location}: unknown element <{element}> inside <{parent}>; {}",
        allowed_list("child elements", allowed)
    )]
    UnknownElement {
        /// Where the element starts.
        location: Location,
        /// The element.
        element: String,
        /// Its parent.
        parent: String,
        /// The elements allowed there.
        allowed: Vec<&'static str>,
    },
    /// An XML attribute that the element does not have.
    #[error(
        "{location}: unknown attribute `{attribute}` of <{element}>; {}",
        allowed_list("attributes", allowed)
    )]
    UnknownAttribute {
        /// Where the element starts.
        location: Location,
        /// The element.
        element: String,
        /// The attribute.
        attribute: String,
        /// The attributes allowed.
        allowed: Vec<&'static str>,
    },
    /// A required attribute (or key) is missing.
    #[error("{location}: {context} needs `{key}`")]
    Missing {
        /// Where the element or table starts.
        location: Location,
        /// The element or table, e.g. `<collect>` or `[[collect]]`.
        context: String,
        /// The missing attribute or key (or alternatives, e.g. `samples` or `interval`).
        key: String,
    },
    /// Two attributes or keys that exclude each other (synonyms, or samples and interval).
    #[error("{location}: {context} has both `{first}` and `{second}`; give only one")]
    Conflict {
        /// Where the element or table starts.
        location: Location,
        /// The element or table.
        context: String,
        /// The first key.
        first: String,
        /// The second key.
        second: String,
    },
    /// Text where the XML element takes none.
    #[error("{location}: unexpected text `{text}` inside <{element}>; only <property> holds text")]
    UnexpectedText {
        /// Where the text is.
        location: Location,
        /// The enclosing element.
        element: String,
        /// The text (shortened).
        text: String,
    },
    /// The file names no destination.
    #[error(
        "{location}: no destination; add a <collect url=\"...\"/> element \
         (XML) or a [[collect]] table (TOML)"
    )]
    NoDestination {
        /// The file.
        location: Location,
    },
}

impl ConfigError {
    /// Sets the origin of a [`ConfigError::Uri`] error that has none.
    pub(crate) fn with_origin(self, at: Origin) -> ConfigError {
        match self {
            ConfigError::Uri {
                origin: None,
                uri,
                problem,
            } => ConfigError::Uri {
                origin: Some(at),
                uri,
                problem,
            },
            other => other,
        }
    }

    /// The location in a configuration file, for errors that have one.
    pub fn location(&self) -> Option<&Location> {
        match self {
            ConfigError::Uri {
                origin: Some(Origin::File { location, .. }),
                ..
            }
            | ConfigError::InvalidValue {
                origin: Origin::File { location, .. },
                ..
            }
            | ConfigError::InvalidName {
                origin: Origin::File { location, .. },
                ..
            }
            | ConfigError::NotUtf8 { location }
            | ConfigError::Syntax { location, .. }
            | ConfigError::WrongRoot { location, .. }
            | ConfigError::UnknownElement { location, .. }
            | ConfigError::UnknownAttribute { location, .. }
            | ConfigError::Missing { location, .. }
            | ConfigError::Conflict { location, .. }
            | ConfigError::UnexpectedText { location, .. }
            | ConfigError::NoDestination { location } => Some(location),
            _ => None,
        }
    }
}

fn prefix(origin: &Option<Origin>) -> String {
    origin
        .as_ref()
        .map(|o| format!("{o}: "))
        .unwrap_or_default()
}

fn allowed_list(what: &str, allowed: &[&str]) -> String {
    if allowed.is_empty() {
        format!("it takes no {what}")
    } else {
        let list: Vec<String> = allowed.iter().map(|a| format!("`{a}`")).collect();
        format!("allowed {what}: {}", list.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_lines() {
        let text = "a\nbc\n\nd";
        assert_eq!(Location::at("f", text, 0).line, Some(1));
        assert_eq!(Location::at("f", text, 2).line, Some(2));
        assert_eq!(Location::at("f", text, 6).line, Some(4));
        assert_eq!(Location::at("f", text, 999).line, Some(4));
        assert_eq!(Location::at("f", text, 2).to_string(), "f:2");
        assert_eq!(Location::file("g").to_string(), "g");
    }

    #[test]
    fn messages_name_place_and_alternatives() {
        let e = ConfigError::UnknownAttribute {
            location: Location::at("x.xml", "\n", 1),
            element: "stream".into(),
            attribute: "smaples".into(),
            allowed: vec!["mp", "samples"],
        };
        assert_eq!(
            e.to_string(),
            "x.xml:2: unknown attribute `smaples` of <stream>; allowed attributes: `mp`, `samples`"
        );
        let e = ConfigError::Uri {
            origin: None,
            uri: "::1".into(),
            problem: UriError::UnbracketedIpv6,
        }
        .with_origin(Origin::Option("--oml-collect".into()));
        assert_eq!(
            e.to_string(),
            "option --oml-collect: invalid collection URI `::1`: \
             IPv6 addresses must be bracketed, as in tcp://[::1]:3003"
        );
        assert!(e.location().is_none());
    }
}
