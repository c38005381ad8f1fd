//! One capture session: filter → sample → cut → anonymise → flows → zero
//! fields → files, with counters.
//!
//! Unselected fields are zeroed *after* anonymisation, so a zeroed address
//! stays zero; flows are metered on the anonymised headers, so exported
//! flow records never carry clear addresses when anonymisation is on.

use crate::anon::{anonymize_frame, AddrFields};
use crate::checkpoint::{Checkpoint, CheckpointError, Checkpointer};
use crate::config::{OutputConfig, SessionConfig};
use crate::counters::Counters;
use crate::cryptopan::{CryptoPan, Key};
use crate::cut::{Cutter, Field, FieldSet};
use crate::filter::{Filter, FilterError};
use crate::flowout::{Emit, FlowOutput};
pub use crate::flowout::{FlowBatch, FlowSink};
use crate::ipfix::ExportError;
use crate::linktype::LinkType;
use crate::metadata::FileMetadata;
use crate::output::{ClosedFile, RotatingWriter, WriteError, WriterConfig, Written};
use crate::packet::Parsed;
use crate::sample::Sampler;
use std::fs::DirBuilder;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::sync::mpsc::Sender;

/// A closed packet or IPFIX file with its metadata documents, for the archive uploader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosedOutput {
    /// Session name.
    pub session: String,
    /// The packet file, or the IPFIX file (then `packets` counts the
    /// packets of its flow records).
    pub file: ClosedFile,
    /// The `.json` and `.xml` metadata files written beside it.
    pub metadata: Vec<PathBuf>,
}

/// What the node provides to a session (resolved outside the config).
#[derive(Debug, Clone)]
pub struct SessionEnv {
    /// Base directory; the session's files go into `data_dir/<name>/`.
    pub data_dir: PathBuf,
    /// Interface name or input file, recorded in pcapng and metadata.
    pub source: String,
    /// The anonymisation key named by the config (resolved by the node).
    pub key: Option<Key>,
    /// Receives every closed file (the archive uploader).
    pub closed: Option<Sender<ClosedOutput>>,
    /// Receives every flow record of the session's IPFIX outputs (the
    /// daemon's `capture_flow` stream).
    pub flows: Option<FlowSink>,
}

/// Why a session could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The filter does not compile.
    #[error(transparent)]
    Filter(#[from] FilterError),
    /// Anonymisation configured but the node supplied no key.
    #[error("session {session}: anonymisation key {key:?} not available")]
    MissingKey {
        /// Session name.
        session: String,
        /// Key name.
        key: String,
    },
    /// A packet file failed.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// An IPFIX exporter failed.
    #[error(transparent)]
    Export(#[from] ExportError),
    /// Writing a metadata document or creating the session directory failed.
    #[error("{path}: {source}")]
    Metadata {
        /// The file or directory.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// A running session.
pub struct Session {
    /// The validated configuration.
    cfg: SessionConfig,
    /// Compiled filter.
    filter: Filter,
    /// Sampling state.
    sampler: Sampler,
    /// Cut/zero stage.
    cutter: Cutter,
    /// Crypto-PAn state and the fields to rewrite.
    anon: Option<(CryptoPan, AddrFields)>,
    /// Packet file output.
    writer: Option<RotatingWriter>,
    /// IPFIX outputs.
    flows: Vec<FlowOutput>,
    /// Counters since start.
    counters: Counters,
    /// Work buffer for the cut frame.
    scratch: Vec<u8>,
    /// Source name for metadata.
    source: String,
    /// Closed-file hand-off.
    closed_tx: Option<Sender<ClosedOutput>>,
    /// Flow records to the node, beside IPFIX.
    flow_sink: Option<FlowSink>,
    /// Packet time when the next counter snapshot is due.
    next_snapshot_ns: Option<u64>,
    /// Errors already logged (one warning per kind, then counted).
    warned: bool,
    /// The flow checkpoint written at every tick, when the node keeps one.
    checkpoint: Option<Checkpointer>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("name", &self.cfg.name)
            .field("counters", &self.counters)
            .finish()
    }
}

impl Session {
    /// Validates `cfg` and builds the live stages (creates directories,
    /// opens exporters) for an Ethernet source.
    pub fn new(cfg: SessionConfig, env: &SessionEnv) -> Result<Session, SessionError> {
        Session::new_for(cfg, env, LinkType::Ethernet)
    }

    /// Validates `cfg` and builds the live stages for a source of link
    /// type `link`: the filter is compiled for it, frames are parsed as
    /// it, and packet files carry it.
    pub fn new_for(
        cfg: SessionConfig,
        env: &SessionEnv,
        link: LinkType,
    ) -> Result<Session, SessionError> {
        let filter = Filter::compile_for(&cfg.filter_expression()?, link)?;
        Session::with_filter(cfg, env, filter)
    }

    /// Builds a session around a filter compiled for the source (by
    /// [`Filter::compile_for`] or, for a file, [`Filter::compile_on`] its
    /// handle); the filter's link type is the source's.
    pub fn with_filter(
        cfg: SessionConfig,
        env: &SessionEnv,
        filter: Filter,
    ) -> Result<Session, SessionError> {
        cfg.validate_values()?;
        let link = filter.link();
        let anon = match &cfg.anonymization {
            None => None,
            Some(a) => {
                let key = env.key.as_ref().ok_or_else(|| SessionError::MissingKey {
                    session: cfg.name.clone(),
                    key: a.key.clone(),
                })?;
                Some((CryptoPan::new(key), a.fields))
            }
        };
        let fields = match &cfg.fields {
            None => FieldSet::ALL,
            Some(f) => f.iter().copied().collect(),
        };
        let mut writer = None;
        let mut flows = Vec::new();
        for o in &cfg.outputs {
            if let Some(format) = o.file_format() {
                writer = Some(RotatingWriter::new(WriterConfig {
                    dir: env.data_dir.join(&cfg.name),
                    session: cfg.name.clone(),
                    format,
                    snaplen: cfg.snaplen,
                    linktype: link.number(),
                    interface: env.source.clone(),
                    rollover: cfg.rollover,
                    quota: cfg.quota,
                })?);
            }
            if let OutputConfig::Ipfix {
                target,
                flows: fc,
                resolution,
                domain,
            } = o
            {
                // IPFIX files live in the session directory (validated relative path).
                let dir = env.data_dir.join(&cfg.name);
                if matches!(target, crate::ipfix::IpfixTarget::File { .. }) {
                    DirBuilder::new()
                        .recursive(true)
                        .mode(0o700)
                        .create(&dir)
                        .map_err(|source| SessionError::Metadata {
                            path: dir.display().to_string(),
                            source,
                        })?;
                }
                flows.push(FlowOutput::open(target, *fc, *resolution, *domain, &dir)?);
            }
        }
        Ok(Session {
            sampler: Sampler::new(cfg.sampling),
            cutter: Cutter {
                snaplen: cfg.snaplen,
                header_only: cfg.header_only,
                fields,
            },
            filter,
            anon,
            writer,
            flows,
            counters: Counters::default(),
            scratch: Vec::with_capacity(2048),
            source: env.source.clone(),
            closed_tx: env.closed.clone(),
            flow_sink: env.flows.clone(),
            next_snapshot_ns: None,
            warned: false,
            checkpoint: None,
            cfg,
        })
    }

    /// Keeps a checkpoint of the active flows at `path` from now on,
    /// rewritten at every tick (see [`crate::checkpoint`]). The flows of a
    /// checkpoint already there — this session's previous run, ended by a
    /// crash — go back into the flow tables first (output by output, when
    /// the observation domains match); a damaged one is renamed to
    /// `<path>.bad` and logged. Returns the number of flows restored.
    /// Without IPFIX outputs nothing is kept (and a stale file removed).
    pub fn keep_flow_checkpoint(&mut self, path: PathBuf) -> Result<usize, CheckpointError> {
        if self.flows.is_empty() {
            crate::checkpoint::remove(&path)?;
            return Ok(0);
        }
        let found = match Checkpoint::read(&path) {
            Ok(c) => c.unwrap_or_default(),
            Err(e) => {
                let mut bad = path.as_os_str().to_owned();
                bad.push(".bad");
                let _ = std::fs::rename(&path, &bad);
                tracing::warn!(session = %self.cfg.name, error = %e, "flow checkpoint not restored (kept as .bad)");
                Checkpoint::default()
            }
        };
        let mut restored = 0;
        for (fo, o) in self.flows.iter_mut().zip(found.outputs) {
            if fo.domain() == o.domain {
                restored += o.flows.len();
                fo.restore(o.flows);
            }
        }
        for fo in &mut self.flows {
            fo.defer_to_ticks();
        }
        // At once: the old checkpoint names the old file, which is closed now.
        let mut ck = Checkpointer::new(path);
        self.write_checkpoint(&mut ck)?;
        self.checkpoint = Some(ck);
        Ok(restored)
    }

    fn write_checkpoint(&mut self, ck: &mut Checkpointer) -> Result<(), CheckpointError> {
        let sig: Vec<(u64, u64)> = self.flows.iter().map(|f| f.signature()).collect();
        if !ck.due(&sig) {
            return Ok(());
        }
        for fo in &mut self.flows {
            fo.sync_file().map_err(|e| CheckpointError::Io {
                path: ck.path.display().to_string(),
                source: std::io::Error::other(e),
            })?;
        }
        ck.write(sig, self.flows.iter().map(|f| f.state()))
    }

    /// The configuration.
    pub fn config(&self) -> &SessionConfig {
        &self.cfg
    }

    /// The compiled filter.
    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    /// The link type of the source the session was built for.
    pub fn link(&self) -> LinkType {
        self.filter.link()
    }

    /// Counters since start.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Sets the kernel drop counter of the shared source.
    pub fn set_kernel_drops(&mut self, n: u64) {
        self.counters.kernel_drops = n;
    }

    /// Returns a snapshot when a counter interval has elapsed at `now_ns`.
    pub fn poll_counters(&mut self, now_ns: u64) -> Option<Counters> {
        let step = self.cfg.counter_interval_s * 1_000_000_000;
        let due = *self.next_snapshot_ns.get_or_insert(now_ns + step);
        if now_ns >= due {
            self.next_snapshot_ns = Some(due + step * ((now_ns - due) / step + 1));
            Some(self.counters)
        } else {
            None
        }
    }

    /// Runs a frame (captured bytes = wire bytes) through the session.
    pub fn process(&mut self, ts_ns: u64, frame: &[u8]) {
        self.process_with_len(ts_ns, frame, frame.len() as u32);
    }

    /// Runs a frame whose wire length may exceed the captured bytes.
    pub fn process_with_len(&mut self, ts_ns: u64, frame: &[u8], wire_len: u32) {
        self.count_seen();
        if !self.filter.matches(frame, wire_len) {
            return;
        }
        let p = Parsed::parse(self.filter.link(), frame);
        self.process_matched(ts_ns, frame, wire_len, &p);
    }

    /// Counts a packet offered to the session (done by the demux for every packet).
    pub fn count_seen(&mut self) {
        self.counters.seen += 1;
    }

    /// Runs a frame that already passed this session's filter (the demux
    /// evaluates shared filters once and calls [`Session::count_seen`]).
    /// Counts `matched`.
    pub fn process_matched(&mut self, ts_ns: u64, frame: &[u8], wire_len: u32, p: &Parsed) {
        self.counters.matched += 1;
        if !self.sampler.keep(p, frame) {
            self.counters.sampled_out += 1;
            return;
        }
        self.counters.stored += 1;
        self.counters.bytes += u64::from(wire_len);
        let n = self.cutter.keep_len(p, frame.len());
        self.scratch.clear();
        self.scratch.extend_from_slice(&frame[..n]);
        if let Some((cp, fields)) = &mut self.anon {
            anonymize_frame(cp, *fields, p, &mut self.scratch);
        }
        let emit = Emit {
            session: &self.cfg.name,
            sink: self.flow_sink.as_ref(),
        };
        for fo in &mut self.flows {
            let r = fo.observe(ts_ns, p, &self.scratch, wire_len, &emit);
            Self::after_export(&mut self.counters, &mut self.warned, &self.cfg.name, r);
        }
        self.cutter.zero_fields(p, &mut self.scratch);
        // Checksums verify after the rewrites exactly when the original's
        // did, unless the field selection zeroed them.
        if (self.anon.is_some() || self.cutter.fields != FieldSet::ALL)
            && self.cutter.fields.has(Field::Checksums)
        {
            crate::fixup::refresh(p, frame, &mut self.scratch);
        }
        if let Some(w) = &mut self.writer {
            match w.write(ts_ns, &self.scratch, wire_len) {
                Ok(Written::Stored) => {}
                Ok(Written::QuotaFull) => self.counters.dropped_by_us += 1,
                Err(e) => {
                    self.counters.dropped_by_us += 1;
                    if !self.warned {
                        self.warned = true;
                        tracing::warn!(session = %self.cfg.name, error = %e, "packet file write failed");
                    }
                }
            }
            self.counters.written = w.bytes_written();
            self.hand_off_closed();
        }
    }

    fn after_export(c: &mut Counters, warned: &mut bool, name: &str, r: Result<u64, ExportError>) {
        match r {
            Ok(n) => c.flows_exported += n,
            Err(e) => {
                if !*warned {
                    *warned = true;
                    tracing::warn!(session = %name, error = %e, "IPFIX export failed");
                }
            }
        }
    }

    /// Periodic work without packets: idle flow expiry, time rollover,
    /// the flow checkpoint. Records for IPFIX files are written before
    /// the checkpoint, records for collectors and the sink leave after it,
    /// so a crash never counts a packet twice.
    pub fn tick(&mut self, now_ns: u64) -> Result<(), SessionError> {
        let mut due = Vec::with_capacity(self.flows.len());
        for fo in &mut self.flows {
            let recs = fo.take_due(now_ns);
            if fo.is_file() {
                fo.export(now_ns, &recs)?;
                fo.flush()?;
            }
            due.push(recs);
        }
        if let Some(mut ck) = self.checkpoint.take() {
            match self.write_checkpoint(&mut ck) {
                Ok(()) => ck.warned = false,
                Err(e) if !ck.warned => {
                    ck.warned = true;
                    tracing::warn!(session = %self.cfg.name, error = %e, "flow checkpoint failed");
                }
                Err(_) => {}
            }
            self.checkpoint = Some(ck);
        }
        let emit = Emit {
            session: &self.cfg.name,
            sink: self.flow_sink.as_ref(),
        };
        for (fo, recs) in self.flows.iter_mut().zip(due) {
            if !fo.is_file() {
                let r = fo.export(now_ns, &recs);
                fo.flush()?;
                r?;
            }
            self.counters.flows_exported += recs.len() as u64;
            fo.to_sink(recs, &emit);
        }
        if let Some(w) = &mut self.writer {
            w.tick(now_ns)?;
            // Bound what a crash can lose to one tick's worth of records.
            w.flush()?;
        }
        self.hand_off_closed();
        Ok(())
    }

    fn hand_off_closed(&mut self) {
        let Some(w) = &mut self.writer else { return };
        for f in w.take_closed() {
            if !f.path.exists() {
                // Closed and deleted at once by the delete_oldest quota policy.
                continue;
            }
            self.hand_off(f, None);
        }
    }

    /// Writes the metadata of a closed file beside it and hands both to
    /// the archive channel; `flow_records` for IPFIX files.
    fn hand_off(&self, f: ClosedFile, flow_records: Option<u64>) {
        let filter = self.filter.expression().to_string();
        let mut md = FileMetadata::new(&self.cfg, &filter, &self.source, &f, &self.counters);
        if flow_records.is_some() {
            md.format = "ipfix".into();
            md.flow_records = flow_records;
        } else {
            md.linktype = Some(self.link().number());
        }
        let metadata = match md.write_beside(&f.path) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(session = %self.cfg.name, file = %f.path.display(), error = %e, "metadata write failed");
                Vec::new()
            }
        };
        if let Some(tx) = &self.closed_tx {
            let _ = tx.send(ClosedOutput {
                session: self.cfg.name.clone(),
                file: f,
                metadata,
            });
        }
    }

    /// Stops the session: exports every flow, closes files (metadata
    /// written, files handed off) and returns the final counters.
    pub fn stop(&mut self, now_ns: u64) -> Result<Counters, SessionError> {
        let emit = Emit {
            session: &self.cfg.name,
            sink: self.flow_sink.as_ref(),
        };
        let mut ipfix_files = Vec::new();
        for fo in &mut self.flows {
            self.counters.flows_exported += fo.flush_all(now_ns, &emit)?;
            ipfix_files.extend(fo.close_file()?);
        }
        // Every flow is in its file now: the checkpoint goes before the
        // files get their metadata (a crash in between repairs the files
        // and restores nothing).
        if let Some(ck) = self.checkpoint.take() {
            if let Err(e) = crate::checkpoint::remove(&ck.path) {
                tracing::warn!(session = %self.cfg.name, error = %e, "flow checkpoint not removed");
            }
        }
        if let Some(w) = &mut self.writer {
            w.close()?;
            self.counters.written = w.bytes_written();
        }
        self.hand_off_closed();
        for (f, records) in ipfix_files {
            self.hand_off(f, Some(records));
        }
        Ok(self.counters)
    }
}
