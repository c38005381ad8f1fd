//! Segment files: the journal's data, `seg-<start offset>`, each starting
//! at a tuple boundary.

use std::path::{Path, PathBuf};

/// One segment file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Data offset of its first byte.
    pub start: u64,
    /// Bytes in it.
    pub len: u64,
}

impl Segment {
    /// Data offset just after its last byte.
    pub fn end(&self) -> u64 {
        self.start + self.len
    }
}

/// The file of the segment starting at `start`.
pub fn path(dir: &Path, start: u64) -> PathBuf {
    dir.join(format!("seg-{start:020}"))
}

/// Segments found in `dir`, in offset order.
pub fn list(dir: &Path) -> std::io::Result<Vec<Segment>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(start) = name
            .to_str()
            .and_then(|n| n.strip_prefix("seg-"))
            .and_then(|n| n.parse().ok())
        else {
            continue;
        };
        out.push(Segment {
            start,
            len: entry.metadata()?.len(),
        });
    }
    out.sort_by_key(|s| s.start);
    Ok(out)
}
