//! Reading the Ruby-dialect description (`app.rb`) without running Ruby:
//! a lexer for the literals and punctuation descriptions use, a parser for
//! calls, blocks and assignments, and an interpreter that gives the
//! `defApplication`/`defProperty`/`defMeasurement`/`defMetric` calls their
//! meaning. Every error names the file, line and column.

mod interp;
mod lexer;
mod syntax;

pub use interp::deprecation;

use crate::error::{DescriptionError, Error};
use crate::model::{App, IntAlias, Warning};
use crate::validate;

/// Parses and checks a description; `file` is the name used in messages.
pub fn parse_rb(text: &str, file: &str) -> Result<(App, Vec<Warning>), Error> {
    let app_and_warnings = read(text, file).map_err(|e| Error::Description(vec![e]))?;
    let errs = validate::check(&app_and_warnings.0, &[], IntAlias::Int32);
    if errs.is_empty() {
        Ok(app_and_warnings)
    } else {
        Err(Error::Description(errs))
    }
}

fn read(text: &str, file: &str) -> Result<(App, Vec<Warning>), DescriptionError> {
    let tokens = lexer::tokenize(text, file)?;
    let stmts = syntax::parse_program(&tokens)?;
    let mut warnings = Vec::new();
    let app = interp::application(&stmts, file, &mut warnings)?;
    Ok((app, warnings))
}
