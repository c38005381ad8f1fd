//! Meaning of the statements: `defApplication` with its attributes,
//! `version`, `defProperty` (OMF 5.4 form and the older one) and
//! `defMeasurement`/`defMetric`, following what the reference generator
//! does with each argument.

use super::syntax::{Block, Expr, Node, Stmt};
use crate::error::DescriptionError;
use crate::model::{
    App, Literal, Located, Location, Measurement, Metric, TypeRef, Version, Warning,
};

type Res<T> = Result<T, DescriptionError>;

/// What reading found besides the application: remarks, and errors that
/// do not stop the reading (so that all of them are reported at once).
#[derive(Debug, Default)]
pub struct Notes {
    /// Deprecated forms, with what to write instead.
    pub warnings: Vec<Warning>,
    /// Problems found so far.
    pub errors: Vec<DescriptionError>,
}

/// Builds the application from the file's statements.
pub fn application(stmts: &[Stmt], file: &str, notes: &mut Notes) -> Res<App> {
    let mut app = None;
    for s in stmts {
        let Stmt::Call {
            receiver: None,
            method,
            args,
            block,
        } = s
        else {
            return Err(DescriptionError::new(
                stmt_loc(s),
                "only `defApplication(uri, name) do |app| ... end` is allowed at the top level",
            ));
        };
        if method.0 != "defApplication" {
            return Err(DescriptionError::new(
                &method.1,
                format!("unknown top-level call `{}`; a description holds one `defApplication(uri, name) do |app| ... end`", method.0),
            ));
        }
        if app.is_some() {
            return Err(DescriptionError::new(
                &method.1,
                "a second defApplication; write one application per description file",
            ));
        }
        app = Some(def_application(&method.1, args, block.as_ref(), notes)?);
    }
    app.ok_or_else(|| {
        DescriptionError::new(
            &Location {
                file: file.to_owned(),
                line: 1,
                col: 1,
            },
            "no defApplication(uri, name) do |app| ... end in this file",
        )
    })
}

fn stmt_loc(s: &Stmt) -> &Location {
    match s {
        Stmt::Call {
            receiver: Some(r), ..
        } => &r.1,
        Stmt::Call { method, .. } => &method.1,
        Stmt::Assign { receiver, .. } => &receiver.1,
    }
}

fn def_application(
    at: &Location,
    args: &[Node],
    block: Option<&Block>,
    notes: &mut Notes,
) -> Res<App> {
    arity(at, "defApplication", args, 1, 2)?;
    let uri = text(&args[0], "the application URI")?;
    let name = match args.get(1) {
        Some(Node {
            expr: Expr::Nil, ..
        })
        | None => Located::new(
            uri.value.rsplit(':').next().unwrap_or_default().to_owned(),
            uri.loc.clone(),
        ),
        Some(n) => text(n, "the application name")?,
    };
    let mut app = App {
        uri: uri.value,
        name,
        version: None,
        short_description: None,
        description: None,
        path: None,
        properties: Vec::new(),
        measurements: Vec::new(),
    };
    let Some(block) = block else {
        return Ok(app);
    };
    for s in &block.body {
        check_receiver(s, block, "app")?;
        match s {
            Stmt::Assign { attr, value, .. } => {
                let v = Some(text(value, &format!("`{}`", attr.0))?.value);
                match attr.0.as_str() {
                    "shortDescription" => app.short_description = v,
                    "description" => app.description = v,
                    "path" => app.path = v,
                    other => {
                        return Err(DescriptionError::new(
                            &attr.1,
                            format!("unknown application attribute `{other}`; known: shortDescription, description, path"),
                        ))
                    }
                }
            }
            Stmt::Call {
                method, args, block, ..
            } => match method.0.as_str() {
                "version" => app.version = Some(version(&method.1, args)?),
                "defProperty" => app
                    .properties
                    .push(super::property::def_property(&method.1, args, notes)?),
                "defMeasurement" => app.measurements.push(def_measurement(
                    &method.1,
                    args,
                    block.as_ref(),
                    notes,
                )?),
                other => {
                    return Err(DescriptionError::new(
                        &method.1,
                        format!("unknown application method `{other}`; known: version, defProperty, defMeasurement, shortDescription=, description=, path="),
                    ))
                }
            },
        }
    }
    Ok(app)
}

/// Statements in a block must be called on its parameter (`app.…`).
fn check_receiver(s: &Stmt, block: &Block, usual: &str) -> Res<()> {
    let recv = match s {
        Stmt::Call { receiver, .. } => receiver.as_ref(),
        Stmt::Assign { receiver, .. } => Some(receiver),
    };
    let Some(param) = &block.param else {
        return Err(DescriptionError::new(
            stmt_loc(s),
            format!(
                "the block has no parameter; write `do |{usual}|` and call methods on `{usual}`"
            ),
        ));
    };
    match recv {
        Some(r) if r.0 == param.0 => Ok(()),
        Some(r) => Err(DescriptionError::new(
            &r.1,
            format!(
                "`{}` is not defined here; the block parameter is `{}`",
                r.0, param.0
            ),
        )),
        None => Err(DescriptionError::new(
            stmt_loc(s),
            format!("call this on the block parameter (`{}.…`)", param.0),
        )),
    }
}

fn version(at: &Location, args: &[Node]) -> Res<Version> {
    arity(at, "version", args, 1, 3)?;
    let part = |i: usize| -> Res<String> {
        match args.get(i).map(|n| (&n.expr, &n.loc)) {
            None => Ok("0".to_owned()),
            Some((Expr::Int(v), _)) => Ok(v.to_string()),
            Some((Expr::Str(s), _)) => Ok(s.clone()),
            Some((_, loc)) => Err(DescriptionError::new(
                loc,
                "a version part must be an integer or a string",
            )),
        }
    };
    Ok(Version {
        major: part(0)?,
        minor: part(1)?,
        revision: part(2)?,
    })
}

fn def_measurement(
    at: &Location,
    args: &[Node],
    block: Option<&Block>,
    notes: &mut Notes,
) -> Res<Measurement> {
    arity(at, "defMeasurement", args, 1, 1)?;
    let name = text(&args[0], "the measurement point name")?;
    let mut mp = Measurement {
        name,
        metrics: Vec::new(),
    };
    let Some(block) = block else {
        return Ok(mp);
    };
    for s in &block.body {
        check_receiver(s, block, "mp")?;
        match s {
            Stmt::Call { method, args, .. } if method.0 == "defMetric" => {
                mp.metrics.push(def_metric(&method.1, args, notes)?);
            }
            Stmt::Call { method, .. } => {
                return Err(DescriptionError::new(
                    &method.1,
                    format!(
                    "unknown measurement point method `{}`; only defMetric(name, type) is known",
                    method.0
                ),
                ))
            }
            Stmt::Assign { attr, .. } => {
                return Err(DescriptionError::new(
                    &attr.1,
                    format!("measurement points have no attribute `{}`", attr.0),
                ))
            }
        }
    }
    Ok(mp)
}

fn def_metric(at: &Location, args: &[Node], notes: &mut Notes) -> Res<Metric> {
    arity(at, "defMetric", args, 2, 4)?;
    let name = text(&args[0], "the metric name")?;
    let ty = type_ref(&args[1], notes)?;
    let mut description = None;
    let mut unit = None;
    for extra in &args[2..] {
        match &extra.expr {
            Expr::Str(s) => description = Some(s.clone()),
            Expr::Hash(_) => {
                for (k, v) in pairs(Some(extra), "defMetric options")? {
                    match key(k)?.as_str() {
                        "description" => description = Some(text(v, "`:description`")?.value),
                        "unit" => unit = Some(text(v, "`:unit`")?.value),
                        other => return Err(unknown_key(k, other, "description, unit")),
                    }
                }
            }
            _ => {
                return Err(DescriptionError::new(
                    &extra.loc,
                    "defMetric's third argument is a description string or an options hash",
                ))
            }
        }
    }
    if let Some(hint) = deprecation(&ty.written.value) {
        notes.warnings.push(Warning {
            loc: ty.written.loc.clone(),
            message: hint,
        });
    }
    Ok(Metric {
        name,
        ty,
        description,
        unit,
    })
}

/// The advice for a deprecated type name, if it is one.
pub fn deprecation(written: &str) -> Option<String> {
    match written {
        "long" => Some("type :long is deprecated; use :int32, :uint32, :int64 or :uint64".into()),
        "float" | "real" => Some(format!("type :{written} is deprecated; use :double")),
        "flag" => Some("type :flag is deprecated; use :boolean".into()),
        _ => None,
    }
}

/// A type given as `:sym` or `'string'`. An unknown name is recorded in
/// `notes` (reading goes on, so that every problem is reported at once).
pub(super) fn type_ref(n: &Node, notes: &mut Notes) -> Res<TypeRef> {
    let written = match &n.expr {
        Expr::Sym(s) | Expr::Str(s) => s.clone(),
        _ => {
            return Err(DescriptionError::new(
                &n.loc,
                "a type is a symbol such as :int32 or a string such as 'int32'",
            ))
        }
    };
    match crate::validate::decl_type(&written, &n.loc) {
        Ok(decl) => Ok(TypeRef {
            written: Located::new(written, n.loc.clone()),
            decl,
        }),
        Err(e) => {
            notes.errors.push(e);
            Ok(TypeRef::placeholder(&n.loc))
        }
    }
}

pub(super) fn arity(at: &Location, what: &str, args: &[Node], min: usize, max: usize) -> Res<()> {
    if args.len() < min || args.len() > max {
        let want = if min == max {
            format!("{min}")
        } else {
            format!("{min} to {max}")
        };
        return Err(DescriptionError::new(
            at,
            format!("{what} takes {want} arguments, {} given", args.len()),
        ));
    }
    Ok(())
}

pub(super) fn text(n: &Node, what: &str) -> Res<Located<String>> {
    match &n.expr {
        Expr::Str(s) | Expr::Sym(s) => Ok(Located::new(s.clone(), n.loc.clone())),
        _ => Err(DescriptionError::new(
            &n.loc,
            format!("{what} must be a string"),
        )),
    }
}

pub(super) fn literal(n: &Node) -> Res<Located<Literal>> {
    let lit = match &n.expr {
        Expr::Str(s) | Expr::Sym(s) => Literal::Str(s.clone()),
        Expr::Int(i) => Literal::Int(*i),
        Expr::Float(f) => Literal::Float(*f),
        Expr::Bool(b) => Literal::Bool(*b),
        _ => {
            return Err(DescriptionError::new(
                &n.loc,
                "a default is a string, a number, true or false",
            ))
        }
    };
    Ok(Located::new(lit, n.loc.clone()))
}

pub(super) fn pairs<'a>(hash: Option<&'a Node>, what: &str) -> Res<&'a [(Node, Node)]> {
    match hash {
        None => Ok(&[]),
        Some(Node {
            expr: Expr::Hash(p),
            ..
        }) => Ok(p),
        Some(n) => Err(DescriptionError::new(
            &n.loc,
            format!("{what} must be a hash"),
        )),
    }
}

pub(super) fn key(k: &Node) -> Res<String> {
    match &k.expr {
        Expr::Sym(s) | Expr::Str(s) => Ok(s.clone()),
        _ => Err(DescriptionError::new(
            &k.loc,
            "option names are symbols (:type)",
        )),
    }
}

pub(super) fn unknown_key(k: &Node, name: &str, known: &str) -> DescriptionError {
    DescriptionError::new(&k.loc, format!("unknown option `:{name}`; known: {known}"))
}

pub(super) fn single_char(s: &Located<String>, what: &str) -> Res<char> {
    let mut chars = s.value.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if c.is_ascii_alphanumeric() => Ok(c),
        _ => Err(DescriptionError::new(
            &s.loc,
            format!("{what} must be a single letter or digit, not `{}`", s.value),
        )),
    }
}
