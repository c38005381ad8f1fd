//! Checks on a parsed description, whichever form it came from: types,
//! names that must be identifiers, duplicates, property types and
//! defaults, and names reserved in each language code is generated for.
//! Every problem is reported (not only the first), each at its location.

use std::collections::HashMap;

use crate::error::DescriptionError;
use crate::model::{App, DeclType, IntAlias, Literal, Location, MetricType};

/// A language code is generated for; each has its own reserved words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The C headers, main and Makefile.
    C,
    /// The Python module.
    Python,
    /// The Rust module.
    Rust,
}

impl Target {
    fn label(self) -> &'static str {
        match self {
            Target::C => "C",
            Target::Python => "Python",
            Target::Rust => "Rust",
        }
    }

    /// Words a metric or option name cannot be in this language's output.
    fn reserved(self) -> &'static [&'static str] {
        match self {
            // C99/C11 keywords, the <stdbool.h> macros, and the names the
            // injection helpers use for their own parameter and locals.
            Target::C => &[
                "auto",
                "break",
                "case",
                "char",
                "const",
                "continue",
                "default",
                "do",
                "double",
                "else",
                "enum",
                "extern",
                "float",
                "for",
                "goto",
                "if",
                "inline",
                "int",
                "long",
                "register",
                "restrict",
                "return",
                "short",
                "signed",
                "sizeof",
                "static",
                "struct",
                "switch",
                "typedef",
                "union",
                "unsigned",
                "void",
                "volatile",
                "while",
                "_Bool",
                "_Complex",
                "_Imaginary",
                "_Alignas",
                "_Alignof",
                "_Atomic",
                "_Generic",
                "_Noreturn",
                "_Static_assert",
                "_Thread_local",
                "bool",
                "true",
                "false",
                "mp",
                "oml_v",
                "oml_ret",
            ],
            // Python keywords, and `self` (every generated method takes it).
            Target::Python => &[
                "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
                "continue", "def", "del", "elif", "else", "except", "finally", "for", "from",
                "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass",
                "raise", "return", "try", "while", "with", "yield", "self",
            ],
            // Strict and reserved Rust keywords (2021 edition).
            Target::Rust => &[
                "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false",
                "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
                "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait",
                "true", "type", "unsafe", "use", "where", "while", "async", "await", "dyn",
                "abstract", "become", "box", "do", "final", "macro", "override", "priv", "typeof",
                "unsized", "virtual", "yield", "try", "gen",
            ],
        }
    }
}

/// Reads a type name; unknown ones (`bool` among them) are errors at `loc`.
pub fn decl_type(written: &str, loc: &Location) -> Result<DeclType, DescriptionError> {
    DeclType::from_name(written).ok_or_else(|| {
        let hint = match written {
            "bool" => " (did you mean :boolean?)".to_owned(),
            _ => String::new(),
        };
        let known: Vec<_> = MetricType::ALL.iter().map(|t| t.name()).collect();
        DescriptionError::new(
            loc,
            format!(
                "unknown type `{written}`{hint}; known types: {}, and the deprecated int, integer, float, real, flag",
                known.join(", ")
            ),
        )
    })
}

/// Whether `s` is an identifier in C, Python and Rust (ASCII letters,
/// digits and `_`, not starting with a digit).
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// All problems in `app`, for code generated in `targets` (an empty list
/// checks only what every use needs: names, duplicates, types).
pub fn check(app: &App, targets: &[Target], alias: IntAlias) -> Vec<DescriptionError> {
    let mut errs = Vec::new();
    let app_name = &app.name;
    if !is_identifier(&app.c_name()) {
        errs.push(DescriptionError::new(
            &app_name.loc,
            format!("application name `{}` must be letters, digits, `_` or `-`, not starting with a digit (it names files, tables and C identifiers)", app_name.value),
        ));
    }
    let mut mps = HashMap::new();
    for mp in &app.measurements {
        name_checks(
            &mp.name.value,
            &mp.name.loc,
            "measurement point",
            targets,
            &mut errs,
        );
        duplicate(
            &mut mps,
            &mp.name.value,
            &mp.name.loc,
            "measurement point",
            &mut errs,
        );
        if mp.metrics.is_empty() {
            errs.push(DescriptionError::new(
                &mp.name.loc,
                format!(
                    "measurement point `{}` has no metrics; add mp.defMetric('name', :type)",
                    mp.name.value
                ),
            ));
        }
        let mut fields = HashMap::new();
        for m in &mp.metrics {
            name_checks(&m.name.value, &m.name.loc, "metric", targets, &mut errs);
            duplicate(&mut fields, &m.name.value, &m.name.loc, "metric", &mut errs);
        }
        // A blob or vector `x` adds an argument `x_len` to the C helper.
        for m in &mp.metrics {
            if m.ty.decl.resolve(alias).has_length() {
                let len = format!("{}_len", m.name.value);
                if let Some(other) = mp.metrics.iter().find(|o| o.name.value == len) {
                    errs.push(DescriptionError::new(
                        &other.name.loc,
                        format!("metric `{len}` clashes with the length argument of `{}` ({}) in the generated helpers; rename it", m.name.value, m.ty.decl.resolve(alias).name()),
                    ));
                }
            }
        }
    }
    if targets.iter().any(|t| *t != Target::C) {
        type_names(app, &mut errs);
    }
    let mut vars = HashMap::new();
    let mut longs = HashMap::new();
    let mut shorts = HashMap::new();
    for p in &app.properties {
        let ty = p.ty.decl.resolve(alias);
        if !ty.is_property_type() {
            errs.push(DescriptionError::new(
                &p.ty.written.loc,
                format!("property `{}` cannot be of type `{}`: command-line options are boolean, string, int32, uint32, int64, uint64, double or long", p.name.value, p.ty.written.value),
            ));
        }
        name_checks(
            &p.var_name.value,
            &p.var_name.loc,
            "property variable",
            targets,
            &mut errs,
        );
        duplicate(
            &mut vars,
            &p.var_name.value,
            &p.var_name.loc,
            "property variable",
            &mut errs,
        );
        duplicate(
            &mut longs,
            &p.long_name,
            &p.name.loc,
            "long option --",
            &mut errs,
        );
        if let Some(c) = p.short_name {
            duplicate(
                &mut shorts,
                &c.to_string(),
                &p.name.loc,
                "short option -",
                &mut errs,
            );
        }
        if !p
            .long_name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            errs.push(DescriptionError::new(
                &p.name.loc,
                format!(
                    "option `--{}` may hold only letters, digits, `-` and `_`",
                    p.long_name
                ),
            ));
        }
        if let Some(d) = &p.default {
            if let Err(why) = default_fits(&d.value, ty) {
                errs.push(DescriptionError::new(&d.loc, why));
            }
        }
    }
    errs.sort_by_key(|e| (e.loc.line, e.loc.col));
    errs
}

/// Names the Python and Rust modules define or import besides one type per
/// measurement point.
const MODULE_NAMES: [&str; 8] = [
    "MeasurementPoints",
    "Options",
    "Client",
    "ClientError",
    "Mp",
    "OmlType",
    "ValueRef",
    "Sequence",
];

/// The Python and Rust outputs name a type after each measurement point
/// (`if_stats` → `IfStats`): those names must be distinct and free.
fn type_names(app: &App, errs: &mut Vec<DescriptionError>) {
    let mut seen = HashMap::new();
    for mp in &app.measurements {
        let ty = crate::gen::python::class_name(&mp.name.value);
        if MODULE_NAMES.contains(&ty.as_str()) {
            errs.push(DescriptionError::new(
                &mp.name.loc,
                format!("measurement point `{}` would be the type `{ty}`, which the generated module already defines; rename it", mp.name.value),
            ));
        }
        duplicate(&mut seen, &ty, &mp.name.loc, "generated type name", errs);
    }
}

fn name_checks(
    name: &str,
    loc: &Location,
    what: &str,
    targets: &[Target],
    errs: &mut Vec<DescriptionError>,
) {
    if !is_identifier(name) {
        errs.push(DescriptionError::new(
            loc,
            format!("{what} name `{name}` is not an identifier: use ASCII letters, digits and `_`, not starting with a digit"),
        ));
        return;
    }
    for t in targets {
        if t.reserved().contains(&name) {
            errs.push(DescriptionError::new(
                loc,
                format!(
                    "{what} name `{name}` is reserved in the generated {} code; rename it",
                    t.label()
                ),
            ));
        }
    }
}

fn duplicate(
    seen: &mut HashMap<String, Location>,
    name: &str,
    loc: &Location,
    what: &str,
    errs: &mut Vec<DescriptionError>,
) {
    if let Some(first) = seen.get(name) {
        let sep = if what.ends_with('-') { "" } else { " " };
        errs.push(DescriptionError::new(
            loc,
            format!("duplicate {what}{sep}`{name}` (first defined at {first})"),
        ));
    } else {
        seen.insert(name.to_owned(), loc.clone());
    }
}

/// Whether a default value can initialise an option of type `ty`.
pub fn default_fits(lit: &Literal, ty: MetricType) -> Result<(), String> {
    let number = |s: &str| s.trim().parse::<f64>().is_ok();
    let ok = match (ty, lit) {
        (MetricType::String, _) => true,
        (MetricType::Boolean, Literal::Bool(_)) => true,
        (MetricType::Boolean, Literal::Int(i)) => *i == 0 || *i == 1,
        (MetricType::Boolean, Literal::Str(s)) => {
            matches!(s.as_str(), "true" | "false" | "0" | "1")
        }
        (MetricType::Double, Literal::Int(_) | Literal::Float(_)) => true,
        (MetricType::Double, Literal::Str(s)) => number(s),
        (_, Literal::Int(_)) => true,
        (_, Literal::Str(s)) => s.trim().parse::<i64>().is_ok() || s.trim().parse::<u64>().is_ok(),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "default {lit:?} does not fit a property of type {}",
            ty.name()
        ))
    }
}
