//! Durable background uploader of closed capture files (pcap, pcapng, IPFIX
//! and their metadata) to archive targets: SFTP servers and S3-compatible
//! object stores.
//!
//! * [`Archiver::enqueue`] records a file in a SQLite queue in the state
//!   directory; the call is durable when it returns.
//! * A background worker uploads each (file, target) with bounded
//!   concurrency, retries failures with exponential back-off and jitter, and
//!   confirms every copy by size and checksum before marking it done.
//! * When every target confirmed a file, the local copy is deleted (unless
//!   `keep_local`).
//! * After a crash or restart, a new `Archiver` on the same state directory
//!   resumes: a job whose remote copy is already complete and verified is
//!   marked done without sending it again; a partial upload is never visible
//!   under the final name (sftp: temporary name + rename; S3: object appears
//!   atomically at the end of the PUT / multipart upload).
//!
//! See `docs/archive.md` for configuration and guarantees.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use archive::{Archiver, ArchiverConfig};
//! let cfg: ArchiverConfig = serde_json::from_str(r#"{
//!     "state_dir": "/var/lib/streamgauge/archive",
//!     "targets": { "lab": { "kind": "sftp", "host": "archive.example.org",
//!         "user": "capture", "private_key_file": "/etc/streamgauge/id_ed25519",
//!         "known_hosts_file": "/etc/streamgauge/known_hosts", "remote_dir": "/srv/captures" } }
//! }"#)?;
//! let archiver = Archiver::open(cfg).await?;
//! archiver.enqueue("/var/spool/cap/s1-0001.pcapng".as_ref(), "s1/s1-0001.pcapng", &["lab"])?;
//! let mut events = archiver.subscribe();
//! while let Ok(event) = events.recv().await {
//!     println!("{event:?}");
//! }
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod archiver;
mod backoff;
mod config;
mod digest;
mod events;
mod names;
mod outage;
mod queue;
#[cfg(test)]
mod queue_model;
mod s3;
mod secret;
mod sftp;
mod target;
mod worker;

pub use archiver::{Archiver, EnqueueError, OpenError};
pub use config::{
    ArchiverConfig, BackoffConfig, ConfigError, CredentialsSource, S3Config, SftpConfig,
    TargetConfig, MIN_PART_SIZE,
};
pub use digest::{digest_file, LocalDigest};
pub use events::{ArchiveEvent, ArchiveStats};
pub use queue::{JobState, JobStatus, QueueError};
pub use s3::S3Error;
pub use secret::Secret;
pub use sftp::SftpError;
pub use target::{AttemptError, Delivery};
