//! A session's flow outputs: one flow table per IPFIX output, its exporter,
//! the statistics of an IPFIX file (for its metadata when it closes), and
//! the optional [`FlowSink`] that receives every flow record as well (the
//! daemon turns them into the measurement stream `capture_flow`).

use crate::flow::{FlowConfig, FlowRecord, FlowTable};
use crate::ipfix::{ExportError, Exporter, IpfixTarget, TimeResolution};
use crate::output::ClosedFile;
use crate::packet::Parsed;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Flow records of one session leaving one of its IPFIX outputs.
#[derive(Debug, Clone)]
pub struct FlowBatch {
    /// Session name.
    pub session: String,
    /// IPFIX observation domain of the output that metered them (tells
    /// two IPFIX outputs of one session apart).
    pub domain: u32,
    /// The records, as exported (addresses anonymised when the session anonymises).
    pub records: Vec<FlowRecord>,
}

/// Receives every flow record a session meters, beside its IPFIX export.
///
/// A callback rather than a channel so the node decides what a batch
/// becomes (the daemon adds the experiment and queues a stream row); it is
/// called on the packet path and must not block.
#[derive(Clone)]
pub struct FlowSink(Arc<dyn Fn(FlowBatch) + Send + Sync>);

impl FlowSink {
    /// Wraps a callback.
    pub fn new(f: impl Fn(FlowBatch) + Send + Sync + 'static) -> FlowSink {
        FlowSink(Arc::new(f))
    }

    /// Hands a batch over.
    pub fn send(&self, b: FlowBatch) {
        (self.0)(b)
    }
}

impl std::fmt::Debug for FlowSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FlowSink")
    }
}

/// What an IPFIX file holds so far (for its metadata).
#[derive(Debug, Clone, Copy, Default)]
struct FileStats {
    /// Flow records written.
    records: u64,
    /// Packets of those records (both directions).
    packets: u64,
    /// Earliest flow start (ns), 0 before the first record.
    first_ns: u64,
    /// Latest flow end (ns).
    last_ns: u64,
}

/// One IPFIX output of a session.
pub(crate) struct FlowOutput {
    /// Live flows.
    table: FlowTable,
    /// Where records go.
    exporter: Exporter,
    /// Observation domain (also in stream rows).
    domain: u32,
    /// The IPFIX file, for file targets (closed and handed off at stop).
    file: Option<PathBuf>,
    /// Contents of the file so far.
    stats: FileStats,
    /// Hold records that expire between ticks until the next tick (set
    /// when the session keeps a flow checkpoint: records leave only at a
    /// tick, in step with the checkpoint).
    defer: bool,
    /// Records expired since the last tick, when deferring.
    pending: Vec<FlowRecord>,
    /// File bytes known to be on stable storage (for the checkpoint).
    synced_bytes: u64,
}

/// A path beside `p` that is free together with its metadata names
/// (`<p>.json`, `<p>.xml`): `p` itself, else `stem.N.ext` with the smallest
/// free N. So a restarted session never truncates the IPFIX file of its
/// previous run, nor that run's metadata still waiting for the archive
/// after the file itself was uploaded and deleted.
pub fn free_path(p: &Path) -> PathBuf {
    let free = |c: &Path| {
        ["", ".json", ".xml"].iter().all(|m| {
            let mut name = c.as_os_str().to_owned();
            name.push(m);
            !Path::new(&name).exists()
        })
    };
    if free(p) {
        return p.to_path_buf();
    }
    let stem = p
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = p.extension().map(|e| e.to_string_lossy().into_owned());
    (1u32..)
        .map(|n| {
            let name = match &ext {
                Some(e) => format!("{stem}.{n}.{e}"),
                None => format!("{stem}.{n}"),
            };
            p.with_file_name(name)
        })
        .find(|c| free(c))
        .unwrap_or_else(|| p.to_path_buf())
}

impl FlowOutput {
    /// Opens the exporter; a file target is placed in `dir` (the session directory).
    pub fn open(
        target: &IpfixTarget,
        fc: FlowConfig,
        resolution: TimeResolution,
        domain: u32,
        dir: &Path,
    ) -> Result<FlowOutput, ExportError> {
        let (target, file) = match target {
            IpfixTarget::File { path } => {
                let p = free_path(&dir.join(path));
                (IpfixTarget::File { path: p.clone() }, Some(p))
            }
            t => (t.clone(), None),
        };
        Ok(FlowOutput {
            table: FlowTable::new(fc),
            exporter: Exporter::open(&target, domain, resolution, fc.biflow)?,
            domain,
            file,
            stats: FileStats::default(),
            defer: false,
            pending: Vec::new(),
            synced_bytes: 0,
        })
    }

    /// Holds expired records until the next tick from now on.
    pub fn defer_to_ticks(&mut self) {
        self.defer = true;
    }

    /// True for a file target (exported before the checkpoint).
    pub fn is_file(&self) -> bool {
        self.exporter.is_file()
    }

    /// Observation domain.
    pub fn domain(&self) -> u32 {
        self.domain
    }

    /// Puts flows of a checkpoint back into the table.
    pub fn restore(&mut self, flows: Vec<FlowRecord>) {
        self.table.restore(flows);
    }

    /// What changed since a checkpoint: (table changes, bytes sent).
    pub fn signature(&self) -> (u64, u64) {
        (self.table.changes(), self.exporter.sent_bytes())
    }

    /// Flushes the file and writes it to stable storage if it grew since
    /// the last time; returns its length.
    pub fn sync_file(&mut self) -> Result<u64, ExportError> {
        let len = self.exporter.sent_bytes();
        if self.file.is_some() && len != self.synced_bytes {
            self.exporter.sync_data()?;
            self.synced_bytes = len;
        }
        Ok(len)
    }

    /// This output as a checkpoint sees it: domain, file, file length, flows.
    pub fn state(
        &self,
    ) -> (
        u32,
        Option<&Path>,
        u64,
        impl ExactSizeIterator<Item = &FlowRecord>,
    ) {
        (
            self.domain,
            self.file.as_deref(),
            self.synced_bytes,
            self.table.active(),
        )
    }

    /// Records due at a tick: those held since the last one and those
    /// idle or active for too long at `now_ns`.
    pub fn take_due(&mut self, now_ns: u64) -> Vec<FlowRecord> {
        let mut due = std::mem::take(&mut self.pending);
        due.extend(self.table.expire(now_ns));
        due
    }

    /// Exports records (templates first when due, even with no record);
    /// the file statistics follow.
    pub fn export(&mut self, now_ns: u64, recs: &[FlowRecord]) -> Result<(), ExportError> {
        let r = self.exporter.export(now_ns, recs);
        if r.is_ok() && self.file.is_some() {
            let s = &mut self.stats;
            for f in recs {
                s.records += 1;
                s.packets += f.packets + f.rev_packets;
                s.first_ns = if s.first_ns == 0 {
                    f.start_ns
                } else {
                    s.first_ns.min(f.start_ns)
                };
                s.last_ns = s.last_ns.max(f.end_ns);
            }
        }
        r
    }

    /// Flushes buffered TCP/file output.
    pub fn flush(&mut self) -> Result<(), ExportError> {
        self.exporter.flush()
    }

    /// Hands records to the sink, if the node wants them.
    pub fn to_sink(&self, recs: Vec<FlowRecord>, out: &Emit<'_>) {
        if let (Some(sink), false) = (out.sink, recs.is_empty()) {
            sink.send(FlowBatch {
                session: out.session.to_string(),
                domain: self.domain,
                records: recs,
            });
        }
    }

    /// Meters one packet; exports the flows that expired. Returns how many
    /// records the exporter took.
    pub fn observe(
        &mut self,
        ts_ns: u64,
        p: &Parsed,
        frame: &[u8],
        wire_len: u32,
        out: &Emit<'_>,
    ) -> Result<u64, ExportError> {
        let expired = self.table.observe(ts_ns, p, frame, wire_len);
        if self.defer {
            self.pending.extend(expired);
            return Ok(0);
        }
        self.emit(ts_ns, expired, out)
    }

    /// Exports every flow (end of capture) and flushes.
    pub fn flush_all(&mut self, now_ns: u64, out: &Emit<'_>) -> Result<u64, ExportError> {
        let mut all = std::mem::take(&mut self.pending);
        all.extend(self.table.flush());
        let n = self.emit(now_ns, all, out)?;
        self.exporter.flush()?;
        Ok(n)
    }

    fn emit(
        &mut self,
        now_ns: u64,
        recs: Vec<FlowRecord>,
        out: &Emit<'_>,
    ) -> Result<u64, ExportError> {
        let r = self.export(now_ns, &recs);
        let n = recs.len() as u64;
        // The stream carries every metered record, whatever the IPFIX target did.
        self.to_sink(recs, out);
        r.map(|()| n)
    }

    /// Closes the IPFIX file (after [`FlowOutput::flush_all`]): synced,
    /// described as a [`ClosedFile`] whose `packets` are the packets its
    /// records count. `None` for network targets.
    pub fn close_file(&mut self) -> Result<Option<(ClosedFile, u64)>, ExportError> {
        let Some(path) = self.file.clone() else {
            return Ok(None);
        };
        self.exporter.sync()?;
        let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let s = self.stats;
        Ok(Some((
            ClosedFile {
                path,
                seq: 0,
                bytes,
                packets: s.packets,
                first_ns: s.first_ns,
                last_ns: s.last_ns,
            },
            s.records,
        )))
    }
}

/// Where emitted records go besides the exporter.
pub(crate) struct Emit<'a> {
    /// Session name for the batch.
    pub session: &'a str,
    /// The sink, if the node wants the records.
    pub sink: Option<&'a FlowSink>,
}

#[cfg(test)]
mod tests {
    use super::free_path;

    #[test]
    fn free_path_skips_names_whose_metadata_is_still_there() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("flows.ipfix");
        assert_eq!(free_path(&p), p);
        // the file was archived and deleted, its metadata not yet
        std::fs::write(t.path().join("flows.ipfix.xml"), b"<x/>").unwrap();
        assert_eq!(free_path(&p), t.path().join("flows.1.ipfix"));
        std::fs::write(t.path().join("flows.1.ipfix"), b"").unwrap();
        assert_eq!(free_path(&p), t.path().join("flows.2.ipfix"));
    }
}
