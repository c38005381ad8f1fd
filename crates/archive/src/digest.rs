//! Fingerprints of a local file, computed in one pass, used to confirm that
//! the remote copy holds exactly the same bytes.

use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;

use md5::{Digest as _, Md5};

/// Size and checksums of one local file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalDigest {
    /// Length in bytes.
    pub size: u64,
    /// SHA-256 of the whole file, lowercase hex (compared against the sftp
    /// read-back).
    pub sha256: String,
    /// The ETag S3 computes for this file when uploaded with parts of
    /// `part_size` bytes: the MD5 for a single PUT, else the MD5 of the
    /// concatenated part MD5s followed by `-<parts>`.
    pub s3_etag: String,
}

/// Reads `path` once (blocking; call from `spawn_blocking`).
pub fn digest_file(path: &Path, part_size: usize) -> std::io::Result<LocalDigest> {
    let mut file = std::fs::File::open(path)?;
    let mut sha = ring::digest::Context::new(&ring::digest::SHA256);
    let mut whole_md5 = Md5::new();
    let mut part_md5 = Md5::new();
    let mut part_fill = 0usize;
    let mut part_digests: Vec<u8> = Vec::new();
    let mut parts = 0usize;
    let mut size = 0u64;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        size += n as u64;
        sha.update(chunk);
        whole_md5.update(chunk);
        let mut rest = chunk;
        while !rest.is_empty() {
            let take = rest.len().min(part_size - part_fill);
            part_md5.update(&rest[..take]);
            part_fill += take;
            rest = &rest[take..];
            if part_fill == part_size {
                part_digests.extend_from_slice(&part_md5.finalize_reset());
                parts += 1;
                part_fill = 0;
            }
        }
    }
    if part_fill > 0 {
        part_digests.extend_from_slice(&part_md5.finalize_reset());
        parts += 1;
    }
    let s3_etag = if size as usize <= part_size {
        hex(&whole_md5.finalize())
    } else {
        format!("{}-{parts}", hex(&Md5::digest(&part_digests)))
    };
    Ok(LocalDigest {
        size,
        sha256: hex(sha.finish().as_ref()),
        s3_etag,
    })
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn single_part_etag_is_the_md5() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(b"hello").unwrap();
        let d = digest_file(f.path(), 1024).unwrap();
        assert_eq!(d.size, 5);
        assert_eq!(d.s3_etag, "5d41402abc4b2a76b9719d911017c592");
        assert_eq!(
            d.sha256,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
    }

    #[test]
    fn multipart_etag_is_md5_of_part_md5s() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(b"hello").unwrap();
        // parts "he", "ll", "o"
        let d = digest_file(f.path(), 2).unwrap();
        let mut cat = Vec::new();
        for p in [&b"he"[..], b"ll", b"o"] {
            cat.extend_from_slice(&Md5::digest(p));
        }
        assert_eq!(d.s3_etag, format!("{}-3", hex(&Md5::digest(&cat))));
        // exactly one full part is a single PUT
        let d = digest_file(f.path(), 5).unwrap();
        assert_eq!(d.s3_etag, "5d41402abc4b2a76b9719d911017c592");
    }
}
