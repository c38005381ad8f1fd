//! The live form of a configured target, and what one delivery achieved.

use std::path::Path;

use crate::digest::LocalDigest;
use crate::s3::{S3Error, S3Target};
use crate::sftp::{SftpError, SftpTarget};

/// Outcome of a successful delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// The file was sent and the remote copy verified.
    Uploaded {
        /// Bytes sent.
        bytes: u64,
    },
    /// A verified identical copy was already there (resume after a crash);
    /// nothing was sent.
    AlreadyPresent,
    /// Different content is already stored under the name; nothing was sent
    /// and nothing replaced. The queue moves the job to a fresh name.
    NameTaken,
}

/// Why one attempt failed.
#[derive(Debug, thiserror::Error)]
pub enum AttemptError {
    /// SFTP failure.
    #[error(transparent)]
    Sftp(#[from] SftpError),
    /// S3 failure.
    #[error(transparent)]
    S3(#[from] S3Error),
    /// The local file is gone or unreadable.
    #[error("local file {path}: {source}")]
    Local {
        /// The local file.
        path: String,
        /// I/O error.
        source: std::io::Error,
    },
    /// The attempt took longer than `attempt_timeout_secs`.
    #[error("attempt timed out after {secs} s")]
    Timeout {
        /// The configured limit.
        secs: u64,
    },
}

/// A configured, ready-to-use destination.
pub enum Target {
    /// SFTP server.
    Sftp(SftpTarget),
    /// S3-compatible store.
    S3(S3Target),
}

impl Target {
    /// Part size that determines the expected S3 ETag (irrelevant for sftp).
    pub fn part_size(&self) -> usize {
        match self {
            Target::Sftp(_) => usize::MAX,
            Target::S3(t) => t.part_size(),
        }
    }

    /// Delivers `local` as `remote_name`.
    pub async fn deliver(
        &self,
        local: &Path,
        remote_name: &str,
        digest: &LocalDigest,
    ) -> Result<Delivery, AttemptError> {
        Ok(match self {
            Target::Sftp(t) => t.deliver(local, remote_name, digest).await?,
            Target::S3(t) => t.deliver(local, remote_name, digest).await?,
        })
    }
}
