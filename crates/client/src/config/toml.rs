//! streamgauge's TOML configuration: the XML's content in TOML.
//!
//! ```toml
//! domain = "exp1"              # optional; command line and environment win
//! id = "node1"                 # optional; command line and environment win
//!
//! [[collect]]                  # one per destination, at least one
//! url = "tcp://localhost:3003"
//! encoding = "binary"          # or "text"; default: text for files, binary for TCP
//! overload = "block"           # "block:SECONDS", "drop-newest", "drop-oldest"
//! bufsize = 67108864           # or "64M"
//! backchannel = "off"          # "resume" or "feedback" (TCP; spec/omsp.md §3.6-3.7)
//!
//! [[collect.stream]]           # none: every MP with its default stream
//! mp = "ping"
//! name = "ping_avg"            # table <app>_ping_avg; default: the MP name
//! samples = 10                 # or interval = 1.5 (exactly one)
//!
//! [[collect.stream.filter]]    # none: the default filter for every field
//! field = "rtt"
//! operation = "avg"            # default: avg for numbers when windowed, else first
//! rename = "r"                 # column prefix; default: the field name
//! properties = { q = "0.5,0.99", n = 3, w = { type = "int32", value = "5" } }
//! ```
//!
//! Differences from the XML, on purpose:
//! - **Filters are in document order**: the first `[[collect.stream.filter]]`
//!   gives the first columns (the XML's are reversed, as liboml2's).
//! - `encoding` defaults by destination (text for files, binary for TCP), as
//!   the command line; the XML defaults to binary.
//! - No legacy synonyms. Unknown keys are errors.
//! - Property values may be strings (type `string`), integers (`int64`),
//!   floats (`double`), booleans (`bool`), or `{ type = "...", value = ... }`.
//!
//! A `[[collect]]` without streams (or with `stream = []`) sends every MP
//! with its default stream plus the client's instrumentation; with streams,
//! `_client_instrumentation` is sent only if a stream names it.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use toml_crate::Spanned;

use super::error::{ConfigError, Location, Origin};
use super::value;
use super::{uri, FileConfig};
use crate::spec::{DestinationSpec, FilterSpec, StreamSpec};

use ::toml as toml_crate;

/// Every table of the format and its keys, in the order the documentation
/// lists them (a test checks this against what the parser accepts).
pub const KEYS: &[(&str, &[&str])] = &[
    ("", &["domain", "id", "collect"]),
    (
        "[[collect]]",
        &[
            "url",
            "encoding",
            "overload",
            "bufsize",
            "backchannel",
            "stream",
        ],
    ),
    (
        "[[collect.stream]]",
        &["mp", "name", "samples", "interval", "filter"],
    ),
    (
        "[[collect.stream.filter]]",
        &["field", "operation", "rename", "properties"],
    ),
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    domain: Option<Spanned<String>>,
    id: Option<Spanned<String>>,
    #[serde(default)]
    collect: Vec<Spanned<RawCollect>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCollect {
    url: String,
    encoding: Option<String>,
    overload: Option<String>,
    bufsize: Option<Bufsize>,
    backchannel: Option<String>,
    #[serde(default)]
    stream: Vec<Spanned<RawStream>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStream {
    mp: String,
    name: Option<String>,
    samples: Option<i64>,
    interval: Option<f64>,
    #[serde(default)]
    filter: Vec<Spanned<RawFilter>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFilter {
    field: String,
    operation: Option<String>,
    rename: Option<String>,
    #[serde(default)]
    properties: Properties,
}

/// `bufsize = 65536` or `bufsize = "64M"`.
enum Bufsize {
    Int(i64),
    Text(String),
}

impl<'de> Deserialize<'de> for Bufsize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Bufsize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number of bytes, or a string such as \"64M\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Bufsize, E> {
                Ok(Bufsize::Int(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Bufsize, E> {
                Ok(Bufsize::Text(v.to_owned()))
            }
        }
        d.deserialize_any(V)
    }
}

/// Filter properties in document order.
#[derive(Default)]
struct Properties(Vec<filters::Property>);

impl<'de> Deserialize<'de> for Properties {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Properties;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table of filter properties")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Properties, A::Error> {
                let mut props = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    let v: toml_crate::Value = map.next_value()?;
                    props.push(property(name, v).map_err(de::Error::custom)?);
                }
                Ok(Properties(props))
            }
        }
        d.deserialize_map(V)
    }
}

fn scalar_text(v: &toml_crate::Value) -> Option<(&'static str, String)> {
    use toml_crate::Value as T;
    Some(match v {
        T::String(s) => ("string", s.clone()),
        T::Integer(i) => ("int64", i.to_string()),
        T::Float(f) => ("double", f.to_string()),
        T::Boolean(b) => ("bool", b.to_string()),
        _ => return None,
    })
}

fn property(name: String, v: toml_crate::Value) -> Result<filters::Property, String> {
    let (ty, value) = match &v {
        toml_crate::Value::Table(t) => {
            let ty = t.get("type").and_then(|t| t.as_str());
            let value = t.get("value").and_then(scalar_text);
            match (ty, value, t.len()) {
                (Some(ty), Some((_, value)), 2) => {
                    if omsp::OmlType::from_name(ty).is_none() {
                        return Err(format!(
                            "property `{name}`: unknown type `{ty}`; expected {}",
                            super::xml::TYPE_SYNTAX
                        ));
                    }
                    (ty.to_owned(), value)
                }
                _ => {
                    return Err(format!(
                    "property `{name}`: a table property is {{ type = \"TYPE\", value = VALUE }}"
                ))
                }
            }
        }
        other => match scalar_text(other) {
            Some((ty, value)) => (ty.to_owned(), value),
            None => {
                return Err(format!(
                    "property `{name}`: give a string, number, boolean or {{ type, value }} table"
                ))
            }
        },
    };
    for (what, text) in [("name", &name), ("value", &value)] {
        if let Some(c) = value::xml_forbidden(text) {
            return Err(format!(
                "property `{name}`: its {what} has a {}",
                value::xml_forbidden_message(c)
            ));
        }
    }
    Ok(filters::Property { name, ty, value })
}

/// Parses a TOML configuration; `file` names it in error messages.
pub fn parse(text: &str, file: &str) -> Result<FileConfig, ConfigError> {
    let raw: RawConfig = toml_crate::from_str(text).map_err(|e| ConfigError::Syntax {
        location: match e.span() {
            Some(span) => Location::at(file, text, span.start),
            None => Location::file(file),
        },
        message: e.message().trim_end().to_owned(),
    })?;
    let conv = Conv { file, text };
    let domain = match raw.domain {
        Some(d) if omsp::names::is_valid_domain(d.get_ref()) => Some(d.into_inner()),
        Some(d) => {
            return Err(conv.invalid(
                d.span().start,
                "domain",
                "",
                d.get_ref(),
                value::DOMAIN_SYNTAX,
            ))
        }
        None => None,
    };
    let id = match raw.id {
        Some(d) if value::is_valid_id(d.get_ref()) => Some(d.into_inner()),
        Some(d) => {
            return Err(conv.invalid(d.span().start, "id", "", d.get_ref(), value::ID_SYNTAX))
        }
        None => None,
    };
    if raw.collect.is_empty() {
        return Err(ConfigError::NoDestination {
            location: Location::file(file),
        });
    }
    let destinations = raw
        .collect
        .into_iter()
        .map(|c| conv.collect(c))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(FileConfig {
        id,
        domain,
        destinations,
    })
}

struct Conv<'a> {
    file: &'a str,
    text: &'a str,
}

impl Conv<'_> {
    fn origin(&self, at: usize, key: &str, table: &str) -> Origin {
        let key = if table.is_empty() {
            format!("key `{key}`")
        } else {
            format!("key `{key}` of {table}")
        };
        Origin::File {
            location: Location::at(self.file, self.text, at),
            key,
        }
    }

    fn invalid(&self, at: usize, key: &str, table: &str, v: &str, expected: &str) -> ConfigError {
        ConfigError::InvalidValue {
            origin: self.origin(at, key, table),
            value: v.to_owned(),
            expected: expected.to_owned(),
        }
    }

    fn name(&self, at: usize, key: &str, table: &str, v: String) -> Result<String, ConfigError> {
        if omsp::names::is_valid_name(&v) {
            Ok(v)
        } else {
            Err(ConfigError::InvalidName {
                origin: self.origin(at, key, table),
                name: v,
            })
        }
    }

    fn collect(&self, c: Spanned<RawCollect>) -> Result<DestinationSpec, ConfigError> {
        const T: &str = "[[collect]]";
        let at = c.span().start;
        let c = c.into_inner();
        let uri = uri::parse(&c.url).map_err(|e| e.with_origin(self.origin(at, "url", T)))?;
        // A TOML integer is checked as its digits (zero and negatives refused).
        let bufsize = c.bufsize.as_ref().map(|b| match b {
            Bufsize::Int(n) => n.to_string(),
            Bufsize::Text(s) => s.clone(),
        });
        let streams = c
            .stream
            .into_iter()
            .map(|s| self.stream(s))
            .collect::<Result<Vec<_>, _>>()?;
        value::DestinationOptions {
            encoding: c.encoding.as_deref(),
            overload: c.overload.as_deref(),
            bufsize: bufsize.as_deref(),
            backchannel: c.backchannel.as_deref(),
        }
        .build(
            uri.clone(),
            value::default_encoding(&uri),
            streams,
            |key, v, syntax| self.invalid(at, key, T, v, syntax),
        )
    }

    fn stream(&self, s: Spanned<RawStream>) -> Result<StreamSpec, ConfigError> {
        const T: &str = "[[collect.stream]]";
        let at = s.span().start;
        let s = s.into_inner();
        let mp = self.name(at, "mp", T, s.mp)?;
        let name = s.name.map(|n| self.name(at, "name", T, n)).transpose()?;
        let location = || Location::at(self.file, self.text, at);
        let window = match (s.samples, s.interval) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::Conflict {
                    location: location(),
                    context: T.into(),
                    first: "samples".into(),
                    second: "interval".into(),
                })
            }
            (None, None) => {
                return Err(ConfigError::Missing {
                    location: location(),
                    context: T.into(),
                    key: "samples` or `interval".into(),
                })
            }
            (Some(n), None) => value::samples_window(n).ok_or_else(|| {
                self.invalid(at, "samples", T, &n.to_string(), value::SAMPLES_SYNTAX)
            })?,
            (None, Some(f)) => Duration::try_from_secs_f64(f)
                .ok()
                .and_then(value::interval_window)
                .ok_or_else(|| {
                    self.invalid(at, "interval", T, &f.to_string(), value::INTERVAL_SYNTAX)
                })?,
        };
        let filters = s
            .filter
            .into_iter()
            .map(|f| self.filter(f))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(StreamSpec {
            mp,
            name,
            window,
            filters,
        })
    }

    fn filter(&self, f: Spanned<RawFilter>) -> Result<FilterSpec, ConfigError> {
        const T: &str = "[[collect.stream.filter]]";
        let at = f.span().start;
        let f = f.into_inner();
        Ok(FilterSpec {
            field: self.name(at, "field", T, f.field)?,
            operation: f
                .operation
                .map(|o| self.name(at, "operation", T, o))
                .transpose()?,
            rename: f
                .rename
                .map(|r| self.name(at, "rename", T, r))
                .transpose()?,
            properties: f.properties.0,
        })
    }
}

#[cfg(test)]
mod tests;
