//! Secret files must be owner-only.
//!
//! Token files, device credentials, TLS private keys and Crypto-PAn keys
//! give whoever reads them the component's authority (or, for a
//! Crypto-PAn key, the real addresses behind anonymised captures). A file
//! that its group or other users can read or change has already leaked or
//! can be replaced, so, as ssh does with private keys, every component
//! refuses to load one ([`check_private`]) and says which `chmod` fixes it.
//! [`write_private`] creates such files (tests, generated secrets).
//!
//! What the daemons store is as private as their secrets: collected rows,
//! journals, captures. [`owner_only_from_now`] makes every file and
//! directory the process creates afterwards owner-only.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Sets the process's file-creation mask to 077: every file and directory
/// created afterwards (databases, journals, their `-wal` files, data
/// directories) is readable by the daemon's user only, whatever the
/// umask it was started with. Returns the mask that was in force. Called
/// by the daemons (server, proxy, manager) as they start serving; an
/// operator who wants a group to read the data grants it afterwards
/// (`chmod g+r`, ACLs) knowingly.
pub fn owner_only_from_now() -> u32 {
    // SAFETY: umask only swaps an integer in the process's state.
    #[allow(unsafe_code)]
    let old = unsafe { libc::umask(0o077) };
    old as u32
}

/// Why a secret file is refused.
#[derive(Debug, thiserror::Error)]
pub enum SecretFileError {
    /// Its mode lets the group or others in.
    #[error(
        "{path}: a secret file must be readable by its owner only, but its mode is {mode:04o}: \
         run `chmod 600 {path}`",
        path = path.display()
    )]
    Exposed {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// It could not be examined.
    #[error("{path}: {source}", path = path.display())]
    Stat {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
}

/// Refuses a secret file that its group or others may read, write or
/// execute (any of the 0o077 bits, as ssh).
pub fn check_private(path: &Path) -> Result<(), SecretFileError> {
    let meta = std::fs::metadata(path).map_err(|source| SecretFileError::Stat {
        path: path.to_owned(),
        source,
    })?;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(SecretFileError::Exposed {
            path: path.to_owned(),
            mode,
        });
    }
    Ok(())
}

/// Writes `contents` to a new or truncated owner-only (0600) file; an
/// existing file is made owner-only first, so the secret is never
/// readable by others, not even for a moment.
pub fn write_private(path: &Path, contents: impl AsRef<[u8]>) -> std::io::Result<()> {
    if path.exists() {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(contents.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_or_world_access_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tokens");
        std::fs::write(&p, "x").unwrap();
        for mode in [0o644, 0o640, 0o604, 0o620] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = check_private(&p).unwrap_err().to_string();
            assert!(
                e.contains(&format!("chmod 600 {}", p.display())),
                "{mode:o}: {e}"
            );
        }
        for mode in [0o600, 0o400] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            check_private(&p).unwrap();
        }
        write_private(&p, "y").unwrap();
        check_private(&p).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "y");
        let q = dir.path().join("new");
        write_private(&q, "z").unwrap();
        check_private(&q).unwrap();
        assert!(check_private(&dir.path().join("missing")).is_err());
    }
}
