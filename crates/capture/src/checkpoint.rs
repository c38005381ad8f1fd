//! Checkpoints of a session's active flows, so that a crash (SIGKILL, power
//! loss) loses at most one tick of flow data instead of every flow still
//! in memory.
//!
//! At every tick a session with IPFIX outputs writes one small binary file
//! (temporary file, fsync, rename: a reader sees the old or the new one,
//! never a mix) holding, per IPFIX output, its observation domain, its
//! IPFIX file and the length of that file at the checkpoint, and its
//! active flow table. The records the tick exported to the file are
//! written and synced *before* the checkpoint, the records for network
//! collectors and the flow sink leave *after* it.
//!
//! After a crash the rule is: **restore, never export twice**.
//! - the IPFIX file left open is cut back to the length in the checkpoint
//!   ([`Checkpoint::cut_open_files`]): records written after the
//!   checkpoint belong to flows the checkpoint still holds;
//! - the flows of the checkpoint go back into the flow tables of the
//!   restarted session and are exported by it, counts up to the
//!   checkpoint included, continuing if the flow goes on.
//!
//! So every packet metered before the last checkpoint is counted exactly
//! once, in the old file or in a record of the restarted session; packets
//! of the last (partial) tick are lost. For network collectors a crash
//! between the checkpoint and the send loses that tick's records rather
//! than sending them twice.
//!
//! ```
//! use capture::checkpoint::{Checkpoint, OutputState};
//! let mut buf = Vec::new();
//! Checkpoint::encode(&mut buf, [(7u32, None, 0u64, [].iter())]);
//! let back = Checkpoint::decode(&buf).unwrap();
//! assert_eq!(back.outputs[0].domain, 7);
//! ```

use crate::flow::{EndReason, FlowKey, FlowRecord};
use std::fs::OpenOptions;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// First bytes of a checkpoint file (format version 1).
const MAGIC: &[u8; 8] = b"SGFLOWC1";

/// One IPFIX output at a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputState {
    /// Observation domain of the output (matches outputs on restore).
    pub domain: u32,
    /// Its IPFIX file, for file targets.
    pub file: Option<PathBuf>,
    /// Bytes of that file written and synced at the checkpoint.
    pub file_len: u64,
    /// Active flows at the checkpoint.
    pub flows: Vec<FlowRecord>,
}

/// The active flows of a session at one tick.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Checkpoint {
    /// One entry per IPFIX output, in configuration order.
    pub outputs: Vec<OutputState>,
}

/// Why a checkpoint could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// Reading, writing or renaming failed.
    #[error("flow checkpoint {path}: {source}")]
    Io {
        /// The checkpoint or IPFIX file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a checkpoint of this format.
    #[error("flow checkpoint {path}: {why}")]
    Corrupt {
        /// The checkpoint file.
        path: String,
        /// What is wrong.
        why: String,
    },
}

/// Reads big-endian fields from a byte slice.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if self.0.len() < n {
            return Err("cut short".into());
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_be_bytes(
            self.take(2)?.try_into().map_err(|_| "")?,
        ))
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_be_bytes(
            self.take(4)?.try_into().map_err(|_| "")?,
        ))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_be_bytes(
            self.take(8)?.try_into().map_err(|_| "")?,
        ))
    }
    fn u128(&mut self) -> Result<u128, String> {
        Ok(u128::from_be_bytes(
            self.take(16)?.try_into().map_err(|_| "")?,
        ))
    }
}

fn put_flow(b: &mut Vec<u8>, r: &FlowRecord) {
    let k = &r.key;
    b.push(u8::from(k.v6));
    if k.v6 {
        b.extend_from_slice(&k.src.to_be_bytes());
        b.extend_from_slice(&k.dst.to_be_bytes());
    } else {
        b.extend_from_slice(&(k.src as u32).to_be_bytes());
        b.extend_from_slice(&(k.dst as u32).to_be_bytes());
    }
    b.extend_from_slice(&k.sport.to_be_bytes());
    b.extend_from_slice(&k.dport.to_be_bytes());
    b.push(k.proto);
    for v in [r.start_ns, r.end_ns, r.packets, r.octets] {
        b.extend_from_slice(&v.to_be_bytes());
    }
    b.push(r.tcp_flags);
    b.extend_from_slice(&r.rev_packets.to_be_bytes());
    b.extend_from_slice(&r.rev_octets.to_be_bytes());
    b.push(r.rev_tcp_flags);
}

fn get_flow(r: &mut Reader<'_>) -> Result<FlowRecord, String> {
    let v6 = match r.u8()? {
        0 => false,
        1 => true,
        x => return Err(format!("bad address family {x}")),
    };
    let (src, dst) = if v6 {
        (r.u128()?, r.u128()?)
    } else {
        (u128::from(r.u32()?), u128::from(r.u32()?))
    };
    let key = FlowKey {
        v6,
        src,
        dst,
        sport: r.u16()?,
        dport: r.u16()?,
        proto: r.u8()?,
    };
    Ok(FlowRecord {
        key,
        start_ns: r.u64()?,
        end_ns: r.u64()?,
        packets: r.u64()?,
        octets: r.u64()?,
        tcp_flags: r.u8()?,
        rev_packets: r.u64()?,
        rev_octets: r.u64()?,
        rev_tcp_flags: r.u8()?,
        end_reason: EndReason::Idle,
    })
}

impl Checkpoint {
    /// Encodes outputs given as (domain, file, file length, flows) into
    /// `buf` (cleared first), without copying the flow tables.
    pub fn encode<'a, F>(
        buf: &mut Vec<u8>,
        outputs: impl IntoIterator<Item = (u32, Option<&'a Path>, u64, F)>,
    ) where
        F: ExactSizeIterator<Item = &'a FlowRecord>,
    {
        buf.clear();
        buf.extend_from_slice(MAGIC);
        let at = buf.len();
        buf.extend_from_slice(&0u32.to_be_bytes());
        let mut n = 0u32;
        for (domain, file, len, flows) in outputs {
            n += 1;
            buf.extend_from_slice(&domain.to_be_bytes());
            let name = file.map(|p| p.as_os_str().as_bytes()).unwrap_or_default();
            buf.extend_from_slice(&(name.len() as u32).to_be_bytes());
            buf.extend_from_slice(name);
            buf.extend_from_slice(&len.to_be_bytes());
            buf.extend_from_slice(&(flows.len() as u64).to_be_bytes());
            buf.reserve(flows.len() * 64);
            for r in flows {
                put_flow(buf, r);
            }
        }
        buf[at..at + 4].copy_from_slice(&n.to_be_bytes());
    }

    /// Decodes a checkpoint; any trailing or missing byte is an error.
    pub fn decode(b: &[u8]) -> Result<Checkpoint, String> {
        let mut r = Reader(b);
        if r.take(MAGIC.len())? != MAGIC {
            return Err("not a flow checkpoint (bad magic)".into());
        }
        let n = r.u32()?;
        let mut outputs = Vec::new();
        for _ in 0..n {
            let domain = r.u32()?;
            let name_len = r.u32()? as usize;
            let name = r.take(name_len)?;
            let file = (!name.is_empty()).then(|| PathBuf::from(std::ffi::OsStr::from_bytes(name)));
            let file_len = r.u64()?;
            let count = r.u64()?;
            // Each flow takes at least 64 bytes: refuse counts the bytes cannot hold.
            if count > (r.0.len() / 64) as u64 {
                return Err(format!("{count} flows announced, the file is too short"));
            }
            let flows = (0..count)
                .map(|_| get_flow(&mut r))
                .collect::<Result<Vec<_>, _>>()?;
            outputs.push(OutputState {
                domain,
                file,
                file_len,
                flows,
            });
        }
        if !r.0.is_empty() {
            return Err(format!("{} bytes after the last output", r.0.len()));
        }
        Ok(Checkpoint { outputs })
    }

    /// Reads the checkpoint at `path`; `None` when there is none.
    pub fn read(path: &Path) -> Result<Option<Checkpoint>, CheckpointError> {
        match std::fs::read(path) {
            Ok(b) => Checkpoint::decode(&b)
                .map(Some)
                .map_err(|why| CheckpointError::Corrupt {
                    path: path.display().to_string(),
                    why,
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(CheckpointError::Io {
                path: path.display().to_string(),
                source,
            }),
        }
    }

    /// Active flows over all outputs.
    pub fn flows(&self) -> usize {
        self.outputs.iter().map(|o| o.flows.len()).sum()
    }

    /// Cuts each IPFIX file still open (no `.json` metadata beside it) back
    /// to its length at the checkpoint, before crash repair closes it.
    /// Returns one log line per file cut.
    pub fn cut_open_files(&self) -> Result<Vec<String>, CheckpointError> {
        let mut lines = Vec::new();
        for o in &self.outputs {
            let Some(f) = &o.file else { continue };
            let mut md = f.as_os_str().to_owned();
            md.push(".json");
            if Path::new(&md).exists() {
                continue;
            }
            let io = |source| CheckpointError::Io {
                path: f.display().to_string(),
                source,
            };
            let file = match OpenOptions::new().write(true).open(f) {
                Ok(file) => file,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io(e)),
            };
            let len = file.metadata().map_err(io)?.len();
            if len > o.file_len {
                file.set_len(o.file_len).map_err(io)?;
                file.sync_all().map_err(io)?;
                lines.push(format!(
                    "{}: {} bytes written after the last flow checkpoint cut (their flows are restored from it)",
                    f.file_name().unwrap_or_default().to_string_lossy(),
                    len - o.file_len
                ));
            }
        }
        Ok(lines)
    }
}

/// Writes `bytes` to `path` atomically ([`crate::atomic`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    crate::atomic::write(path, bytes).map_err(|source| CheckpointError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Removes the checkpoint at `path` (absent is fine).
pub fn remove(path: &Path) -> Result<(), CheckpointError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(CheckpointError::Io {
            path: path.display().to_string(),
            source: e,
        }),
        _ => Ok(()),
    }
}

/// A session's checkpoint file: where it goes, a reused encoding buffer,
/// and what the last one held (an unchanged session writes none).
#[derive(Debug)]
pub(crate) struct Checkpointer {
    /// The checkpoint file.
    pub path: PathBuf,
    /// Encoding buffer, kept between ticks.
    buf: Vec<u8>,
    /// Per output (table changes, file bytes) at the last checkpoint.
    last: Option<Vec<(u64, u64)>>,
    /// A failure was logged already (then only counted by the next success).
    pub warned: bool,
}

impl Checkpointer {
    /// A checkpointer writing to `path`.
    pub fn new(path: PathBuf) -> Checkpointer {
        Checkpointer {
            path,
            buf: Vec::new(),
            last: None,
            warned: false,
        }
    }

    /// True when outputs with this signature differ from the last checkpoint.
    pub fn due(&self, signature: &[(u64, u64)]) -> bool {
        self.last.as_deref() != Some(signature)
    }

    /// Writes a checkpoint of `outputs` and remembers `signature`.
    pub fn write<'a, F>(
        &mut self,
        signature: Vec<(u64, u64)>,
        outputs: impl IntoIterator<Item = (u32, Option<&'a Path>, u64, F)>,
    ) -> Result<(), CheckpointError>
    where
        F: ExactSizeIterator<Item = &'a FlowRecord>,
    {
        Checkpoint::encode(&mut self.buf, outputs);
        write_atomic(&self.path, &self.buf)?;
        self.last = Some(signature);
        Ok(())
    }
}

#[cfg(test)]
#[path = "checkpoint_tests.rs"]
mod tests;
