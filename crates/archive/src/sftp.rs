//! SFTP target: `russh` (SSH transport, host key verified) + `russh-sftp`.
//!
//! Upload protocol, chosen so that a crash never leaves something that looks
//! complete: the bytes go to `.<name>.<random>.part` in the destination directory, are
//! flushed (`fsync@openssh.com`), checked (size by `stat`, SHA-256 by reading
//! the file back over the same SFTP session), and only then renamed to the
//! final name. A final name therefore only ever holds a verified copy; before
//! uploading, an existing final file is checked the same way, and when it
//! matches the upload is skipped (the resume-after-crash case); when it
//! differs it is left alone and the job moves to a fresh name.
//!
//! Why a read-back: OpenSSH's `sftp-server` offers no remote hash extension,
//! and a size match alone would not catch corrupted bytes; reading back costs
//! one extra transfer of the file but needs nothing on the server beyond SFTP.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use russh::client::{self, Handle};
use russh::keys::{HashAlg, PrivateKey, PrivateKeyWithHashAlg, PublicKeyOrCertificate};
use russh_sftp::client::SftpSession;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::config::SftpConfig;
use crate::digest::{hex, LocalDigest};
use crate::target::Delivery;

/// Errors of one SFTP upload attempt.
#[derive(Debug, thiserror::Error)]
pub enum SftpError {
    /// The private key file could not be read or parsed.
    #[error("sftp: cannot load private key {path}: {reason}")]
    Key {
        /// The key file.
        path: PathBuf,
        /// Why it was refused.
        reason: String,
    },
    /// TCP connection or SSH handshake failed (server down, refused).
    #[error("sftp {host}:{port}: connection failed: {reason}")]
    Connect {
        /// Server.
        host: String,
        /// Port.
        port: u16,
        /// What happened.
        reason: String,
    },
    /// The server presented a key that is not the configured one: possible
    /// man-in-the-middle, nothing is sent.
    #[error("sftp {host}:{port}: host key verification failed: {reason}")]
    HostKey {
        /// Server.
        host: String,
        /// Port.
        port: u16,
        /// Presented fingerprint and what was expected.
        reason: String,
    },
    /// The server refused the private key for this user.
    #[error("sftp {host}:{port}: public key authentication refused for user `{user}`")]
    AuthRejected {
        /// Server.
        host: String,
        /// Port.
        port: u16,
        /// Login name.
        user: String,
    },
    /// An SFTP operation failed.
    #[error("sftp: {op} {path}: {reason}")]
    Op {
        /// The operation (open, write, rename, ...).
        op: &'static str,
        /// Remote or local path concerned.
        path: String,
        /// Server or I/O message.
        reason: String,
    },
    /// The remote copy does not match the local file.
    #[error("sftp: {path}: verification failed: {reason}")]
    Verify {
        /// Remote path.
        path: String,
        /// Size or hash difference.
        reason: String,
    },
}

/// Cipher preference (all authenticated or widely deployed).
const CIPHERS: &[russh::cipher::Name] = &[
    russh::cipher::AES_256_GCM,
    russh::cipher::CHACHA20_POLY1305,
    russh::cipher::AES_256_CTR,
    russh::cipher::AES_128_CTR,
];

/// Bytes per read/write call; russh-sftp splits writes to the server's
/// limit and keeps several in flight, and reads up to this much per request.
const IO_CHUNK: usize = 256 * 1024;

/// A configured SFTP destination with its key loaded.
pub struct SftpTarget {
    /// Connection settings.
    cfg: SftpConfig,
    /// Private key, loaded once at start so a bad key fails early.
    key: Arc<PrivateKey>,
}

/// Host key check done inside the SSH handshake.
struct HostCheck {
    /// Server name as written in the configuration (known_hosts lookup key).
    host: String,
    /// Server port (known_hosts uses `[host]:port` for non-22 ports).
    port: u16,
    /// What the key must match.
    expect: Expect,
    /// Why the key was refused, for a clear error (russh only says "unknown key").
    refusal: Arc<Mutex<Option<String>>>,
}

enum Expect {
    KnownHosts(PathBuf),
    Fingerprint(String),
}

impl client::Handler for HostCheck {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        key: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let PublicKeyOrCertificate::PublicKey { key, .. } = key else {
            *self.refusal.lock().unwrap_or_else(|p| p.into_inner()) =
                Some("server offered a certificate; only plain host keys are supported".into());
            return Ok(false);
        };
        let presented = key.fingerprint(HashAlg::Sha256).to_string();
        let verdict = match &self.expect {
            Expect::Fingerprint(fp) if *fp == presented => Ok(()),
            Expect::Fingerprint(fp) => Err(format!("server key {presented}, expected {fp}")),
            Expect::KnownHosts(path) => {
                match russh::keys::check_known_hosts_path(&self.host, self.port, key, path) {
                    Ok(true) => Ok(()),
                    Ok(false) => Err(format!(
                        "server key {presented} is not listed for {}:{} in {}",
                        self.host,
                        self.port,
                        path.display()
                    )),
                    Err(e) => Err(format!("server key {presented}: {e} ({})", path.display())),
                }
            }
        };
        match verdict {
            Ok(()) => Ok(true),
            Err(reason) => {
                *self.refusal.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason);
                Ok(false)
            }
        }
    }
}

fn op_err(
    op: &'static str,
    path: &str,
) -> impl FnOnce(russh_sftp::client::error::Error) -> SftpError {
    let path = path.to_string();
    move |e| SftpError::Op {
        op,
        path,
        reason: e.to_string(),
    }
}

impl SftpTarget {
    /// Loads the private key (the I/O half of configuration).
    pub fn new(cfg: SftpConfig) -> Result<SftpTarget, SftpError> {
        let key = russh::keys::load_secret_key(&cfg.private_key_file, None).map_err(|e| {
            SftpError::Key {
                path: cfg.private_key_file.clone(),
                reason: e.to_string(),
            }
        })?;
        Ok(SftpTarget {
            cfg,
            key: Arc::new(key),
        })
    }

    async fn connect(&self) -> Result<(Handle<HostCheck>, SftpSession), SftpError> {
        let c = &self.cfg;
        let refusal = Arc::new(Mutex::new(None));
        let check = HostCheck {
            host: c.host.clone(),
            port: c.port,
            expect: match (&c.known_hosts_file, &c.host_key_fingerprint) {
                (Some(p), _) => Expect::KnownHosts(p.clone()),
                (None, Some(fp)) => Expect::Fingerprint(fp.clone()),
                (None, None) => Expect::Fingerprint(String::new()),
            },
            refusal: refusal.clone(),
        };
        let config = Arc::new(client::Config {
            inactivity_timeout: Some(Duration::from_secs(60)),
            // AES-GCM first: hardware AES makes it several times faster than
            // the software ChaCha20 that russh prefers by default.
            preferred: russh::Preferred {
                cipher: Cow::Borrowed(CIPHERS),
                ..Default::default()
            },
            ..Default::default()
        });
        let connect_err = |reason: String| SftpError::Connect {
            host: c.host.clone(),
            port: c.port,
            reason,
        };
        let mut handle = match client::connect(config, (c.host.as_str(), c.port), check).await {
            Ok(h) => h,
            Err(e) => {
                if let Some(reason) = refusal.lock().unwrap_or_else(|p| p.into_inner()).take() {
                    return Err(SftpError::HostKey {
                        host: c.host.clone(),
                        port: c.port,
                        reason,
                    });
                }
                return Err(connect_err(e.to_string()));
            }
        };
        let hash = handle
            .best_supported_rsa_hash()
            .await
            .map_err(|e| connect_err(e.to_string()))?;
        let auth = handle
            .authenticate_publickey(
                c.user.clone(),
                PrivateKeyWithHashAlg::new(self.key.clone(), hash.flatten()),
            )
            .await
            .map_err(|e| connect_err(e.to_string()))?;
        if !auth.success() {
            return Err(SftpError::AuthRejected {
                host: c.host.clone(),
                port: c.port,
                user: c.user.clone(),
            });
        }
        let channel = handle
            .channel_open_session()
            .await
            .map_err(|e| connect_err(e.to_string()))?;
        channel
            .request_subsystem(true, "sftp")
            .await
            .map_err(|e| connect_err(e.to_string()))?;
        let sftp = SftpSession::new(channel.into_stream())
            .await
            .map_err(|e| connect_err(format!("sftp subsystem: {e}")))?;
        Ok((handle, sftp))
    }

    /// Uploads `local` as `remote_name` unless an identical copy is already there.
    pub async fn deliver(
        &self,
        local: &Path,
        remote_name: &str,
        digest: &LocalDigest,
    ) -> Result<Delivery, SftpError> {
        let (handle, sftp) = self.connect().await?;
        let result = self.deliver_on(&sftp, local, remote_name, digest).await;
        let _ = sftp.close().await;
        let _ = handle
            .disconnect(russh::Disconnect::ByApplication, "", "en")
            .await;
        result
    }

    async fn deliver_on(
        &self,
        sftp: &SftpSession,
        local: &Path,
        remote_name: &str,
        digest: &LocalDigest,
    ) -> Result<Delivery, SftpError> {
        let dir = self.cfg.remote_dir.trim_end_matches('/');
        let final_path = format!("{dir}/{remote_name}");
        let (parent, base) = match final_path.rsplit_once('/') {
            Some((p, b)) => (
                if p.is_empty() {
                    "/".to_string()
                } else {
                    p.to_string()
                },
                b.to_string(),
            ),
            None => (".".to_string(), final_path.clone()),
        };
        make_dirs(sftp, &parent).await?;
        // Leftovers of interrupted attempts go first (a fresh name is used
        // below, so nothing another attempt verifies is ever reopened).
        remove_stale_parts(sftp, &parent, &base).await;

        if let Ok(meta) = sftp.metadata(final_path.clone()).await {
            if meta.size == Some(digest.size)
                && remote_sha256(sftp, &final_path).await? == digest.sha256
            {
                return Ok(Delivery::AlreadyPresent);
            }
            // Someone else's file (or ours from a lost queue): never replaced.
            return Ok(Delivery::NameTaken);
        }

        // A unique temporary name per attempt: an attempt abandoned by a
        // crash can never write into the file another attempt verifies and
        // renames.
        // (Without the OS generator, the clock's nanoseconds are unique enough.)
        let nonce = getrandom::u64().unwrap_or_else(|_| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        let part = format!("{parent}/.{base}.{nonce:016x}.part");
        let mut remote = sftp
            .create(part.clone())
            .await
            .map_err(op_err("create", &part))?;
        let mut file = tokio::fs::File::open(local)
            .await
            .map_err(|e| SftpError::Op {
                op: "open local",
                path: local.display().to_string(),
                reason: e.to_string(),
            })?;
        let mut buf = vec![0u8; IO_CHUNK];
        loop {
            let n = file.read(&mut buf).await.map_err(|e| SftpError::Op {
                op: "read local",
                path: local.display().to_string(),
                reason: e.to_string(),
            })?;
            if n == 0 {
                break;
            }
            remote
                .write_all(&buf[..n])
                .await
                .map_err(|e| SftpError::Op {
                    op: "write",
                    path: part.clone(),
                    reason: e.to_string(),
                })?;
        }
        remote.flush().await.map_err(|e| SftpError::Op {
            op: "flush",
            path: part.clone(),
            reason: e.to_string(),
        })?;
        // fsync@openssh.com: durable on the server's disk before we trust it.
        remote.sync_all().await.map_err(op_err("fsync", &part))?;
        remote.shutdown().await.map_err(|e| SftpError::Op {
            op: "close",
            path: part.clone(),
            reason: e.to_string(),
        })?;

        let size = sftp
            .metadata(part.clone())
            .await
            .map_err(op_err("stat", &part))?
            .size;
        if size != Some(digest.size) {
            return Err(SftpError::Verify {
                path: part,
                reason: format!("remote size {size:?}, local {}", digest.size),
            });
        }
        let sha = remote_sha256(sftp, &part).await?;
        if sha != digest.sha256 {
            return Err(SftpError::Verify {
                path: part,
                reason: format!("remote sha256 {sha}, local {}", digest.sha256),
            });
        }
        sftp.rename(part.clone(), final_path.clone())
            .await
            .map_err(op_err("rename", &part))?;
        Ok(Delivery::Uploaded { bytes: digest.size })
    }
}

/// `mkdir -p` over SFTP (errors on existing levels are ignored; a real
/// problem shows up at `create`).
async fn make_dirs(sftp: &SftpSession, dir: &str) -> Result<(), SftpError> {
    let mut path = if dir.starts_with('/') {
        "/".to_string()
    } else {
        String::new()
    };
    for comp in dir.split('/').filter(|c| !c.is_empty() && *c != ".") {
        if !path.is_empty() && !path.ends_with('/') {
            path.push('/');
        }
        path.push_str(comp);
        if sftp.try_exists(path.clone()).await.unwrap_or(false) {
            continue;
        }
        let _ = sftp.create_dir(path.clone()).await;
    }
    Ok(())
}

/// Removes `.<base>.*.part` files left in `dir` by interrupted attempts.
async fn remove_stale_parts(sftp: &SftpSession, dir: &str, base: &str) {
    let prefix = format!(".{base}.");
    let Ok(entries) = sftp.read_dir(dir.to_string()).await else {
        return;
    };
    for e in entries {
        let name = e.file_name();
        let rest = name
            .strip_prefix(&prefix)
            .and_then(|r| r.strip_suffix(".part"));
        if rest.is_some_and(|r| r.len() == 16 && r.bytes().all(|b| b.is_ascii_hexdigit())) {
            let _ = sftp.remove_file(format!("{dir}/{name}")).await;
        }
    }
}

/// SHA-256 of a remote file, read over SFTP.
async fn remote_sha256(sftp: &SftpSession, path: &str) -> Result<String, SftpError> {
    let mut f = sftp
        .open(path.to_string())
        .await
        .map_err(op_err("open for read-back", path))?;
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; IO_CHUNK];
    loop {
        let n = f.read(&mut buf).await.map_err(|e| SftpError::Op {
            op: "read-back",
            path: path.to_string(),
            reason: e.to_string(),
        })?;
        if n == 0 {
            break;
        }
        ctx.update(&buf[..n]);
    }
    Ok(hex(ctx.finish().as_ref()))
}
