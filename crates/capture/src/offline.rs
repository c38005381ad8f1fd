//! Offline mode: run sessions over a pcap or pcapng file (read with
//! libpcap at nanosecond precision), reproducibly.
//!
//! The file's link type (its pcap header, or its pcapng interface
//! description blocks, which libpcap requires to agree) is the source's:
//! filters are compiled for it and output files carry it. A link type the
//! pipeline does not parse is refused before any session starts.

use crate::config::SessionConfig;
use crate::counters::Counters;
use crate::demux::Demux;
use crate::filter::Filter;
use crate::linktype::{LinkType, LinkTypeError};
use crate::session::{Session, SessionEnv, SessionError};
use std::path::Path;

/// Why an offline run failed.
#[derive(Debug, thiserror::Error)]
pub enum OfflineError {
    /// libpcap could not open or read the file.
    #[error("read {path}: {message}")]
    Read {
        /// The input file.
        path: String,
        /// libpcap's message.
        message: String,
    },
    /// The file's link type is not one the pipeline parses.
    #[error("{path}: {source}")]
    Linktype {
        /// The input file.
        path: String,
        /// The link type and why it is refused.
        source: LinkTypeError,
    },
    /// A pcapng file's interfaces have different link types (libpcap reads
    /// one link type per file).
    #[error("{path}: its interfaces have different link types ({found}); split it per interface first, e.g. tshark -r FILE -Y 'frame.interface_id == N' -w PART")]
    MixedLinkTypes {
        /// The input file.
        path: String,
        /// The link type of each interface, in order.
        found: String,
    },
    /// A session could not start or stop.
    #[error("session {session}: {source}")]
    Session {
        /// Session name.
        session: String,
        /// The error.
        source: SessionError,
    },
}

/// The result of [`run_file`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    /// Packets read.
    pub packets: u64,
    /// Wire bytes read.
    pub bytes: u64,
    /// First packet time (ns since the epoch).
    pub first_ns: u64,
    /// Last packet time.
    pub last_ns: u64,
    /// The file's link type.
    pub link: LinkType,
    /// Final counters per session, in the given order.
    pub sessions: Vec<(String, Counters)>,
}

/// Runs `sessions` over the capture file at `path`; every session is
/// stopped at the time of the last packet (flows flushed, files closed).
pub fn run_file(
    path: &Path,
    sessions: Vec<SessionConfig>,
    env: &SessionEnv,
) -> Result<RunSummary, OfflineError> {
    let read = |e: pcap::Error| OfflineError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let mut cap =
        pcap::Capture::from_file_with_precision(path, pcap::Precision::Nano).map_err(read)?;
    let refused = |source| OfflineError::Linktype {
        path: path.display().to_string(),
        source,
    };
    let link = LinkType::from_number(cap.get_datalink().0 as u32).map_err(refused)?;
    // Every interface block of a pcapng file, before any session starts.
    let io = |e: std::io::Error| OfflineError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let interfaces = pcapng_link_types(path).map_err(io)?;
    for &n in &interfaces {
        LinkType::from_number(n).map_err(refused)?;
    }
    if interfaces.iter().any(|&n| n != interfaces[0]) {
        let found = interfaces
            .iter()
            .enumerate()
            .map(|(i, &n)| match LinkType::from_number(n) {
                Ok(l) => format!("interface {i}: {l}"),
                Err(_) => format!("interface {i}: {n}"),
            })
            .collect::<Vec<_>>()
            .join(", ");
        return Err(OfflineError::MixedLinkTypes {
            path: path.display().to_string(),
            found,
        });
    }
    let mut demux = Demux::new();
    let mut env = env.clone();
    env.source = path.display().to_string();
    for c in sessions {
        let name = c.name.clone();
        // The file's own handle compiles as tcpdump reading the file does,
        // unless libpcap has no filter code for its number (DLT 14 is raw
        // IP only on OpenBSD): then a handle of the canonical number.
        let own = cap.get_datalink().0 == link.dlt();
        let filter = c
            .filter_expression()
            .and_then(|e| match own {
                true => Filter::compile_on(&e, link, &cap),
                false => Filter::compile_for(&e, link),
            })
            .map_err(|e| OfflineError::Session {
                session: c.name.clone(),
                source: e.into(),
            })?;
        let s = Session::with_filter(c, &env, filter).map_err(|source| OfflineError::Session {
            session: name,
            source,
        })?;
        demux.add(s);
    }
    let mut sum = RunSummary {
        packets: 0,
        bytes: 0,
        first_ns: 0,
        last_ns: 0,
        link,
        sessions: Vec::new(),
    };
    loop {
        let pkt = match cap.next_packet() {
            Ok(p) => p,
            Err(pcap::Error::NoMorePackets) => break,
            Err(e) => return Err(read(e)),
        };
        let h = pkt.header;
        // With nanosecond precision libpcap puts nanoseconds in tv_usec.
        let ts = (h.ts.tv_sec as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(h.ts.tv_usec as u64);
        if sum.packets == 0 {
            sum.first_ns = ts;
        }
        sum.last_ns = ts;
        sum.packets += 1;
        sum.bytes += u64::from(h.len);
        demux.process(ts, pkt.data, h.len);
    }
    for (name, r) in demux.stop_all(sum.last_ns) {
        let c = r.map_err(|source| OfflineError::Session {
            session: name.clone(),
            source,
        })?;
        sum.sessions.push((name, c));
    }
    Ok(sum)
}

/// The link type of every interface description block of a pcapng file,
/// in order over all its sections (empty for a pcap file). Reads block
/// headers only and skips block bodies.
pub fn pcapng_link_types(path: &Path) -> std::io::Result<Vec<u32>> {
    use std::io::{BufReader, Read};
    let mut r = BufReader::with_capacity(1 << 16, std::fs::File::open(path)?);
    let mut out = Vec::new();
    let mut big_endian = false;
    let mut head = [0u8; 12];
    let mut first = true;
    loop {
        match r.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(out),
            Err(e) => return Err(e),
        }
        if head[0..4] == [0x0a, 0x0d, 0x0d, 0x0a] {
            // Section header: its byte-order magic says how to read the rest.
            big_endian = head[8..12] == [0x1a, 0x2b, 0x3c, 0x4d];
        } else if first {
            return Ok(out); // not pcapng
        }
        first = false;
        let word = |b: &[u8]| match big_endian {
            true => u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            false => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        };
        let len = word(&head[4..8]);
        if len < 12 || len % 4 != 0 {
            return Ok(out); // damaged: libpcap reports it when reading
        }
        if word(&head[0..4]) == 1 {
            let lt = [head[8], head[9]];
            out.push(u32::from(match big_endian {
                true => u16::from_be_bytes(lt),
                false => u16::from_le_bytes(lt),
            }));
        }
        r.seek_relative(i64::from(len) - 12)?;
    }
}
