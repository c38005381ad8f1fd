//! liboml2's XML configuration (spec §8.5), legacy spellings included.
//!
//! ```xml
//! <omlc domain="exp1" id="node1">
//!   <collect url="tcp://collector:3003" encoding="binary">
//!     <stream mp="ping" name="ping_avg" samples="10">
//!       <filter field="rtt" operation="avg" rename="r"/>
//!       <filter field="ttl"/>
//!     </stream>
//!   </collect>
//!   <collect url="file:all.oml"/>
//! </omlc>
//! ```
//!
//! - **Filter order: the columns come out in the REVERSE document order of
//!   the `<filter>` elements**, as liboml2 does (spec §8.5, observed). Above,
//!   `ttl` comes before `r_avg r_min r_max`, and
//!   [`StreamSpec::filters`](crate::spec::StreamSpec::filters) lists them in
//!   that (column) order. The TOML format uses document order instead.
//! - `encoding` defaults to **binary**, even for `file:` URLs, as liboml2's XML
//!   (its command line defaults files to text).
//! - An empty `<collect/>` sends every MP with its default stream, and the
//!   client's instrumentation; a `<collect>` with streams sends exactly those,
//!   with `_client_instrumentation` only if a stream names it.
//! - Each `<stream>` (legacy `<mp>`) needs exactly one of `samples` (0 means
//!   1) and `interval` (seconds, > 0).
//! - `overload` and `bufsize` on `<collect>` are streamgauge extensions.
//! - Only UTF-8 is read; `&lt; &gt; &amp; &apos; &quot;` and character
//!   references are the only entities.

use super::error::{ConfigError, Location, Origin};
use super::value;
use super::{uri, FileConfig};
use crate::spec::{DestinationSpec, Encoding, FilterSpec, StreamSpec};

mod tree;
mod write;

use tree::Node;
pub use write::{escape, to_string};

/// An element of the configuration schema.
#[derive(Debug)]
pub struct ElementDef {
    /// Element name.
    pub name: &'static str,
    /// Allowed attributes.
    pub attributes: &'static [&'static str],
    /// Allowed child elements.
    pub children: &'static [&'static str],
    /// Whether it holds text (the property value).
    pub text: bool,
    /// For a legacy element, the element to write instead.
    pub legacy_for: Option<&'static str>,
}

const fn el(
    name: &'static str,
    attributes: &'static [&'static str],
    children: &'static [&'static str],
) -> ElementDef {
    ElementDef {
        name,
        attributes,
        children,
        text: false,
        legacy_for: None,
    }
}

/// The schema: every element, its attributes and its children. Synonyms:
/// `experiment`/`exp_id` of `domain`; `source` of `mp`; `<mp name rename>`
/// of `<stream mp name>`; `<f>` of `<filter>`, and on either of them
/// `pname`/`fname`/`sname` of `field`/`operation`/`rename`; `<fp>` of
/// `<property>`.
pub const ELEMENTS: &[ElementDef] = &[
    el(
        "omlc",
        &["domain", "id", "experiment", "exp_id"],
        &["collect"],
    ),
    el(
        "collect",
        &["url", "encoding", "overload", "bufsize", "backchannel"],
        &["stream", "mp"],
    ),
    el(
        "stream",
        &["mp", "source", "name", "samples", "interval"],
        &["filter", "f"],
    ),
    ElementDef {
        legacy_for: Some("stream"),
        ..el(
            "mp",
            &["name", "rename", "samples", "interval"],
            &["filter", "f"],
        )
    },
    el("filter", FILTER_ATTRIBUTES, &["property", "fp"]),
    ElementDef {
        legacy_for: Some("filter"),
        ..el("f", FILTER_ATTRIBUTES, &["property", "fp"])
    },
    ElementDef {
        text: true,
        ..el("property", &["name", "type"], &[])
    },
    ElementDef {
        text: true,
        legacy_for: Some("property"),
        ..el("fp", &["name", "type"], &[])
    },
];

/// Attributes of `<filter>` and `<f>`: liboml2 reads each of the three
/// under either spelling on either element (its own example writes `<f
/// pname fname rename>`), so both elements take all six.
const FILTER_ATTRIBUTES: &[&str] = &["field", "pname", "operation", "fname", "rename", "sname"];

/// Parses an XML configuration; `file` names it in error messages.
pub fn parse(text: &str, file: &str) -> Result<FileConfig, ConfigError> {
    let root = tree::read(text, file)?;
    Conv { file, text }.omlc(&root)
}

/// Converts the element tree, validating values.
struct Conv<'a> {
    file: &'a str,
    text: &'a str,
}

impl Conv<'_> {
    fn loc(&self, node: &Node) -> Location {
        Location::at(self.file, self.text, node.offset)
    }

    fn origin(&self, node: &Node, attr: &str) -> Origin {
        Origin::File {
            location: self.loc(node),
            key: format!("attribute `{attr}` of <{}>", node.def.name),
        }
    }

    fn invalid(&self, node: &Node, attr: &str, value: &str, expected: &str) -> ConfigError {
        ConfigError::InvalidValue {
            origin: self.origin(node, attr),
            value: value.to_owned(),
            expected: expected.to_owned(),
        }
    }

    /// The one attribute present among the synonyms `names`, with its name.
    fn one_of<'n>(
        &self,
        node: &'n Node,
        names: &[&'static str],
    ) -> Result<Option<(&'static str, &'n str)>, ConfigError> {
        let mut found: Option<(&'static str, &'n str)> = None;
        for (n, v) in &node.attrs {
            if names.contains(n) {
                if let Some((first, _)) = found {
                    return Err(ConfigError::Conflict {
                        location: self.loc(node),
                        context: format!("<{}>", node.def.name),
                        first: first.into(),
                        second: (*n).into(),
                    });
                }
                found = Some((n, v));
            }
        }
        Ok(found)
    }

    fn required<'n>(
        &self,
        node: &'n Node,
        names: &[&'static str],
    ) -> Result<(&'static str, &'n str), ConfigError> {
        self.one_of(node, names)?
            .ok_or_else(|| ConfigError::Missing {
                location: self.loc(node),
                context: format!("<{}>", node.def.name),
                key: names[0].to_owned(),
            })
    }

    /// An OML name (MP, stream, field, filter, column prefix).
    fn name(&self, node: &Node, (attr, v): (&str, &str)) -> Result<String, ConfigError> {
        if omsp::names::is_valid_name(v) {
            Ok(v.to_owned())
        } else {
            Err(ConfigError::InvalidName {
                origin: self.origin(node, attr),
                name: v.to_owned(),
            })
        }
    }

    fn omlc(&self, node: &Node) -> Result<FileConfig, ConfigError> {
        let domain = match self.one_of(node, &["domain", "experiment", "exp_id"])? {
            Some((_, v)) if omsp::names::is_valid_domain(v) => Some(v.to_owned()),
            Some((a, v)) => return Err(self.invalid(node, a, v, value::DOMAIN_SYNTAX)),
            None => None,
        };
        let id = match node.attr("id") {
            Some(v) if value::is_valid_id(v) => Some(v.to_owned()),
            Some(v) => return Err(self.invalid(node, "id", v, value::ID_SYNTAX)),
            None => None,
        };
        let destinations = node
            .children
            .iter()
            .map(|c| self.collect(c))
            .collect::<Result<Vec<_>, _>>()?;
        if destinations.is_empty() {
            return Err(ConfigError::NoDestination {
                location: self.loc(node),
            });
        }
        Ok(FileConfig {
            id,
            domain,
            destinations,
        })
    }

    fn collect(&self, node: &Node) -> Result<DestinationSpec, ConfigError> {
        let (_, url) = self.required(node, &["url"])?;
        let uri = uri::parse(url).map_err(|e| e.with_origin(self.origin(node, "url")))?;
        let streams = node
            .children
            .iter()
            .map(|c| self.stream(c))
            .collect::<Result<Vec<_>, _>>()?;
        // liboml2's XML defaults to binary for every destination.
        value::DestinationOptions {
            encoding: node.attr("encoding"),
            overload: node.attr("overload"),
            bufsize: node.attr("bufsize"),
            backchannel: node.attr("backchannel"),
        }
        .build(uri, Encoding::Binary, streams, |key, v, syntax| {
            self.invalid(node, key, v, syntax)
        })
    }

    fn stream(&self, node: &Node) -> Result<StreamSpec, ConfigError> {
        let legacy = node.def.name == "mp";
        let (mp_attrs, name_attr): (&[&str], &str) = if legacy {
            (&["name"], "rename")
        } else {
            (&["mp", "source"], "name")
        };
        let mp = self.name(node, self.required(node, mp_attrs)?)?;
        let name = match node.attr(name_attr) {
            Some(v) => Some(self.name(node, (name_attr, v))?),
            None => None,
        };
        let window = match (node.attr("samples"), node.attr("interval")) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::Conflict {
                    location: self.loc(node),
                    context: format!("<{}>", node.def.name),
                    first: "samples".into(),
                    second: "interval".into(),
                })
            }
            (None, None) => {
                return Err(ConfigError::Missing {
                    location: self.loc(node),
                    context: format!("<{}>", node.def.name),
                    key: "samples` or `interval".into(),
                })
            }
            (Some(v), None) => v
                .parse::<i64>()
                .ok()
                .and_then(value::samples_window)
                .ok_or_else(|| self.invalid(node, "samples", v, value::SAMPLES_SYNTAX))?,
            (None, Some(v)) => value::parse_seconds(v)
                .and_then(value::interval_window)
                .ok_or_else(|| self.invalid(node, "interval", v, value::INTERVAL_SYNTAX))?,
        };
        let mut filters = node
            .children
            .iter()
            .map(|c| self.filter(c))
            .collect::<Result<Vec<_>, _>>()?;
        // liboml2 prepends each filter: columns are in reverse document order.
        filters.reverse();
        Ok(StreamSpec {
            mp,
            name,
            window,
            filters,
        })
    }

    fn filter(&self, node: &Node) -> Result<FilterSpec, ConfigError> {
        let field = self.name(node, self.required(node, &["field", "pname"])?)?;
        let optional = |names: &[&'static str]| match self.one_of(node, names)? {
            Some(found) => self.name(node, found).map(Some),
            None => Ok(None),
        };
        let operation = optional(&["operation", "fname"])?;
        let rename = optional(&["rename", "sname"])?;
        let properties = node
            .children
            .iter()
            .map(|p| self.property(p))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(FilterSpec {
            field,
            operation,
            rename,
            properties,
        })
    }

    fn property(&self, node: &Node) -> Result<filters::Property, ConfigError> {
        let (_, name) = self.required(node, &["name"])?;
        if name.is_empty() {
            return Err(self.invalid(node, "name", name, "a non-empty property name"));
        }
        let ty = node.attr("type").unwrap_or("string");
        if omsp::OmlType::from_name(ty).is_none() {
            return Err(self.invalid(node, "type", ty, TYPE_SYNTAX));
        }
        Ok(filters::Property {
            name: name.to_owned(),
            ty: ty.to_owned(),
            value: node.text.trim().to_owned(),
        })
    }
}

/// What a property `type` may be.
pub(crate) const TYPE_SYNTAX: &str =
    "an OML type name: int32, uint32, int64, uint64, double, string, blob, guid, bool, \
     or a vector type such as [double]";

#[cfg(test)]
mod tests;
