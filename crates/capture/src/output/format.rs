//! pcap (nanosecond) and pcapng (if_tsresol = 9) encoding, and crash repair.

use serde::{Deserialize, Serialize};
use std::fs::OpenOptions;
use std::io::Read;
use std::path::Path;

/// Link type number of Ethernet, the default of [`FileFormat::header`]'s callers.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// pcap magic for nanosecond timestamps.
pub const PCAP_MAGIC_NS: u32 = 0xa1b2_3c4d;

/// On-disk packet file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileFormat {
    /// Classic pcap, nanosecond magic, little-endian.
    Pcap,
    /// pcapng with one interface (the source's link type), nanosecond resolution.
    Pcapng,
}

impl FileFormat {
    /// File name extension.
    pub fn extension(self) -> &'static str {
        match self {
            FileFormat::Pcap => "pcap",
            FileFormat::Pcapng => "pcapng",
        }
    }

    /// The file header (pcap global header; pcapng SHB + IDB) for frames
    /// of link type `linktype` (a LINKTYPE_* number).
    pub fn header(self, snaplen: u32, if_name: &str, linktype: u32) -> Vec<u8> {
        let mut h = Vec::with_capacity(64);
        match self {
            FileFormat::Pcap => {
                h.extend_from_slice(&PCAP_MAGIC_NS.to_le_bytes());
                h.extend_from_slice(&2u16.to_le_bytes());
                h.extend_from_slice(&4u16.to_le_bytes());
                h.extend_from_slice(&0i32.to_le_bytes());
                h.extend_from_slice(&0u32.to_le_bytes());
                h.extend_from_slice(&snaplen.to_le_bytes());
                h.extend_from_slice(&linktype.to_le_bytes());
            }
            FileFormat::Pcapng => {
                // Section Header Block, no options.
                h.extend_from_slice(&0x0a0d_0d0au32.to_le_bytes());
                h.extend_from_slice(&28u32.to_le_bytes());
                h.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes());
                h.extend_from_slice(&1u16.to_le_bytes());
                h.extend_from_slice(&0u16.to_le_bytes());
                h.extend_from_slice(&(-1i64).to_le_bytes());
                h.extend_from_slice(&28u32.to_le_bytes());
                // Interface Description Block: if_name (2), if_tsresol (9) = 9, end.
                let mut opts = Vec::new();
                let name = if_name.as_bytes();
                if !name.is_empty() {
                    opts.extend_from_slice(&2u16.to_le_bytes());
                    opts.extend_from_slice(&(name.len() as u16).to_le_bytes());
                    opts.extend_from_slice(name);
                    opts.resize(opts.len().next_multiple_of(4), 0);
                }
                opts.extend_from_slice(&[9, 0, 1, 0, 9, 0, 0, 0]);
                opts.extend_from_slice(&[0, 0, 0, 0]);
                let len = (20 + opts.len()) as u32;
                h.extend_from_slice(&1u32.to_le_bytes());
                h.extend_from_slice(&len.to_le_bytes());
                h.extend_from_slice(&(linktype as u16).to_le_bytes());
                h.extend_from_slice(&0u16.to_le_bytes());
                h.extend_from_slice(&snaplen.to_le_bytes());
                h.extend_from_slice(&opts);
                h.extend_from_slice(&len.to_le_bytes());
            }
        }
        h
    }

    /// Appends one packet record to `out`.
    pub fn record(self, ts_ns: u64, data: &[u8], orig_len: u32, out: &mut Vec<u8>) {
        let cap = data.len() as u32;
        match self {
            FileFormat::Pcap => {
                out.extend_from_slice(&((ts_ns / 1_000_000_000) as u32).to_le_bytes());
                out.extend_from_slice(&((ts_ns % 1_000_000_000) as u32).to_le_bytes());
                out.extend_from_slice(&cap.to_le_bytes());
                out.extend_from_slice(&orig_len.max(cap).to_le_bytes());
                out.extend_from_slice(data);
            }
            FileFormat::Pcapng => {
                let padded = data.len().next_multiple_of(4);
                let len = (32 + padded) as u32;
                out.extend_from_slice(&6u32.to_le_bytes());
                out.extend_from_slice(&len.to_le_bytes());
                out.extend_from_slice(&0u32.to_le_bytes());
                out.extend_from_slice(&((ts_ns >> 32) as u32).to_le_bytes());
                out.extend_from_slice(&(ts_ns as u32).to_le_bytes());
                out.extend_from_slice(&cap.to_le_bytes());
                out.extend_from_slice(&orig_len.max(cap).to_le_bytes());
                out.extend_from_slice(data);
                out.resize(out.len() + padded - data.len(), 0);
                out.extend_from_slice(&len.to_le_bytes());
            }
        }
    }

    /// Size of a record of `caplen` bytes.
    pub fn record_len(self, caplen: usize) -> usize {
        match self {
            FileFormat::Pcap => 16 + caplen,
            FileFormat::Pcapng => 32 + caplen.next_multiple_of(4),
        }
    }
}

/// The link type in the header of a pcap or pcapng file we wrote
/// (little-endian; pcapng: its first interface description block).
pub fn header_linktype(b: &[u8]) -> Option<u32> {
    match le32(b, 0)? {
        PCAP_MAGIC_NS | 0xa1b2_c3d4 => le32(b, 20),
        0x0a0d_0d0a => {
            let idb = le32(b, 4)? as usize;
            let lt = b.get(idb.checked_add(8)?..idb + 10)?;
            (le32(b, idb)? == 1).then(|| u32::from(u16::from_le_bytes([lt[0], lt[1]])))
        }
        _ => None,
    }
}

/// What [`repair`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairReport {
    /// Complete packet records kept.
    pub records: u64,
    /// Size of the file before.
    pub old_len: u64,
    /// Size after truncation (== old_len when nothing was cut).
    pub new_len: u64,
    /// Timestamp of the first complete record (ns since the epoch), 0 without records.
    pub first_ns: u64,
    /// Timestamp of the last complete record.
    pub last_ns: u64,
}

/// Why a file could not be repaired.
#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    /// Reading or truncating failed.
    #[error("repair {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file does not start with a header we wrote.
    #[error("repair {path}: not a little-endian pcap or pcapng file")]
    NotCapture {
        /// The file.
        path: String,
    },
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Truncates a pcap/pcapng file left by a crash to its last complete record.
pub fn repair(path: &Path) -> Result<RepairReport, RepairError> {
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
    let not = || RepairError::NotCapture {
        path: path.display().to_string(),
    };
    let magic = le32(&b, 0).ok_or_else(not)?;
    let (mut at, mut records) = (0usize, 0u64);
    let (mut first, mut last_ns) = (None, 0u64);
    let mut seen = |ts: u64| {
        first.get_or_insert(ts);
        last_ns = ts;
    };
    if magic == PCAP_MAGIC_NS || magic == 0xa1b2_c3d4 {
        if b.len() < 24 {
            return Err(not());
        }
        let frac = if magic == PCAP_MAGIC_NS { 1 } else { 1000 };
        at = 24;
        while let (Some(sec), Some(sub), Some(cap)) =
            (le32(&b, at), le32(&b, at + 4), le32(&b, at + 8))
        {
            let end = at + 16 + cap as usize;
            if end > b.len() {
                break;
            }
            seen(u64::from(sec) * 1_000_000_000 + u64::from(sub) * frac);
            at = end;
            records += 1;
        }
    } else if magic == 0x0a0d_0d0a {
        while let (Some(ty), Some(len)) = (le32(&b, at), le32(&b, at + 4)) {
            let end = at + len as usize;
            if len < 12 || len % 4 != 0 || end > b.len() || le32(&b, end - 4) != Some(len) {
                break;
            }
            if ty == 6 || ty == 3 {
                records += 1;
            }
            if ty == 6 {
                // Our files have if_tsresol = 9: the 64-bit timestamp is in ns.
                if let (Some(hi), Some(lo)) = (le32(&b, at + 12), le32(&b, at + 16)) {
                    seen((u64::from(hi) << 32) | u64::from(lo));
                }
            }
            at = end;
        }
        if at == 0 {
            return Err(not());
        }
    } else {
        return Err(not());
    }
    let old_len = b.len() as u64;
    if (at as u64) < old_len {
        f.set_len(at as u64).map_err(io)?;
        f.sync_all().map_err(io)?;
    }
    Ok(RepairReport {
        records,
        old_len,
        new_len: at as u64,
        first_ns: first.unwrap_or(0),
        last_ns,
    })
}
