//! # scaffold — application descriptions to instrumentation code
//!
//! OML applications describe their measurement points and command-line
//! options in a short Ruby-dialect file (`defApplication`, `defProperty`,
//! `defMeasurement`, `defMetric`); the reference `oml2-scaffold` runs it
//! with a Ruby interpreter and writes C. This crate reads the same files
//! without Ruby (and a TOML equivalent), checks them with precise
//! `file:line:col` errors, and generates:
//!
//! - C that programs written against `oml2-scaffold` output compile with
//!   unchanged (`<app>_oml.h`, `<app>_popt.h`, `<app>.c`, `config.h`,
//!   `Makefile`);
//! - a Python module (typed class per measurement point, argparse options);
//! - a Rust module (typed struct per measurement point, clap options).
//!
//! ```
//! let rb = "defApplication('alice:app:seed', 'seed') do |app|\n\
//!             app.defMeasurement('counter') do |mp|\n\
//!               mp.defMetric('label', :string)\n\
//!               mp.defMetric('count', :uint32)\n\
//!             end\n\
//!           end\n";
//! let (app, _warnings) = scaffold::parse_rb(rb, "seed.rb").unwrap();
//! let header = scaffold::gen::c::oml_h(&app, &Default::default());
//! assert!(header.contains("oml_inject_counter(OmlMP *mp, const char *label, uint32_t count)"));
//!
//! let bad = "defApplication('a:b', 'b') do |app|\n  app.defMeasurement('m') do |mp|\n    mp.defMetric('ok', :bool)\n  end\nend\n";
//! let err = scaffold::parse_rb(bad, "bad.rb").unwrap_err().to_string();
//! assert!(err.starts_with("bad.rb:3:24: error: unknown type `bool` (did you mean :boolean?)"));
//! ```
#![deny(missing_docs)]

pub mod error;
pub mod from_db;
pub mod gen;
pub mod model;
pub mod parse;
pub mod rb_form;
pub mod run;
pub mod toml_form;
pub mod validate;
pub mod write;

use std::path::Path;

pub use error::{DescriptionError, Error};
pub use model::{App, IntAlias, Warning};
pub use parse::parse_rb;
pub use toml_form::{parse_toml, to_toml};

/// The two forms a description file can take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// The Ruby-dialect DSL (`.rb`).
    Rb,
    /// TOML (`.toml`).
    Toml,
}

impl Form {
    /// The form of `path`: `.toml` is TOML, anything else the DSL.
    pub fn of(path: &Path) -> Form {
        match path.extension().and_then(|e| e.to_str()) {
            Some("toml") => Form::Toml,
            _ => Form::Rb,
        }
    }
}

/// Reads and checks a description file in either form.
pub fn load(path: &Path) -> Result<(App, Vec<Warning>), Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })?;
    let name = path.display().to_string();
    match Form::of(path) {
        Form::Rb => parse_rb(&text, &name),
        Form::Toml => parse_toml(&text, &name).map(|app| (app, Vec::new())),
    }
}

/// Checks `app` for the languages of `outputs` (reserved words), then
/// plans the files; nothing is written here.
pub fn plan(
    app: &App,
    outputs: &[gen::Output],
    opts: &gen::Options,
    dir: &Path,
) -> Result<Vec<write::Planned>, Error> {
    let mut targets: Vec<validate::Target> = outputs.iter().map(|o| o.target()).collect();
    targets.dedup();
    let errs = validate::check(app, &targets, opts.int_alias);
    if !errs.is_empty() {
        return Err(Error::Description(errs));
    }
    Ok(gen::plan(app, outputs, opts, dir))
}
