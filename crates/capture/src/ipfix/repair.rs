//! Crash repair of an IPFIX file (RFC 5655: concatenated messages): a
//! daemon killed while writing leaves at most one partial message at the
//! end; [`repair`] cuts the file back to its last complete message so
//! collectors read it cleanly.

use crate::output::RepairError;
use std::fs::OpenOptions;
use std::io::Read;
use std::path::Path;

/// What [`repair`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpfixRepair {
    /// Complete messages kept.
    pub messages: u64,
    /// Size before.
    pub old_len: u64,
    /// Size after (== old_len when nothing was cut).
    pub new_len: u64,
}

/// True when `b` starts like an IPFIX message (version 10, length ≥ 16).
pub fn looks_like_ipfix(b: &[u8]) -> bool {
    b.len() >= 4 && b[0..2] == [0, 10] && u16::from_be_bytes([b[2], b[3]]) >= 16
}

/// Truncates an IPFIX file to its last complete message.
pub fn repair(path: &Path) -> Result<IpfixRepair, RepairError> {
    let io = |source| RepairError::Io {
        path: path.display().to_string(),
        source,
    };
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(io)?;
    let mut b = Vec::new();
    f.read_to_end(&mut b).map_err(io)?;
    if !b.is_empty() && !looks_like_ipfix(&b) {
        return Err(RepairError::NotCapture {
            path: path.display().to_string(),
        });
    }
    let (mut at, mut messages) = (0usize, 0u64);
    while let Some(h) = b.get(at..at + 4) {
        let len = usize::from(u16::from_be_bytes([h[2], h[3]]));
        if h[0..2] != [0, 10] || len < 16 || at + len > b.len() {
            break;
        }
        at += len;
        messages += 1;
    }
    let old_len = b.len() as u64;
    if (at as u64) < old_len {
        f.set_len(at as u64).map_err(io)?;
        f.sync_all().map_err(io)?;
    }
    Ok(IpfixRepair {
        messages,
        old_len,
        new_len: at as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipfix::{Encoder, TimeResolution};

    #[test]
    fn cuts_a_partial_message() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("f.ipfix");
        let enc = Encoder::new(1, 65535, TimeResolution::Milliseconds);
        let mut b = enc.templates(1);
        b.extend(enc.templates(2));
        let good = b.len() as u64;
        b.extend(&enc.templates(3)[..20]);
        std::fs::write(&p, &b).unwrap();
        let r = repair(&p).unwrap();
        assert_eq!((r.messages, r.new_len), (2, good));
        assert_eq!(std::fs::metadata(&p).unwrap().len(), good);
        std::fs::write(&p, b"not ipfix at all").unwrap();
        assert!(repair(&p).is_err());
    }
}
