//! What `streamgauge scaffold` does with its flags: generate code from a
//! description (or a skeleton, or a database), and convert a description
//! between its two forms. Warnings go to the caller; files are planned
//! first and written only if every one may be.
//!
//! ```no_run
//! use scaffold::gen::Output;
//! use scaffold::run::{generate, Generate};
//!
//! let written = generate(
//!     &Generate {
//!         app_file: Some("ping.rb".into()),
//!         outputs: vec![Output::OmlHeader],
//!         ..Generate::default()
//!     },
//!     |w| eprintln!("{w}"),
//! )?;
//! # Ok::<(), scaffold::Error>(())
//! ```

use std::path::{Path, PathBuf};

use crate::gen::{Options, Output};
use crate::model::Warning;
use crate::write::{write_all, Overwrite, Planned};
use crate::{App, Error, Form, IntAlias};

/// A code generation request (the flags of `streamgauge scaffold`).
#[derive(Debug, Clone, Default)]
pub struct Generate {
    /// The description to read (`APP.rb` or `APP.toml`).
    pub app_file: Option<PathBuf>,
    /// What to write.
    pub outputs: Vec<Output>,
    /// Write a skeleton description `NAME.rb` (and `outputs` from it).
    pub app: Option<String>,
    /// Describe this database's measurement tables instead.
    pub from_db: Option<PathBuf>,
    /// Replace files that are kept otherwise.
    pub force: bool,
    /// What `:int` and `:integer` mean.
    pub int_alias: IntAlias,
    /// The folder to write into.
    pub dir: PathBuf,
    /// The user named in a skeleton's uri (`$USER`).
    pub user: String,
}

impl Generate {
    /// Says what is missing from the request, if anything.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.app_file.is_none() && self.app.is_none() && self.from_db.is_none() {
            return Err("no description given: pass APP_FILE, or --app NAME for a skeleton, or --from-db FILE.sq3 (see --help)");
        }
        if self.app_file.is_some() && self.outputs.is_empty() {
            return Err(
                "nothing to generate: pass --oml, --opts, --main, --make, --python and/or --rust",
            );
        }
        Ok(())
    }
}

/// Reads a description, handing its warnings to `warn`.
fn load(path: &Path, warn: &mut impl FnMut(Warning)) -> Result<App, Error> {
    let (app, warnings) = crate::load(path)?;
    warnings.into_iter().for_each(&mut *warn);
    Ok(app)
}

/// The description of `app` as a file in `dir`, in `form`.
fn description_file(app: &App, dir: &Path, form: Form, header: &str) -> Planned {
    let (ext, contents) = match form {
        Form::Rb => ("rb", crate::rb_form::to_rb(app, header)),
        Form::Toml => ("toml", crate::to_toml(app)),
    };
    Planned {
        path: dir.join(format!("{}.{ext}", app.name.value)),
        contents,
        overwrite: Overwrite::WithForce,
    }
}

/// Generates what `g` asks for; returns the files written.
pub fn generate(g: &Generate, mut warn: impl FnMut(Warning)) -> Result<Vec<PathBuf>, Error> {
    let opts = Options {
        int_alias: g.int_alias,
    };
    let (app, mut files) = match (&g.app, &g.from_db, &g.app_file) {
        (Some(name), _, _) => {
            let app = crate::rb_form::skeleton(name, &g.user);
            let header = "Skeleton description written by `streamgauge scaffold --app`; edit it,\nthen: streamgauge scaffold --oml --opts --main --make FILE";
            let file = description_file(&app, &g.dir, Form::Rb, header);
            (app, vec![file])
        }
        (None, Some(db), _) => {
            let app = crate::from_db::describe(db)?;
            let header = format!(
                "Description recovered from {} by `streamgauge scaffold --from-db`.",
                db.display()
            );
            let file = description_file(&app, &g.dir, Form::Rb, &header);
            (app, vec![file])
        }
        (None, None, Some(path)) => (load(path, &mut warn)?, Vec::new()),
        (None, None, None) => return Ok(Vec::new()),
    };
    files.extend(crate::plan(&app, &g.outputs, &opts, &g.dir)?);
    write_all(&files, g.force)
}

/// Rewrites the description `input` in the other form, into `output`
/// (default: `input` with the other extension); returns the file written.
pub fn convert(
    input: &Path,
    output: Option<PathBuf>,
    force: bool,
    mut warn: impl FnMut(Warning),
) -> Result<Vec<PathBuf>, Error> {
    let app = load(input, &mut warn)?;
    let output = output.unwrap_or_else(|| {
        input.with_extension(match Form::of(input) {
            Form::Rb => "toml",
            Form::Toml => "rb",
        })
    });
    let contents = match Form::of(&output) {
        Form::Rb => crate::rb_form::to_rb(
            &app,
            &format!(
                "Converted from {} by `streamgauge scaffold convert`.",
                input.display()
            ),
        ),
        Form::Toml => crate::to_toml(&app),
    };
    let file = Planned {
        path: output,
        contents,
        overwrite: Overwrite::WithForce,
    };
    write_all(&[file], force)
}
