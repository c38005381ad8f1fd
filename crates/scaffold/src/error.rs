//! Errors: every problem in a description carries the file, line and column
//! to fix; problems with the files to write name the file.

use std::path::PathBuf;

use crate::model::Location;

/// A description that cannot be used, with where and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{loc}: error: {message}")]
pub struct DescriptionError {
    /// Where the problem is.
    pub loc: Location,
    /// What is wrong and what to write instead.
    pub message: String,
}

impl DescriptionError {
    /// An error at `loc`.
    pub fn new(loc: &Location, message: impl Into<String>) -> Self {
        DescriptionError {
            loc: loc.clone(),
            message: message.into(),
        }
    }
}

/// Everything that can go wrong while scaffolding.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The description is invalid (all problems found, first first).
    #[error("{}", join(.0))]
    Description(Vec<DescriptionError>),
    /// A file to write exists and `--force` was not given.
    #[error("{} already exists; pass --force to overwrite it", .path.display())]
    Exists {
        /// The existing file.
        path: PathBuf,
    },
    /// Reading or writing a file failed.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Reading an OML database for `--from-db` failed.
    #[error("{}: {message}", .path.display())]
    Database {
        /// The database file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

impl From<DescriptionError> for Error {
    fn from(e: DescriptionError) -> Self {
        Error::Description(vec![e])
    }
}

fn join(errors: &[DescriptionError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}
