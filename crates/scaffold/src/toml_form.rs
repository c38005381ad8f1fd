//! The TOML form of a description (`app.toml`), for teams that would rather
//! not write Ruby syntax at all. Same content as the DSL:
//!
//! ```toml
//! [application]
//! uri = "alice:app:example"
//! name = "example"            # default: last ':' part of uri
//! version = "1.0.0"
//! short_description = "An example"
//!
//! [[property]]
//! name = "delay"
//! description = "Delay between samples"
//! parameter = "--delay"       # or "-d"
//! type = "double"
//! mnemonic = "d"
//! unit = "seconds"
//! default = 1.0
//!
//! [[measurement]]
//! name = "counter"
//! metrics = [
//!   { name = "label", type = "string" },
//!   { name = "count", type = "uint32", description = "events so far" },
//! ]
//! ```
//!
//! Unknown keys are errors; every error has a line and column.

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::error::{DescriptionError, Error};
use crate::model::{
    option_names, App, Literal, Located, Location, Measurement, Metric, Property, TypeRef, Version,
};
use crate::validate;

#[derive(Deserialize, Serialize)]
#[serde(
    deny_unknown_fields,
    bound(deserialize = "S: Deserialize<'de>", serialize = "S: Serialize")
)]
struct File<S> {
    application: Application<S>,
    #[serde(default, rename = "property", skip_serializing_if = "Vec::is_empty")]
    properties: Vec<PropertyT<S>>,
    #[serde(default, rename = "measurement", skip_serializing_if = "Vec::is_empty")]
    measurements: Vec<MeasurementT<S>>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Application<S> {
    uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<S>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    short_description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<String>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct PropertyT<S> {
    name: S,
    #[serde(default)]
    description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameter: Option<String>,
    #[serde(rename = "type")]
    ty: S,
    #[serde(skip_serializing_if = "Option::is_none")]
    mnemonic: Option<S>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    default: Option<DefaultT>,
    #[serde(skip_serializing_if = "Option::is_none")]
    var_name: Option<S>,
}

#[derive(Deserialize, Serialize, Clone)]
#[serde(untagged)]
enum DefaultT {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct MeasurementT<S> {
    name: S,
    metrics: Vec<MetricT<S>>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct MetricT<S> {
    name: S,
    #[serde(rename = "type")]
    ty: S,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unit: Option<String>,
}

/// Line and column of a byte offset.
fn location(text: &str, file: &str, offset: usize) -> Location {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    Location {
        file: file.to_owned(),
        line,
        col,
    }
}

/// Parses and checks the TOML form.
pub fn parse_toml(text: &str, file: &str) -> Result<App, Error> {
    let parsed: File<Spanned<String>> = toml::from_str(text).map_err(|e| {
        let at = location(text, file, e.span().map_or(0, |s| s.start));
        DescriptionError::new(&at, e.message().trim().to_owned())
    })?;
    let loc = |s: &Spanned<String>| location(text, file, s.span().start);
    let located = |s: &Spanned<String>| Located::new(s.get_ref().clone(), loc(s));
    // Unknown types are collected, so that every problem is reported at once.
    let type_errors = std::cell::RefCell::new(Vec::new());
    let type_ref = |s: &Spanned<String>| -> Result<TypeRef, DescriptionError> {
        Ok(match validate::decl_type(s.get_ref(), &loc(s)) {
            Ok(decl) => TypeRef {
                written: located(s),
                decl,
            },
            Err(e) => {
                type_errors.borrow_mut().push(e);
                TypeRef::placeholder(&loc(s))
            }
        })
    };
    let a = parsed.application;
    let name = match &a.name {
        Some(n) => located(n),
        None => Located::new(
            a.uri.rsplit(':').next().unwrap_or_default().to_owned(),
            location(text, file, 0),
        ),
    };
    let version = a.version.as_deref().map(|v| {
        let mut parts = v.split('.').map(str::to_owned);
        let mut next = || parts.next().unwrap_or_else(|| "0".into());
        Version {
            major: next(),
            minor: next(),
            revision: next(),
        }
    });
    let mut properties = Vec::new();
    for p in &parsed.properties {
        let mnemonic = match &p.mnemonic {
            Some(m) => {
                let mut chars = m.get_ref().chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => Some(c),
                    _ => {
                        return Err(DescriptionError::new(
                            &loc(m),
                            "mnemonic must be a single character",
                        )
                        .into())
                    }
                }
            }
            None => None,
        };
        let (long_name, short_name) =
            option_names(p.name.get_ref(), p.parameter.as_deref(), mnemonic);
        let default = p.default.as_ref().map(|d| {
            let lit = match d.clone() {
                DefaultT::Bool(b) => Literal::Bool(b),
                DefaultT::Int(i) => Literal::Int(i),
                DefaultT::Float(f) => Literal::Float(f),
                DefaultT::Str(s) => Literal::Str(s),
            };
            Located::new(lit, loc(&p.ty))
        });
        properties.push(Property {
            name: located(&p.name),
            description: p.description.clone(),
            parameter: p.parameter.clone(),
            long_name,
            short_name,
            mnemonic,
            ty: type_ref(&p.ty)?,
            unit: p.unit.clone(),
            default,
            var_name: p.var_name.as_ref().map_or_else(
                || Located::new(p.name.get_ref().replace('-', "_"), loc(&p.name)),
                located,
            ),
        });
    }
    let mut measurements = Vec::new();
    for m in &parsed.measurements {
        let mut metrics = Vec::new();
        for f in &m.metrics {
            metrics.push(Metric {
                name: located(&f.name),
                ty: type_ref(&f.ty)?,
                description: f.description.clone(),
                unit: f.unit.clone(),
            });
        }
        measurements.push(Measurement {
            name: located(&m.name),
            metrics,
        });
    }
    let app = App {
        uri: a.uri,
        name,
        version,
        short_description: a.short_description,
        description: a.description,
        path: a.path,
        properties,
        measurements,
    };
    let mut errs = type_errors.into_inner();
    errs.extend(validate::check(&app, &[], Default::default()));
    errs.sort_by_key(|e| (e.loc.line, e.loc.col));
    if errs.is_empty() {
        Ok(app)
    } else {
        Err(Error::Description(errs))
    }
}

/// The TOML form of `app`.
pub fn to_toml(app: &App) -> String {
    let file = File::<String> {
        application: Application {
            uri: app.uri.clone(),
            name: Some(app.name.value.clone()),
            version: app.version.as_ref().map(ToString::to_string),
            short_description: app.short_description.clone(),
            description: app.description.clone(),
            path: app.path.clone(),
        },
        properties: app
            .properties
            .iter()
            .map(|p| PropertyT {
                name: p.name.value.clone(),
                description: p.description.clone(),
                parameter: p.parameter.clone(),
                ty: p.ty.written.value.clone(),
                mnemonic: p.mnemonic.map(String::from),
                unit: p.unit.clone(),
                default: p.default.as_ref().map(|d| match &d.value {
                    Literal::Bool(b) => DefaultT::Bool(*b),
                    Literal::Int(i) => DefaultT::Int(*i),
                    Literal::Float(f) => DefaultT::Float(*f),
                    Literal::Str(s) => DefaultT::Str(s.clone()),
                }),
                var_name: (p.var_name.value != p.name.value.replace('-', "_"))
                    .then(|| p.var_name.value.clone()),
            })
            .collect(),
        measurements: app
            .measurements
            .iter()
            .map(|m| MeasurementT {
                name: m.name.value.clone(),
                metrics: m
                    .metrics
                    .iter()
                    .map(|f| MetricT {
                        name: f.name.value.clone(),
                        ty: f.ty.written.value.clone(),
                        description: f.description.clone(),
                        unit: f.unit.clone(),
                    })
                    .collect(),
            })
            .collect(),
    };
    let body = toml::to_string_pretty(&file).unwrap_or_else(|e| format!("# cannot render: {e}\n"));
    format!(
        "# Application description of {}, read by `streamgauge scaffold`.\n\n{body}",
        app.name.value
    )
}
