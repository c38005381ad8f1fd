//! Writing generated files under the reference generator's overwrite
//! rules, all or nothing: every file that must not be replaced is checked
//! before the first one is written.

use std::path::PathBuf;

use crate::error::Error;

/// When an existing file may be replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overwrite {
    /// Generated code nobody edits (`_oml.h`, `_popt.h`, the Python and
    /// Rust modules): always replaced, as the reference does.
    Always,
    /// A starting point the user edits (`<app>.c`, `config.h`, `Makefile`,
    /// a skeleton or converted description): kept unless `--force`.
    WithForce,
}

/// A file to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// Where.
    pub path: PathBuf,
    /// What.
    pub contents: String,
    /// Whether an existing file may be replaced.
    pub overwrite: Overwrite,
}

/// Writes `files`; without `force`, refuses (writing nothing) if any
/// [`Overwrite::WithForce`] file already exists.
pub fn write_all(files: &[Planned], force: bool) -> Result<Vec<PathBuf>, Error> {
    if !force {
        if let Some(f) = files
            .iter()
            .find(|f| f.overwrite == Overwrite::WithForce && f.path.exists())
        {
            return Err(Error::Exists {
                path: f.path.clone(),
            });
        }
    }
    let mut written = Vec::new();
    for f in files {
        std::fs::write(&f.path, &f.contents).map_err(|source| Error::Io {
            path: f.path.clone(),
            source,
        })?;
        written.push(f.path.clone());
    }
    Ok(written)
}
