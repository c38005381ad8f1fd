//! IPFIX exporters: UDP (templates refreshed periodically), TCP and file
//! (templates once at the start; an IPFIX file is concatenated messages,
//! RFC 5655).

use super::encode::{Encoder, TimeResolution};
use crate::flow::FlowRecord;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

/// Where IPFIX messages go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "transport", rename_all = "lowercase", deny_unknown_fields)]
pub enum IpfixTarget {
    /// UDP to a collector.
    Udp {
        /// Collector address.
        collector: SocketAddr,
        /// Seconds between template retransmissions (RFC 7011 §8.4).
        #[serde(default = "default_refresh")]
        template_refresh_s: u64,
    },
    /// TCP to a collector.
    Tcp {
        /// Collector address.
        collector: SocketAddr,
    },
    /// An IPFIX file (created 0600).
    File {
        /// File path; in a session, relative to the session directory.
        path: PathBuf,
    },
}

fn default_refresh() -> u64 {
    60
}

/// Why exporting failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Opening the socket or file failed.
    #[error("open IPFIX {target}: {source}")]
    Open {
        /// The target, as text.
        target: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Sending or writing failed.
    #[error("send IPFIX to {target}: {source}")]
    Send {
        /// The target, as text.
        target: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

enum Sink {
    Udp(UdpSocket, SocketAddr),
    Tcp(BufWriter<TcpStream>),
    File(BufWriter<File>),
}

/// Largest UDP message (fits a 1500-byte MTU with IPv6 and UDP headers).
pub const UDP_MAX_MESSAGE: usize = 1400;

/// Sends flow records as IPFIX.
pub struct Exporter {
    /// The message encoder (owns the sequence number).
    enc: Encoder,
    /// The transport.
    sink: Sink,
    /// Target text for errors and logs.
    target: String,
    /// Biflow templates for data records.
    biflow: bool,
    /// UDP template refresh interval; `None` sends templates once.
    refresh_ns: Option<u64>,
    /// When templates were last sent (export time, ns).
    templates_sent_ns: Option<u64>,
    /// Data records sent.
    exported: u64,
    /// Message bytes handed to the transport (for a file: its length once flushed).
    sent_bytes: u64,
}

impl Exporter {
    /// Opens the target.
    pub fn open(
        target: &IpfixTarget,
        domain: u32,
        resolution: TimeResolution,
        biflow: bool,
    ) -> Result<Exporter, ExportError> {
        let text = match target {
            IpfixTarget::Udp { collector, .. } => format!("udp://{collector}"),
            IpfixTarget::Tcp { collector } => format!("tcp://{collector}"),
            IpfixTarget::File { path } => path.display().to_string(),
        };
        let open_err = |source| ExportError::Open {
            target: text.clone(),
            source,
        };
        let (sink, max, refresh_ns) = match target {
            IpfixTarget::Udp {
                collector,
                template_refresh_s,
            } => {
                let bind: SocketAddr = if collector.is_ipv4() {
                    "0.0.0.0:0".parse().expect("literal")
                } else {
                    "[::]:0".parse().expect("literal")
                };
                let s = UdpSocket::bind(bind).map_err(open_err)?;
                (
                    Sink::Udp(s, *collector),
                    UDP_MAX_MESSAGE,
                    Some(template_refresh_s.max(&1) * 1_000_000_000),
                )
            }
            IpfixTarget::Tcp { collector } => {
                let s = TcpStream::connect(collector).map_err(open_err)?;
                (Sink::Tcp(BufWriter::new(s)), 65535, None)
            }
            IpfixTarget::File { path } => {
                let f = OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .mode(0o600)
                    .open(path)
                    .map_err(open_err)?;
                (Sink::File(BufWriter::new(f)), 65535, None)
            }
        };
        Ok(Exporter {
            enc: Encoder::new(domain, max, resolution),
            sink,
            target: text,
            biflow,
            refresh_ns,
            templates_sent_ns: None,
            exported: 0,
            sent_bytes: 0,
        })
    }

    /// Data records sent so far.
    pub fn exported(&self) -> u64 {
        self.exported
    }

    /// Message bytes sent so far; for a file, its length after [`Exporter::flush`].
    pub fn sent_bytes(&self) -> u64 {
        self.sent_bytes
    }

    /// True for a file target.
    pub fn is_file(&self) -> bool {
        matches!(self.sink, Sink::File(_))
    }

    fn send(&mut self, m: &[u8]) -> Result<(), ExportError> {
        let r = match &mut self.sink {
            Sink::Udp(s, to) => s.send_to(m, *to).map(|_| ()),
            Sink::Tcp(w) => w.write_all(m),
            Sink::File(w) => w.write_all(m),
        };
        if r.is_ok() {
            self.sent_bytes += m.len() as u64;
        }
        r.map_err(|source| ExportError::Send {
            target: self.target.clone(),
            source,
        })
    }

    /// Sends `records`, preceded by the templates when due.
    pub fn export(&mut self, now_ns: u64, records: &[FlowRecord]) -> Result<(), ExportError> {
        let export_s = (now_ns / 1_000_000_000) as u32;
        let due = match (self.templates_sent_ns, self.refresh_ns) {
            (None, _) => true,
            (Some(t), Some(r)) => now_ns.saturating_sub(t) >= r,
            (Some(_), None) => false,
        };
        if due {
            let t = self.enc.templates(export_s);
            self.send(&t)?;
            self.templates_sent_ns = Some(now_ns);
        }
        if records.is_empty() {
            return Ok(());
        }
        for m in self.enc.data(export_s, records, self.biflow) {
            self.send(&m)?;
        }
        self.exported += records.len() as u64;
        Ok(())
    }

    /// Flushes buffered TCP/file output.
    pub fn flush(&mut self) -> Result<(), ExportError> {
        let r = match &mut self.sink {
            Sink::Udp(..) => Ok(()),
            Sink::Tcp(w) => w.flush(),
            Sink::File(w) => w.flush(),
        };
        r.map_err(|source| ExportError::Send {
            target: self.target.clone(),
            source,
        })
    }
}

impl Exporter {
    /// Flushes and, for a file, writes it to stable storage (the file is
    /// complete when this returns; it is closed when the exporter drops).
    pub fn sync(&mut self) -> Result<(), ExportError> {
        self.flush()?;
        let r = match &mut self.sink {
            Sink::File(w) => w.get_ref().sync_all(),
            _ => Ok(()),
        };
        r.map_err(|source| ExportError::Send {
            target: self.target.clone(),
            source,
        })
    }

    /// Flushes and, for a file, writes its data to stable storage
    /// (`fdatasync`: what a checkpoint needs, without the metadata).
    pub fn sync_data(&mut self) -> Result<(), ExportError> {
        self.flush()?;
        let r = match &mut self.sink {
            Sink::File(w) => w.get_ref().sync_data(),
            _ => Ok(()),
        };
        r.map_err(|source| ExportError::Send {
            target: self.target.clone(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_templates_are_refreshed() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let target = IpfixTarget::Udp {
            collector: rx.local_addr().unwrap(),
            template_refresh_s: 60,
        };
        let mut e = Exporter::open(&target, 1, TimeResolution::Milliseconds, false).unwrap();
        let s = 1_000_000_000u64;
        for t in [0, 30, 61, 90, 121] {
            e.export(t * s, &[]).unwrap();
        }
        let mut templates = 0;
        let mut buf = [0u8; 2000];
        rx.set_nonblocking(true).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        while let Ok(n) = rx.recv(&mut buf) {
            assert_eq!(u16::from_be_bytes([buf[16], buf[17]]), 2, "template set");
            assert_eq!(u16::from_be_bytes([buf[2], buf[3]]) as usize, n);
            templates += 1;
        }
        assert_eq!(templates, 3, "at 0, 61 and 121 s");
    }
}
