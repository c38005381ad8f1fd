//! Files replaced whole, never seen half-written: session records, flow
//! checkpoints and metadata documents are written to a hidden temporary
//! name beside their own (`.<name>.tmp`, owner-only), synced, and renamed
//! over it. A crash leaves the old file or the new one, and at most a
//! hidden temporary that crash recovery removes or the next write
//! replaces.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The hidden temporary name [`write`] uses for `path`.
pub fn temporary(path: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(".tmp");
    path.with_file_name(name)
}

/// Replaces `path` with `bytes` (mode 0600) atomically.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = temporary(path);
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_data()?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn replaces_whole_owner_only_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s1.json");
        super::write(&p, b"old").unwrap();
        super::write(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(super::temporary(&p), dir.path().join(".s1.json.tmp"));
        assert!(!super::temporary(&p).exists());
    }
}
