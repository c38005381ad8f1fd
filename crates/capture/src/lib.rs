//! Passive capture pipeline of streamgauge (GIMS-like).
//!
//! A capture daemon reads each interface once and hands every frame to a
//! [`demux::Demux`], which evaluates each distinct filter once and runs the
//! frame through every matching [`session::Session`]:
//!
//! ```text
//! frame ─► filter (libpcap expression → cBPF, our interpreter)
//!       ─► sample (1-in-N, probability, flow hash)
//!       ─► cut (snap length, header-only)
//!       ─► anonymise (Crypto-PAn, checksum fix-ups)
//!       ─► flows ─► IPFIX (UDP/TCP/file)
//!       ─► zero unselected header fields ─► pcap/pcapng rolling files ─► closed-file channel
//!       ─► counters
//! ```
//!
//! Nothing here owns a thread or a timer: the caller feeds frames with
//! timestamps and calls `tick`/`stop`; the same code runs live and over a
//! file ([`offline::run_file`]).
//!
//! ```
//! use capture::config::SessionConfig;
//! use capture::session::{Session, SessionEnv};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let cfg = SessionConfig::from_json(r#"{
//!     "name": "dns", "filter": "udp port 53", "header_only": true,
//!     "outputs": [{"type": "pcap"}]
//! }"#).unwrap();
//! let env = SessionEnv { data_dir: dir.path().into(), source: "eth0".into(), key: None, closed: None, flows: None };
//! let mut s = Session::new(cfg, &env).unwrap();
//! let mut frame = vec![0u8; 12];
//! frame.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 29, 0, 0, 0, 0, 64, 17, 0, 0,
//!     10, 0, 0, 1, 10, 0, 0, 2, 0x30, 0x39, 0, 53, 0, 9, 0, 0, b'x']);
//! s.process(1_700_000_000_000_000_000, &frame);
//! let c = s.stop(1_700_000_001_000_000_000).unwrap();
//! assert_eq!((c.matched, c.stored), (1, 1));
//! ```
#![deny(missing_docs)]

pub mod anon;
pub mod atomic;
pub mod bpf;
pub mod checkpoint;
pub mod checksum;
pub mod config;
pub mod counters;
pub mod cryptopan;
pub mod cut;
pub mod daemon;
pub mod demux;
pub mod filter;
pub mod fixup;
pub mod flow;
pub mod flowout;
pub mod ipfix;
pub mod linktype;
pub mod metadata;
pub mod offline;
pub mod offline_files;
pub mod output;
pub mod packet;
pub mod policy;
pub mod sample;
pub mod session;
pub mod source;
pub mod text;
mod timefmt;

pub use config::SessionConfig;
pub use counters::Counters;
pub use cryptopan::{CryptoPan, Key};
pub use demux::Demux;
pub use linktype::{LinkType, LinkTypeError};
pub use offline::run_file;
pub use policy::{NodePolicy, PolicyRefusal};
pub use session::{ClosedOutput, Session, SessionEnv};
pub use text::anonymize_text;
