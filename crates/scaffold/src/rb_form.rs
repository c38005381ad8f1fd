//! Writing a description in the Ruby-dialect DSL (for `convert`,
//! `--from-db` and the `--app` skeleton), in the form both our parser and
//! the reference generator read.

use std::fmt::Write as _;

use crate::model::{
    App, DeclType, Literal, Located, Location, Measurement, Metric, MetricType, Property, TypeRef,
    Version,
};

/// `s` as a single-quoted Ruby string.
pub fn rb_string(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn literal(l: &Literal) -> String {
    match l {
        Literal::Str(s) => rb_string(s),
        Literal::Int(i) => i.to_string(),
        Literal::Float(f) => format!("{f:?}"),
        Literal::Bool(b) => b.to_string(),
    }
}

fn version_part(p: &str) -> String {
    if !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) {
        p.to_owned()
    } else {
        rb_string(p)
    }
}

/// The description of `app` as Ruby-dialect text.
pub fn to_rb(app: &App, header: &str) -> String {
    let mut s = String::new();
    for l in header.lines() {
        let _ = writeln!(s, "# {l}");
    }
    let _ = writeln!(
        s,
        "\ndefApplication({}, {}) do |app|",
        rb_string(&app.uri),
        rb_string(&app.name.value)
    );
    if let Some(v) = &app.version {
        let _ = writeln!(
            s,
            "  app.version({}, {}, {})",
            version_part(&v.major),
            version_part(&v.minor),
            version_part(&v.revision)
        );
    }
    if let Some(d) = &app.short_description {
        let _ = writeln!(s, "  app.shortDescription = {}", rb_string(d));
    }
    if let Some(d) = &app.description {
        let _ = writeln!(s, "  app.description = {}", rb_string(d));
    }
    if let Some(p) = &app.path {
        let _ = writeln!(s, "  app.path = {}", rb_string(p));
    }
    if !app.properties.is_empty() {
        s.push('\n');
    }
    for p in &app.properties {
        let param = p
            .parameter
            .as_deref()
            .map_or_else(|| "nil".to_owned(), rb_string);
        let _ = write!(
            s,
            "  app.defProperty({}, {}, {param},\n        :type => :{}",
            rb_string(&p.name.value),
            rb_string(&p.description),
            p.ty.written.value
        );
        if let Some(m) = p.mnemonic {
            let _ = write!(s, ", :mnemonic => '{m}'");
        }
        if let Some(u) = &p.unit {
            let _ = write!(s, ", :unit => {}", rb_string(u));
        }
        if let Some(d) = &p.default {
            let _ = write!(s, ", :default => {}", literal(&d.value));
        }
        if p.var_name.value != p.name.value.replace('-', "_") {
            let _ = write!(s, ", :var_name => {}", rb_string(&p.var_name.value));
        }
        s.push_str(")\n");
    }
    for mp in &app.measurements {
        let _ = writeln!(
            s,
            "\n  app.defMeasurement({}) do |mp|",
            rb_string(&mp.name.value)
        );
        for m in &mp.metrics {
            let _ = write!(
                s,
                "    mp.defMetric({}, :{}",
                rb_string(&m.name.value),
                m.ty.written.value
            );
            if m.description.is_some() || m.unit.is_some() {
                let mut opts = Vec::new();
                if let Some(d) = &m.description {
                    opts.push(format!(":description => {}", rb_string(d)));
                }
                if let Some(u) = &m.unit {
                    opts.push(format!(":unit => {}", rb_string(u)));
                }
                let _ = write!(s, ", {{{}}}", opts.join(", "));
            }
            s.push_str(")\n");
        }
        s.push_str("  end\n");
    }
    s.push_str("end\n");
    s
}

fn here() -> Location {
    Location {
        file: "(skeleton)".into(),
        line: 1,
        col: 1,
    }
}

fn typed(t: MetricType) -> TypeRef {
    TypeRef {
        written: Located::new(t.name().to_owned(), here()),
        decl: DeclType::Known(t),
    }
}

fn prop(
    name: &str,
    desc: &str,
    letter: char,
    t: MetricType,
    unit: Option<&str>,
    default: Option<Literal>,
    var: &str,
) -> Property {
    Property {
        name: Located::new(name.into(), here()),
        description: desc.into(),
        parameter: Some(format!("--{name}")),
        long_name: name.into(),
        short_name: Some(letter),
        mnemonic: Some(letter),
        ty: typed(t),
        unit: unit.map(str::to_owned),
        default: default.map(|d| Located::new(d, here())),
        var_name: Located::new(var.into(), here()),
    }
}

/// The skeleton description `--app NAME` writes: a `--loop` flag and a
/// `--delay` (which the generated main uses), a small measurement point,
/// and one using every metric type.
pub fn skeleton(name: &str, user: &str) -> App {
    let metric = |n: &str, t: MetricType| Metric {
        name: Located::new(n.into(), here()),
        ty: typed(t),
        description: None,
        unit: None,
    };
    let every = MetricType::ALL
        .iter()
        .filter(|t| **t != MetricType::Long)
        .map(|t| metric(&format!("{}_field", t.name()), *t))
        .collect();
    App {
        uri: format!("{user}:app:{name}"),
        name: Located::new(name.into(), here()),
        version: Some(Version {
            major: "1".into(),
            minor: "0".into(),
            revision: "0".into(),
        }),
        short_description: Some("What this application measures, in one line".into()),
        description: Some("A longer description: what the application does, and what its\nmeasurement points record.".into()),
        path: Some(format!("/usr/local/bin/{name}")),
        properties: vec![
            // `repeat`, not `loop`: the variable must be an identifier in Rust too.
            prop("loop", "Inject periodically until interrupted", 'l', MetricType::Boolean, None, None, "repeat"),
            prop("delay", "Delay between two samples", 'd', MetricType::Double, Some("seconds"), Some(Literal::Str("1.0".into())), "delay"),
        ],
        measurements: vec![
            Measurement {
                name: Located::new("sensor".into(), here()),
                metrics: vec![
                    metric("val", MetricType::Int32),
                    metric("inverse", MetricType::Double),
                    metric("name", MetricType::String),
                ],
            },
            Measurement {
                name: Located::new("example".into(), here()),
                metrics: every,
            },
        ],
    }
}
