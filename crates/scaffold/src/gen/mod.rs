//! Code generation from a checked [`App`]: C (`c`, `c_main`), Python and
//! Rust. Each generator is a pure function from the description to the
//! text of one file; [`plan`] chooses the files for the requested outputs
//! and [`crate::write`] writes them under the overwrite rules.

pub mod c;
pub mod c_main;
pub mod python;
pub mod rust;

use std::path::PathBuf;

use crate::model::{App, IntAlias};
use crate::validate::Target;
use crate::write::{Overwrite, Planned};

/// Generation settings shared by every output.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// What `:int`/`:integer` mean (`-i/--int32`, `-l/--long`).
    pub int_alias: IntAlias,
}

/// A file `streamgauge scaffold` can write for a description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// `--oml`: `<app>_oml.h`.
    OmlHeader,
    /// `--opts`: `<app>_popt.h`.
    PoptHeader,
    /// `--main`: `<app>.c` and `config.h`.
    Main,
    /// `--make`: `Makefile`.
    Makefile,
    /// `--python`: `<app>_oml.py`.
    Python,
    /// `--rust`: `<app>_oml.rs`.
    Rust,
}

impl Output {
    /// The language whose reserved words this output's names must avoid.
    pub fn target(self) -> Target {
        match self {
            Output::Python => Target::Python,
            Output::Rust => Target::Rust,
            _ => Target::C,
        }
    }
}

/// The files for `outputs`, in `dir`, with their contents and overwrite
/// rule: generated headers and modules are always replaced (they say "do
/// not edit"); the main, config.h and Makefile are starting points the user
/// edits, kept unless `--force`.
pub fn plan(app: &App, outputs: &[Output], opts: &Options, dir: &std::path::Path) -> Vec<Planned> {
    let name = &app.name.value;
    let mut files = Vec::new();
    let mut add = |file: String, contents: String, overwrite: Overwrite| {
        files.push(Planned {
            path: dir.join(PathBuf::from(file)),
            contents,
            overwrite,
        });
    };
    for out in outputs {
        match out {
            Output::OmlHeader => add(
                format!("{name}_oml.h"),
                c::oml_h(app, opts),
                Overwrite::Always,
            ),
            Output::PoptHeader => add(
                format!("{name}_popt.h"),
                c::popt_h(app, opts),
                Overwrite::Always,
            ),
            Output::Main => {
                add(
                    format!("{name}.c"),
                    c_main::main_c(app, opts),
                    Overwrite::WithForce,
                );
                add(
                    "config.h".into(),
                    c_main::config_h(app),
                    Overwrite::WithForce,
                );
            }
            Output::Makefile => add(
                "Makefile".into(),
                c_main::makefile(app),
                Overwrite::WithForce,
            ),
            Output::Python => add(
                format!("{}_oml.py", app.c_name()),
                python::module(app, opts),
                Overwrite::Always,
            ),
            Output::Rust => add(
                format!("{}_oml.rs", app.c_name()),
                rust::module(app, opts),
                Overwrite::Always,
            ),
        }
    }
    files
}

/// `s` as a C (and Rust, and Python) double-quoted string literal.
pub fn c_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\{:03o}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
