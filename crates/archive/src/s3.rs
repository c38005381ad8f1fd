//! S3 target: Apache Arrow's `object_store` client (SigV4, multipart, HEAD).
//!
//! An S3 object only becomes visible when the single `PUT` or the
//! `CompleteMultipartUpload` succeeds, so a crash mid-upload never leaves a
//! partial object under the final key (an unfinished multipart upload is
//! invisible; a bucket lifecycle rule `AbortIncompleteMultipartUpload`
//! reclaims its space). Every request body carries `x-amz-checksum-sha256`
//! (and the signed payload hash), so the server refuses corrupted parts. After
//! the upload a `HEAD` confirms the size and the ETag, which for unencrypted
//! or SSE-S3 objects is the MD5 of the body (single PUT) or the MD5 of the
//! part MD5s with `-N` (multipart) — computed locally beforehand. The same
//! HEAD check runs before uploading: an object already complete (the crash
//! came after the upload but before the queue recorded it) is not sent again,
//! and a different object under the key is left alone (the job moves to a
//! fresh name).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as ObjectPath;
use object_store::{ClientOptions, ObjectStore, PutPayload, RetryConfig};
use tokio::io::AsyncReadExt;

use crate::config::{CredentialsSource, S3Config};
use crate::digest::LocalDigest;
use crate::secret::Secret;
use crate::target::Delivery;

/// Errors of S3 setup or of one upload attempt.
#[derive(Debug, thiserror::Error)]
pub enum S3Error {
    /// Credentials could not be read.
    #[error("s3: credentials: {reason}")]
    Credentials {
        /// What is missing or malformed (never the secret itself).
        reason: String,
    },
    /// The client could not be built from the configuration.
    #[error("s3: client setup: {reason}")]
    Build {
        /// Client library message.
        reason: String,
    },
    /// A request failed (connection refused, HTTP error, access denied).
    #[error("s3: {op} {key}: {reason}")]
    Request {
        /// The operation (head, put, multipart).
        op: &'static str,
        /// Object key.
        key: String,
        /// Client library message.
        reason: String,
    },
    /// The local file could not be read.
    #[error("s3: reading {path}: {source}")]
    Local {
        /// Local file.
        path: String,
        /// I/O error.
        source: std::io::Error,
    },
    /// The bucket does not exist (found when the archiver opens).
    #[error("s3: bucket `{bucket}` does not exist at {endpoint}: create it (e.g. `aws s3 mb s3://{bucket} --endpoint-url {endpoint}`) or correct `bucket` in the archive configuration")]
    NoBucket {
        /// Bucket name.
        bucket: String,
        /// Service URL.
        endpoint: String,
    },
    /// The stored object does not match the local file.
    #[error("s3: {key}: verification failed: {reason}")]
    Verify {
        /// Object key.
        key: String,
        /// Size or ETag difference.
        reason: String,
    },
}

/// A configured S3 destination.
pub struct S3Target {
    /// Bucket name, for the check at open.
    bucket: String,
    /// Service URL, for the check at open.
    endpoint: String,
    /// Client bound to the bucket; shared by concurrent uploads.
    store: Arc<AmazonS3>,
    /// Key prefix.
    prefix: String,
    /// Multipart part size (and single-PUT threshold).
    part_size: usize,
}

/// Access key pair resolved from the configured source.
struct Credentials {
    access_key_id: String,
    secret_access_key: Secret,
    session_token: Option<Secret>,
}

fn load_credentials(src: &CredentialsSource) -> Result<Credentials, S3Error> {
    let bad = |reason: String| S3Error::Credentials { reason };
    match src {
        CredentialsSource::Env {
            access_key_id_var,
            secret_access_key_var,
        } => {
            let get = |v: &str| {
                std::env::var(v).map_err(|_| bad(format!("environment variable {v} is not set")))
            };
            Ok(Credentials {
                access_key_id: get(access_key_id_var)?,
                secret_access_key: Secret::new(get(secret_access_key_var)?),
                session_token: None,
            })
        }
        CredentialsSource::File(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| bad(format!("cannot read {}: {e}", path.display())))?;
            let (mut id, mut secret, mut token) = (None, None, None);
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let Some((k, v)) = line.split_once('=') else {
                    return Err(bad(format!(
                        "{}:{}: expected `key = value`",
                        path.display(),
                        n + 1
                    )));
                };
                let v = v.trim().to_string();
                match k.trim() {
                    "access_key_id" => id = Some(v),
                    "secret_access_key" => secret = Some(Secret::new(v)),
                    "session_token" => token = Some(Secret::new(v)),
                    other => {
                        return Err(bad(format!(
                            "{}:{}: unknown key `{other}`",
                            path.display(),
                            n + 1
                        )))
                    }
                }
            }
            Ok(Credentials {
                access_key_id: id
                    .ok_or_else(|| bad(format!("{}: access_key_id missing", path.display())))?,
                secret_access_key: secret
                    .ok_or_else(|| bad(format!("{}: secret_access_key missing", path.display())))?,
                session_token: token,
            })
        }
    }
}

fn unquote(etag: &str) -> &str {
    etag.trim_matches('"')
}

impl S3Target {
    /// Reads the credentials and builds the client (no network traffic).
    pub fn new(cfg: &S3Config, request_timeout: Duration) -> Result<S3Target, S3Error> {
        let creds = load_credentials(&cfg.credentials)?;
        let options = ClientOptions::new()
            .with_allow_http(cfg.endpoint.starts_with("http://"))
            .with_connect_timeout(Duration::from_secs(10))
            .with_timeout(request_timeout);
        // Our queue does the retrying, with its own back-off and bookkeeping.
        let retry = RetryConfig {
            max_retries: 0,
            ..Default::default()
        };
        let mut b = AmazonS3Builder::new()
            .with_endpoint(cfg.endpoint.trim_end_matches('/'))
            .with_region(&cfg.region)
            .with_bucket_name(&cfg.bucket)
            .with_virtual_hosted_style_request(!cfg.path_style)
            .with_allow_http(cfg.endpoint.starts_with("http://"))
            .with_access_key_id(creds.access_key_id)
            .with_secret_access_key(creds.secret_access_key.expose())
            .with_checksum_algorithm(object_store::aws::Checksum::SHA256)
            .with_client_options(options)
            .with_retry(retry);
        if let Some(t) = &creds.session_token {
            b = b.with_token(t.expose());
        }
        let store = b.build().map_err(|e| S3Error::Build {
            reason: e.to_string(),
        })?;
        Ok(S3Target {
            bucket: cfg.bucket.clone(),
            endpoint: cfg.endpoint.clone(),
            store: Arc::new(store),
            prefix: cfg.prefix.clone(),
            part_size: cfg.part_size,
        })
    }

    /// Checks that the bucket exists (one listing of at most a page under
    /// the prefix, bounded by `limit`). Only a definite "no such bucket" is
    /// an error: an unreachable or refusing server is logged and left to
    /// the queue's retries, so a daemon can start while its archive is down.
    pub async fn check_bucket(&self, target: &str, limit: Duration) -> Result<(), S3Error> {
        let prefix = ObjectPath::from(self.prefix.trim_end_matches('/'));
        let prefix = (!self.prefix.is_empty()).then_some(&prefix);
        let outcome = tokio::time::timeout(limit, self.store.list_with_delimiter(prefix)).await;
        let error = match outcome {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {} s", limit.as_secs()),
        };
        if error.contains("NoSuchBucket") {
            return Err(S3Error::NoBucket {
                bucket: self.bucket.clone(),
                endpoint: self.endpoint.clone(),
            });
        }
        tracing::warn!(target = %target, bucket = %self.bucket, %error,
            "archive: cannot check the S3 bucket now; uploads will be retried");
        Ok(())
    }

    /// Part size used for the ETag computed locally.
    pub fn part_size(&self) -> usize {
        self.part_size
    }

    /// Full object key of `remote_name`.
    pub fn key(&self, remote_name: &str) -> String {
        format!("{}{}", self.prefix, remote_name)
    }

    /// Uploads `local` under the key of `remote_name` unless an identical
    /// object is already there.
    pub async fn deliver(
        &self,
        local: &Path,
        remote_name: &str,
        digest: &LocalDigest,
    ) -> Result<Delivery, S3Error> {
        let key = self.key(remote_name);
        let location = ObjectPath::parse(&key).map_err(|e| S3Error::Verify {
            key: key.clone(),
            reason: e.to_string(),
        })?;
        match self.store.head(&location).await {
            Ok(meta)
                if meta.size == digest.size
                    && meta.e_tag.as_deref().map(unquote) == Some(digest.s3_etag.as_str()) =>
            {
                return Ok(Delivery::AlreadyPresent);
            }
            // Different content under the key: never replaced.
            Ok(_) => return Ok(Delivery::NameTaken),
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => {
                return Err(S3Error::Request {
                    op: "head",
                    key,
                    reason: e.to_string(),
                })
            }
        }
        let local_err = |source| S3Error::Local {
            path: local.display().to_string(),
            source,
        };
        let mut file = tokio::fs::File::open(local).await.map_err(local_err)?;
        if digest.size as usize <= self.part_size {
            let mut body = Vec::with_capacity(digest.size as usize);
            file.read_to_end(&mut body).await.map_err(local_err)?;
            self.store
                .put(&location, PutPayload::from(body))
                .await
                .map_err(|e| S3Error::Request {
                    op: "put",
                    key: key.clone(),
                    reason: e.to_string(),
                })?;
        } else {
            let mut upload =
                self.store
                    .put_multipart(&location)
                    .await
                    .map_err(|e| S3Error::Request {
                        op: "create multipart",
                        key: key.clone(),
                        reason: e.to_string(),
                    })?;
            let mut sent = 0u64;
            let result: Result<(), S3Error> = async {
                while sent < digest.size {
                    let len = (digest.size - sent).min(self.part_size as u64) as usize;
                    let mut part = vec![0u8; len];
                    file.read_exact(&mut part).await.map_err(local_err)?;
                    upload.put_part(PutPayload::from(part)).await.map_err(|e| {
                        S3Error::Request {
                            op: "upload part",
                            key: key.clone(),
                            reason: e.to_string(),
                        }
                    })?;
                    sent += len as u64;
                }
                upload
                    .complete()
                    .await
                    .map(drop)
                    .map_err(|e| S3Error::Request {
                        op: "complete multipart",
                        key: key.clone(),
                        reason: e.to_string(),
                    })
            }
            .await;
            if let Err(e) = result {
                let _ = upload.abort().await;
                return Err(e);
            }
        }
        let meta = self
            .store
            .head(&location)
            .await
            .map_err(|e| S3Error::Request {
                op: "head after upload",
                key: key.clone(),
                reason: e.to_string(),
            })?;
        let etag = meta.e_tag.as_deref().map(unquote).unwrap_or("");
        if meta.size != digest.size || etag != digest.s3_etag {
            return Err(S3Error::Verify {
                key,
                reason: format!(
                    "stored size {} etag {etag}, local size {} etag {}",
                    meta.size, digest.size, digest.s3_etag
                ),
            });
        }
        Ok(Delivery::Uploaded { bytes: digest.size })
    }
}
