//! The plot definition: the JSON document the web UI saves and exports,
//! read and checked here before anything is fetched or drawn.
//!
//! Every key is checked by hand rather than by serde's derive, so that an
//! error names the key and says what it must hold (serde's messages give
//! a line and column but not the key for a wrong type).

use serde_json::{Map, Value};

/// The only definition format version this build reads.
pub const VERSION: u64 = 1;
/// Default number of points per series (the query API's `points=`).
pub const DEFAULT_POINTS: u32 = 2000;
/// Smallest and largest `points` the query API accepts.
pub const POINTS_RANGE: (u32, u32) = (4, 100_000);

/// Which timestamp column places the points (the query API's `time=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeColumn {
    /// `oml_ts_server`: when the row reached the collection server.
    Server,
    /// `oml_ts_client`: the sender's own timestamp.
    Client,
}

impl TimeColumn {
    /// The query API's column name.
    pub fn column(self) -> &'static str {
        match self {
            TimeColumn::Server => "oml_ts_server",
            TimeColumn::Client => "oml_ts_client",
        }
    }

    /// The query API's parameter value.
    pub fn name(self) -> &'static str {
        match self {
            TimeColumn::Server => "server",
            TimeColumn::Client => "client",
        }
    }
}

/// What is plotted for each field (the query API's `derive=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Derive {
    /// The values as stored.
    None,
    /// The per-second rate of a counter, computed by the server.
    Rate,
}

impl Derive {
    /// The query API's parameter value.
    pub fn name(self) -> &'static str {
        match self {
            Derive::None => "none",
            Derive::Rate => "rate",
        }
    }
}

/// How the time axis is labelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeAxis {
    /// ISO 8601 instants in UTC.
    Utc,
    /// ISO 8601 instants in this machine's time zone, with its offset.
    Local,
    /// Seconds since the first plotted point.
    Relative,
}

/// A checked plot definition.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotDef {
    /// Caption above the chart, if any.
    pub title: Option<String>,
    /// Experiment (domain) holding the stream.
    pub domain: String,
    /// Stream whose fields are plotted.
    pub stream: String,
    /// Fields on the left y axis (at least one).
    pub fields: Vec<String>,
    /// Fields on the right y axis (may be empty).
    pub y2: Vec<String>,
    /// Sender names to plot; empty for every sender.
    pub senders: Vec<String>,
    /// Start of the time range, as the query API accepts it.
    pub from: Option<String>,
    /// End of the time range, as the query API accepts it.
    pub to: Option<String>,
    /// Timestamp column.
    pub time: TimeColumn,
    /// Values or rates.
    pub derive: Derive,
    /// Points per series after the server's M4 downsampling.
    pub points: u32,
    /// Time axis labels.
    pub timeaxis: TimeAxis,
}

/// Why a definition was refused; each message names the key.
#[derive(Debug, thiserror::Error)]
pub enum DefinitionError {
    /// Not JSON at all.
    #[error("the plot definition is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The document is not an object.
    #[error("the plot definition must be a JSON object {{\"version\": 1, \"domain\": …, \"stream\": …, \"fields\": […]}}")]
    NotObject,
    /// A key this version does not know.
    #[error("unknown key {key:?} in the plot definition: the keys are {}", KEYS.join(", "))]
    UnknownKey {
        /// The key found.
        key: String,
    },
    /// A required key is absent.
    #[error("the plot definition has no {key:?}: {what}")]
    Missing {
        /// The key.
        key: &'static str,
        /// What it must hold.
        what: &'static str,
    },
    /// A key holds the wrong type or a value out of range.
    #[error("{key:?} in the plot definition: {message}")]
    Invalid {
        /// The key.
        key: &'static str,
        /// What is wrong and what it must hold.
        message: String,
    },
}

/// Every key of version 1, in the documented order.
pub const KEYS: &[&str] = &[
    "version", "title", "domain", "stream", "fields", "y2", "senders", "from", "to", "time",
    "derive", "points", "timeaxis",
];

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn invalid(key: &'static str, message: impl Into<String>) -> DefinitionError {
    DefinitionError::Invalid {
        key,
        message: message.into(),
    }
}

/// A non-empty string without control characters.
fn string(obj: &Map<String, Value>, key: &'static str) -> Result<Option<String>, DefinitionError> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => {
            Err(invalid(key, "is empty: give a value or leave the key out"))
        }
        Some(Value::String(s)) if s.chars().any(char::is_control) => {
            Err(invalid(key, format!("{s:?} holds control characters")))
        }
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(invalid(key, format!("must be a string, found {}", kind(v)))),
    }
}

/// An array of distinct names (strings that can appear in a URL list).
fn names(obj: &Map<String, Value>, key: &'static str) -> Result<Vec<String>, DefinitionError> {
    let Some(v) = obj.get(key) else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = v else {
        return Err(invalid(
            key,
            format!(
                "must be an array of names ([\"a\", \"b\"]), found {}",
                kind(v)
            ),
        ));
    };
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::String(s) = item else {
            return Err(invalid(
                key,
                format!("element {i} must be a string, found {}", kind(item)),
            ));
        };
        if s.trim().is_empty() || s.contains(',') || s.chars().any(char::is_control) {
            return Err(invalid(
                key,
                format!("element {i} ({s:?}) is not a name: names are non-empty, without commas or control characters"),
            ));
        }
        if out.contains(s) {
            return Err(invalid(key, format!("{s:?} is listed twice")));
        }
        out.push(s.clone());
    }
    Ok(out)
}

fn choice<T: Copy>(
    obj: &Map<String, Value>,
    key: &'static str,
    options: &[(&str, T)],
    default: T,
) -> Result<T, DefinitionError> {
    let allowed = || {
        options
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(" or ")
    };
    match obj.get(key) {
        None => Ok(default),
        Some(Value::String(s)) => options
            .iter()
            .find(|(n, _)| n == s)
            .map(|(_, t)| *t)
            .ok_or_else(|| invalid(key, format!("{s:?}: use {}", allowed()))),
        Some(v) => Err(invalid(
            key,
            format!("must be a string ({}), found {}", allowed(), kind(v)),
        )),
    }
}

impl PlotDef {
    /// Parses and checks a definition document.
    pub fn parse(text: &str) -> Result<PlotDef, DefinitionError> {
        let doc: Value = serde_json::from_str(text)?;
        PlotDef::from_value(&doc)
    }

    /// Checks an already parsed document.
    pub fn from_value(doc: &Value) -> Result<PlotDef, DefinitionError> {
        let Value::Object(obj) = doc else {
            return Err(DefinitionError::NotObject);
        };
        if let Some(key) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(DefinitionError::UnknownKey { key: key.clone() });
        }
        match obj.get("version") {
            None => {
                return Err(DefinitionError::Missing {
                    key: "version",
                    what: "add \"version\": 1",
                })
            }
            Some(v) if v.as_u64() == Some(VERSION) => {}
            Some(v) => {
                return Err(invalid(
                    "version",
                    format!(
                        "{v} is not a version this streamgauge reads: it reads version {VERSION}"
                    ),
                ))
            }
        }
        let required = |key: &'static str, what: &'static str| {
            string(obj, key)?.ok_or(DefinitionError::Missing { key, what })
        };
        let domain = required("domain", "name the experiment (domain) holding the stream")?;
        let stream = required("stream", "name the stream to plot")?;
        let fields = names(obj, "fields")?;
        if fields.is_empty() {
            return Err(match obj.get("fields") {
                None => DefinitionError::Missing {
                    key: "fields",
                    what: "list one or more numeric fields of the stream ([\"rtt\"])",
                },
                Some(_) => invalid("fields", "is empty: list one or more numeric fields"),
            });
        }
        let y2 = names(obj, "y2")?;
        if let Some(f) = y2.iter().find(|f| fields.contains(f)) {
            return Err(invalid(
                "y2",
                format!("{f:?} is also in \"fields\": a field is drawn on one axis only"),
            ));
        }
        let points = match obj.get("points") {
            None => DEFAULT_POINTS,
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| (POINTS_RANGE.0..=POINTS_RANGE.1).contains(n))
                .ok_or_else(|| {
                    invalid(
                        "points",
                        format!(
                            "{v}: give an integer from {} to {} (points per series)",
                            POINTS_RANGE.0, POINTS_RANGE.1
                        ),
                    )
                })?,
        };
        Ok(PlotDef {
            title: string(obj, "title")?,
            domain,
            stream,
            fields,
            y2,
            senders: names(obj, "senders")?,
            from: string(obj, "from")?,
            to: string(obj, "to")?,
            time: choice(
                obj,
                "time",
                &[
                    ("server", TimeColumn::Server),
                    ("client", TimeColumn::Client),
                ],
                TimeColumn::Server,
            )?,
            derive: choice(
                obj,
                "derive",
                &[("none", Derive::None), ("rate", Derive::Rate)],
                Derive::None,
            )?,
            points,
            timeaxis: choice(
                obj,
                "timeaxis",
                &[
                    ("utc", TimeAxis::Utc),
                    ("local", TimeAxis::Local),
                    ("relative", TimeAxis::Relative),
                ],
                TimeAxis::Utc,
            )?,
        })
    }

    /// Every plotted field with its axis (`false` left, `true` right), in
    /// legend order.
    pub fn all_fields(&self) -> impl Iterator<Item = (&str, bool)> {
        self.fields
            .iter()
            .map(|f| (f.as_str(), false))
            .chain(self.y2.iter().map(|f| (f.as_str(), true)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        PlotDef::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn full_definition_is_read() {
        let d = PlotDef::parse(
            r#"{"version":1,"title":"RTT","domain":"lab1","stream":"ping_rtt","fields":["rtt"],
               "y2":["loss"],"senders":["node1"],"from":"10","to":"2026-11-25T21:00:00Z",
               "time":"client","derive":"rate","points":500,"timeaxis":"relative"}"#,
        )
        .unwrap();
        assert_eq!(d.title.as_deref(), Some("RTT"));
        assert_eq!(d.y2, ["loss"]);
        assert_eq!(d.time, TimeColumn::Client);
        assert_eq!(d.derive, Derive::Rate);
        assert_eq!(d.points, 500);
        assert_eq!(d.timeaxis, TimeAxis::Relative);
        let all: Vec<_> = d.all_fields().collect();
        assert_eq!(all, [("rtt", false), ("loss", true)]);
    }

    #[test]
    fn defaults() {
        let d =
            PlotDef::parse(r#"{"version":1,"domain":"d","stream":"s","fields":["v"]}"#).unwrap();
        assert_eq!(d.points, DEFAULT_POINTS);
        assert_eq!(d.time, TimeColumn::Server);
        assert_eq!(d.derive, Derive::None);
        assert_eq!(d.timeaxis, TimeAxis::Utc);
        assert!(d.senders.is_empty() && d.y2.is_empty() && d.title.is_none());
    }

    #[test]
    fn errors_name_the_key() {
        let base = r#""version":1,"domain":"d","stream":"s","fields":["v"]"#;
        for (extra, key, hint) in [
            (r#","colour":"red""#, "colour", "the keys are"),
            (r#","points":"many""#, "points", "integer from 4"),
            (r#","points":2"#, "points", "integer from 4"),
            (r#","y2":"loss""#, "y2", "array of names"),
            (r#","y2":["v"]"#, "y2", "also in"),
            (r#","senders":[1]"#, "senders", "element 0 must be a string"),
            (r#","senders":["a","a"]"#, "senders", "twice"),
            (r#","time":"wall""#, "time", "server or client"),
            (r#","derive":true"#, "derive", "found a boolean"),
            (
                r#","timeaxis":"gmt""#,
                "timeaxis",
                "utc or local or relative",
            ),
            (r#","title":5"#, "title", "must be a string"),
        ] {
            let e = err(&format!("{{{base}{extra}}}"));
            assert!(e.contains(&format!("{key:?}")), "{extra}: {e}");
            assert!(e.contains(hint), "{extra}: {e}");
        }
        assert!(
            err(r#"{"version":2,"domain":"d","stream":"s","fields":["v"]}"#).contains("version 1")
        );
        assert!(err(r#"{"domain":"d","stream":"s","fields":["v"]}"#).contains("\"version\""));
        assert!(err(r#"{"version":1,"stream":"s","fields":["v"]}"#).contains("\"domain\""));
        assert!(err(r#"{"version":1,"domain":"d","stream":"s"}"#).contains("\"fields\""));
        assert!(err(r#"{"version":1,"domain":"d","stream":"s","fields":[]}"#).contains("empty"));
        assert!(err("[1]").contains("JSON object"));
        assert!(err("{").contains("not valid JSON"));
    }
}
