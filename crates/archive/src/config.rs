//! Archive configuration: parsed and validated without I/O (`validate`), then
//! turned into live targets by [`crate::Archiver::open`].
//!
//! Every struct refuses unknown keys, so a typo in a session's archive section
//! is an error instead of a silently ignored setting.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

/// Errors found while validating a configuration (no I/O involved).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A field has a value that can never work.
    #[error("archive target `{target}`: field `{field}`: {reason}")]
    Invalid {
        /// Name of the target (or `archiver` for the global settings).
        target: String,
        /// The offending key.
        field: &'static str,
        /// What is wrong and what would be accepted.
        reason: String,
    },
    /// No target is configured, so nothing could ever be uploaded.
    #[error("archive configuration names no target")]
    NoTargets,
}

/// Whole archiver configuration (one per capture daemon).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchiverConfig {
    /// Directory holding the durable queue (`queue.sqlite3`); must survive
    /// restarts, or files would be forgotten.
    pub state_dir: PathBuf,
    /// Upload destinations by name; `enqueue` refers to these names.
    pub targets: BTreeMap<String, TargetConfig>,
    /// How many (file, target) uploads run at the same time; bounds memory
    /// (one S3 part per upload) and the load put on the link.
    #[serde(default = "default_concurrency")]
    pub max_concurrent_uploads: usize,
    /// Retry timing after a failed attempt.
    #[serde(default)]
    pub backoff: BackoffConfig,
    /// Attempts before a (file, target) is marked failed and left alone;
    /// `None` retries forever. The local file is kept either way.
    #[serde(default)]
    pub max_attempts: Option<u32>,
    /// Keep the local file after every target confirmed it (default: delete).
    #[serde(default)]
    pub keep_local: bool,
    /// Upper bound for one attempt (connect, upload, verify), in seconds; a
    /// stalled peer must not hold a concurrency slot forever.
    #[serde(default = "default_attempt_timeout")]
    pub attempt_timeout_secs: u64,
}

fn default_concurrency() -> usize {
    2
}

fn default_attempt_timeout() -> u64 {
    600
}

/// Exponential back-off with jitter between attempts of one (file, target).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackoffConfig {
    /// Delay after the first failure, in milliseconds.
    #[serde(default = "default_initial_ms")]
    pub initial_ms: u64,
    /// Ceiling of the delay, in milliseconds, so a long outage is probed
    /// regularly once the server is back.
    #[serde(default = "default_max_ms")]
    pub max_ms: u64,
}

fn default_initial_ms() -> u64 {
    1_000
}

fn default_max_ms() -> u64 {
    300_000
}

impl Default for BackoffConfig {
    fn default() -> Self {
        Self {
            initial_ms: default_initial_ms(),
            max_ms: default_max_ms(),
        }
    }
}

/// One archive destination.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum TargetConfig {
    /// An SSH server speaking SFTP.
    Sftp(SftpConfig),
    /// An S3-compatible object store.
    S3(S3Config),
}

/// SFTP destination; authentication is by private key only.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SftpConfig {
    /// Server name or address.
    pub host: String,
    /// TCP port of the SSH server.
    #[serde(default = "default_ssh_port")]
    pub port: u16,
    /// Login name.
    pub user: String,
    /// OpenSSH private key (unencrypted) used to log in.
    pub private_key_file: PathBuf,
    /// OpenSSH `known_hosts` file that must list the server's key.
    #[serde(default)]
    pub known_hosts_file: Option<PathBuf>,
    /// Alternative to `known_hosts_file`: the server key's fingerprint as
    /// printed by `ssh-keygen -lf` (`SHA256:...`).
    #[serde(default)]
    pub host_key_fingerprint: Option<String>,
    /// Directory on the server receiving the files (created if missing).
    pub remote_dir: String,
    /// This target's bound for one attempt, in seconds (default: the
    /// archiver's `attempt_timeout_secs`).
    #[serde(default)]
    pub attempt_timeout_secs: Option<u64>,
}

fn default_ssh_port() -> u16 {
    22
}

/// S3-compatible destination.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct S3Config {
    /// Base URL of the service, `http(s)://host[:port]`.
    pub endpoint: String,
    /// Signing region (`us-east-1` for most non-AWS servers).
    pub region: String,
    /// Bucket receiving the objects (must exist).
    pub bucket: String,
    /// Key prefix prepended to each remote name (e.g. `site-a/`).
    #[serde(default)]
    pub prefix: String,
    /// Address the bucket in the path (`endpoint/bucket/key`) rather than in
    /// the host name; needed by most self-hosted servers.
    #[serde(default = "default_true")]
    pub path_style: bool,
    /// Where the access key comes from; never inline in the configuration.
    pub credentials: CredentialsSource,
    /// Files above this size go up as multipart uploads of this part size,
    /// in bytes (S3 minimum: 5 MiB); also bounds memory per upload.
    #[serde(default = "default_part_size")]
    pub part_size: usize,
    /// This target's bound for one attempt, in seconds (default: the
    /// archiver's `attempt_timeout_secs`).
    #[serde(default)]
    pub attempt_timeout_secs: Option<u64>,
}

fn default_true() -> bool {
    true
}

fn default_part_size() -> usize {
    16 * 1024 * 1024
}

/// Smallest part S3 accepts (except the last one).
pub const MIN_PART_SIZE: usize = 5 * 1024 * 1024;

/// Where S3 credentials are read from.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum CredentialsSource {
    /// A file of `key = value` lines: `access_key_id`, `secret_access_key`,
    /// optionally `session_token` (`#` starts a comment).
    File(PathBuf),
    /// Environment variables holding the values.
    Env {
        /// Variable with the access key id.
        access_key_id_var: String,
        /// Variable with the secret access key.
        secret_access_key_var: String,
    },
}

impl TargetConfig {
    /// Upper bound of one attempt on this target, in seconds: its own
    /// `attempt_timeout_secs`, else the archiver's.
    pub fn attempt_timeout_secs(&self, default: u64) -> u64 {
        let own = match self {
            TargetConfig::Sftp(c) => c.attempt_timeout_secs,
            TargetConfig::S3(c) => c.attempt_timeout_secs,
        };
        own.unwrap_or(default)
    }
}

impl ArchiverConfig {
    /// Checks every value that can be checked without I/O.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |target: &str, field: &'static str, reason: &str| ConfigError::Invalid {
            target: target.to_string(),
            field,
            reason: reason.to_string(),
        };
        if self.targets.is_empty() {
            return Err(ConfigError::NoTargets);
        }
        if self.max_concurrent_uploads == 0 {
            return Err(bad(
                "archiver",
                "max_concurrent_uploads",
                "must be at least 1",
            ));
        }
        if self.backoff.initial_ms == 0 || self.backoff.max_ms < self.backoff.initial_ms {
            return Err(bad("archiver", "backoff", "need 0 < initial_ms <= max_ms"));
        }
        if self.max_attempts == Some(0) {
            return Err(bad(
                "archiver",
                "max_attempts",
                "must be at least 1 (or absent: forever)",
            ));
        }
        if self.attempt_timeout_secs == 0 {
            return Err(bad(
                "archiver",
                "attempt_timeout_secs",
                "must be at least 1",
            ));
        }
        for (name, target) in &self.targets {
            if name.is_empty() || name.chars().any(|c| c.is_control()) {
                return Err(bad(
                    name,
                    "name",
                    "target names must be non-empty printable text",
                ));
            }
            if target.attempt_timeout_secs(1) == 0 {
                return Err(bad(name, "attempt_timeout_secs", "must be at least 1"));
            }
            match target {
                TargetConfig::Sftp(c) => c.validate(name)?,
                TargetConfig::S3(c) => c.validate(name)?,
            }
        }
        Ok(())
    }
}

impl SftpConfig {
    fn validate(&self, name: &str) -> Result<(), ConfigError> {
        let bad = |field: &'static str, reason: &str| ConfigError::Invalid {
            target: name.to_string(),
            field,
            reason: reason.to_string(),
        };
        if self.host.is_empty() {
            return Err(bad("host", "must not be empty"));
        }
        if self.port == 0 {
            return Err(bad("port", "must be 1..=65535"));
        }
        if self.user.is_empty() {
            return Err(bad("user", "must not be empty"));
        }
        if self.remote_dir.is_empty() {
            return Err(bad(
                "remote_dir",
                "must not be empty (use `.` for the login directory)",
            ));
        }
        match (&self.known_hosts_file, &self.host_key_fingerprint) {
            (None, None) | (Some(_), Some(_)) => Err(bad(
                "known_hosts_file",
                "set exactly one of known_hosts_file and host_key_fingerprint: the server key is always verified",
            )),
            (None, Some(fp)) if !fp.starts_with("SHA256:") || fp.len() < 10 => Err(bad(
                "host_key_fingerprint",
                "expected `SHA256:<base64>` as printed by `ssh-keygen -lf`",
            )),
            _ => Ok(()),
        }
    }
}

impl S3Config {
    fn validate(&self, name: &str) -> Result<(), ConfigError> {
        let bad = |field: &'static str, reason: &str| ConfigError::Invalid {
            target: name.to_string(),
            field,
            reason: reason.to_string(),
        };
        let rest = self
            .endpoint
            .strip_prefix("https://")
            .or_else(|| self.endpoint.strip_prefix("http://"));
        match rest {
            Some(host) if !host.is_empty() && !host.contains(['?', '#', ' ']) => {}
            _ => return Err(bad("endpoint", "expected http(s)://host[:port]")),
        }
        if self.region.is_empty() {
            return Err(bad("region", "must not be empty (us-east-1 if unsure)"));
        }
        let bucket_ok = (3..=63).contains(&self.bucket.len())
            && self
                .bucket
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
        if !bucket_ok {
            return Err(bad("bucket", "3 to 63 characters of a-z, 0-9, `-` and `.`"));
        }
        if self.prefix.starts_with('/') {
            return Err(bad("prefix", "must not start with `/`"));
        }
        if self.part_size < MIN_PART_SIZE {
            return Err(bad("part_size", "must be at least 5 MiB (5242880)"));
        }
        if let CredentialsSource::Env {
            access_key_id_var,
            secret_access_key_var,
        } = &self.credentials
        {
            if access_key_id_var.is_empty() || secret_access_key_var.is_empty() {
                return Err(bad(
                    "credentials",
                    "environment variable names must not be empty",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<ArchiverConfig, serde_json::Error> {
        serde_json::from_str(s)
    }

    const SFTP: &str = r#"{"kind":"sftp","host":"127.0.0.1","port":2222,"user":"root",
        "private_key_file":"/k","host_key_fingerprint":"SHA256:abcdefghijk","remote_dir":"/srv"}"#;

    #[test]
    fn valid_sftp_and_s3() {
        let c = parse(&format!(
            r#"{{"state_dir":"/tmp/x","targets":{{"a":{SFTP},
            "b":{{"kind":"s3","endpoint":"http://127.0.0.1:9000","region":"us-east-1",
            "bucket":"caps","credentials":{{"file":"/c"}}}}}}}}"#
        ))
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.max_concurrent_uploads, 2);
    }

    #[test]
    fn unknown_keys_are_refused() {
        let e = parse(r#"{"state_dir":"/x","targets":{},"colour":1}"#).unwrap_err();
        assert!(e.to_string().contains("colour"), "{e}");
        let sftp = SFTP.replace("\"user\"", "\"usr\":1,\"user\"");
        let e = parse(&format!(r#"{{"state_dir":"/x","targets":{{"a":{sftp}}}}}"#)).unwrap_err();
        assert!(e.to_string().contains("usr"), "{e}");
    }

    #[test]
    fn host_key_check_is_mandatory() {
        let sftp = SFTP.replace(r#""host_key_fingerprint":"SHA256:abcdefghijk","#, "");
        let c = parse(&format!(r#"{{"state_dir":"/x","targets":{{"a":{sftp}}}}}"#)).unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("exactly one"), "{e}");
    }

    #[test]
    fn bad_s3_values() {
        for (field, value, needle) in [
            ("endpoint", r#""ftp://x""#, "endpoint"),
            ("bucket", r#""UPPER""#, "bucket"),
            ("part_size", "1024", "part_size"),
        ] {
            let mut t = serde_json::json!({"kind":"s3","endpoint":"http://127.0.0.1:1",
                "region":"r","bucket":"caps","credentials":{"file":"/c"}});
            t[field] = serde_json::from_str(value).unwrap();
            let c: ArchiverConfig =
                serde_json::from_value(serde_json::json!({"state_dir":"/x","targets":{"t":t}}))
                    .unwrap();
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(needle), "{e}");
        }
    }

    #[test]
    fn attempt_timeout_per_target_overrides_the_archiver_default() {
        let sftp = SFTP.replace(
            "\"remote_dir\"",
            "\"attempt_timeout_secs\":5,\"remote_dir\"",
        );
        let c = parse(&format!(
            r#"{{"state_dir":"/x","targets":{{"a":{sftp},"b":{SFTP}}}}}"#
        ))
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.targets["a"].attempt_timeout_secs(600), 5);
        assert_eq!(c.targets["b"].attempt_timeout_secs(600), 600);
        let zero = SFTP.replace(
            "\"remote_dir\"",
            "\"attempt_timeout_secs\":0,\"remote_dir\"",
        );
        let c = parse(&format!(r#"{{"state_dir":"/x","targets":{{"a":{zero}}}}}"#)).unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("attempt_timeout_secs"), "{e}");
    }

    #[test]
    fn toml_form_parses() {
        let c: ArchiverConfig = toml::from_str(
            r#"
            state_dir = "/var/lib/sg/archive"
            max_attempts = 5
            [backoff]
            initial_ms = 500
            max_ms = 60000
            [targets.store]
            kind = "s3"
            endpoint = "https://s3.example.org"
            region = "eu-west-1"
            bucket = "captures"
            prefix = "site-a/"
            credentials = { env = { access_key_id_var = "AK", secret_access_key_var = "SK" } }
            "#,
        )
        .unwrap();
        c.validate().unwrap();
    }
}
