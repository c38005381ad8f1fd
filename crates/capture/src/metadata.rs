//! Per-output-file metadata documents (JSON, and XML as GIMS wrote it),
//! written next to each closed file as `<file>.json` and `<file>.xml`.
//! They never contain key material: only the key's name.

use crate::config::SessionConfig;
use crate::counters::Counters;
use crate::output::ClosedFile;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The metadata of one closed packet file.
#[derive(Debug, Clone, Serialize)]
pub struct FileMetadata {
    /// Session name.
    pub session: String,
    /// File name (no directory).
    pub file: String,
    /// `pcap`, `pcapng` or `ipfix`.
    pub format: String,
    /// Sequence number of the file in the session.
    pub sequence: u64,
    /// Interface or input file the packets came from.
    pub source: String,
    /// Link type (LINKTYPE_* number, as in the file header) of a packet
    /// file: the source's; absent for IPFIX files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub linktype: Option<u32>,
    /// The libpcap filter expression actually compiled.
    pub filter: String,
    /// Sampling, as configured.
    pub sampling: serde_json::Value,
    /// Anonymisation policy: "none" or "crypto-pan" with the fields and key name.
    pub anonymization: String,
    /// First packet (RFC 3339 UTC).
    pub start: String,
    /// Last packet (RFC 3339 UTC).
    pub end: String,
    /// Packet records in the file; for an IPFIX file, the packets its flow records count.
    pub packets: u64,
    /// Flow records in an IPFIX file (absent for packet files and for
    /// IPFIX files closed by crash recovery).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow_records: Option<u64>,
    /// True when the file was left open by a daemon that was killed and
    /// was closed (truncated to its last complete record) when the daemon
    /// restarted; the drop counters are then unknown (0).
    pub recovered: bool,
    /// File size in bytes.
    pub bytes: u64,
    /// Session packets dropped by us so far.
    pub dropped_by_us: u64,
    /// Kernel drops of the source so far.
    pub kernel_drops: u64,
    /// The whole session configuration (contains only the key's name).
    pub config: serde_json::Value,
}

impl FileMetadata {
    /// Metadata of `f` for session `cfg`.
    pub fn new(
        cfg: &SessionConfig,
        filter: &str,
        source: &str,
        f: &ClosedFile,
        c: &Counters,
    ) -> FileMetadata {
        FileMetadata {
            session: cfg.name.clone(),
            file: f
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            format: f
                .path
                .extension()
                .map(|e| e.to_string_lossy().into_owned())
                .unwrap_or_default(),
            sequence: f.seq,
            source: source.to_string(),
            linktype: None,
            filter: filter.to_string(),
            sampling: serde_json::to_value(cfg.sampling).unwrap_or_default(),
            anonymization: match &cfg.anonymization {
                None => "none".into(),
                Some(a) => format!(
                    "crypto-pan fields={} key={}",
                    serde_json::to_value(a.fields)
                        .unwrap_or_default()
                        .as_str()
                        .unwrap_or("?"),
                    a.key
                ),
            },
            start: crate::timefmt::rfc3339(f.first_ns),
            end: crate::timefmt::rfc3339(f.last_ns),
            packets: f.packets,
            flow_records: None,
            recovered: false,
            bytes: f.bytes,
            dropped_by_us: c.dropped_by_us,
            kernel_drops: c.kernel_drops,
            config: serde_json::to_value(cfg).unwrap_or_default(),
        }
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The XML document.
    pub fn to_xml(&self) -> String {
        let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<capture_file>\n");
        let mut el = |k: &str, v: &str| {
            x.push_str(&format!(
                "  <{k}>{}</{k}>\n",
                client::config::xml::escape(v)
            ))
        };
        el("session", &self.session);
        el("file", &self.file);
        el("format", &self.format);
        el("sequence", &self.sequence.to_string());
        el("source", &self.source);
        if let Some(n) = self.linktype {
            el("linktype", &n.to_string());
        }
        el("filter", &self.filter);
        el("sampling", &self.sampling.to_string());
        el("anonymization", &self.anonymization);
        el("start", &self.start);
        el("end", &self.end);
        el("packets", &self.packets.to_string());
        if let Some(n) = self.flow_records {
            el("flow_records", &n.to_string());
        }
        el("recovered", &self.recovered.to_string());
        el("bytes", &self.bytes.to_string());
        el("dropped_by_us", &self.dropped_by_us.to_string());
        el("kernel_drops", &self.kernel_drops.to_string());
        el("config", &self.config.to_string());
        x.push_str("</capture_file>\n");
        x
    }

    /// Writes `<file>.json` and `<file>.xml` (mode 0600) beside `file`.
    pub fn write_beside(&self, file: &Path) -> std::io::Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        // `.json` last: its presence marks the file closed (crash recovery),
        // so it appears only when both documents are complete. Each is
        // written to a hidden temporary name, synced and renamed, so a
        // crash never leaves a partial document under the final name.
        for (ext, body) in [("xml", self.to_xml()), ("json", self.to_json())] {
            let mut p = file.as_os_str().to_owned();
            p.push(".");
            p.push(ext);
            let p = PathBuf::from(p);
            crate::atomic::write(&p, body.as_bytes())?;
            out.push(p);
        }
        out.reverse();
        Ok(out)
    }
}
