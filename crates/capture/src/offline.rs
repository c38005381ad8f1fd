//! Offline mode: run sessions over a pcap or pcapng file (read with
//! libpcap at nanosecond precision), reproducibly.

use crate::config::SessionConfig;
use crate::counters::Counters;
use crate::demux::Demux;
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
    /// The file is not Ethernet.
    #[error("{path}: link type {linktype} is not Ethernet (1)")]
    Linktype {
        /// The input file.
        path: String,
        /// The file's link type.
        linktype: i32,
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
    let lt = cap.get_datalink();
    if lt != pcap::Linktype::ETHERNET {
        return Err(OfflineError::Linktype {
            path: path.display().to_string(),
            linktype: lt.0,
        });
    }
    let mut demux = Demux::new();
    let mut env = env.clone();
    env.source = path.display().to_string();
    for c in sessions {
        let name = c.name.clone();
        let s = Session::new(c, &env).map_err(|source| OfflineError::Session {
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
