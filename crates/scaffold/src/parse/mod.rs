//! Reading the Ruby-dialect description (`app.rb`) without running Ruby:
//! a lexer for the literals and punctuation descriptions use, a parser for
//! calls, blocks and assignments, and an interpreter that gives the
//! `defApplication`/`defProperty`/`defMeasurement`/`defMetric` calls their
//! meaning. Every error names the file, line and column.

mod interp;
mod lexer;
mod property;
mod syntax;

pub use interp::deprecation;

use crate::error::{DescriptionError, Error};
use crate::model::{App, IntAlias, Warning};
use crate::validate;

/// Parses and checks a description; `file` is the name used in messages.
pub fn parse_rb(text: &str, file: &str) -> Result<(App, Vec<Warning>), Error> {
    let (app, notes) = read(text, file).map_err(|e| Error::Description(vec![e]))?;
    let mut errs = notes.errors;
    errs.extend(validate::check(&app, &[], IntAlias::Int32));
    errs.sort_by_key(|e| (e.loc.line, e.loc.col));
    if errs.is_empty() {
        Ok((app, notes.warnings))
    } else {
        Err(Error::Description(errs))
    }
}

/// Syntax errors stop the reading; the others are collected in the notes.
fn read(text: &str, file: &str) -> Result<(App, interp::Notes), DescriptionError> {
    let tokens = lexer::tokenize(text, file)?;
    let stmts = syntax::parse_program(&tokens)?;
    let mut notes = interp::Notes::default();
    let app = interp::application(&stmts, file, &mut notes)?;
    Ok((app, notes))
}
