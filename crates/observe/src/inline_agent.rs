//! The in-line agent on the veth path, as `streamgauge inline source` and
//! `inline sink --collect` run it: the source on the sender's interface
//! inserts the options into one packet in N of the UDP flow, the sink on
//! the receiver's interface removes them, and every record it reads goes
//! through the client into a measurement stream (a file, deleted with the
//! run's temporary directory) and the per-flow summaries.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use client::Client;
use inline::{netns, Agent, Counter, LoadOptions, Role, Settings, Streams, Summaries};

use crate::plan::InlineMode;
use crate::udp;
use crate::veth::{Pair, RX_ADDR, RX_IF, TX_IF};

/// Source and sink attached for one run; detached by [`Attached::stop`]
/// (or, on an error path, by the agents' drop).
pub struct Attached {
    source: Agent,
    sink: Agent,
    client: Client,
    records: Arc<AtomicU64>,
    summaries: Arc<Mutex<Summaries>>,
}

/// Attaches source and sink measuring one packet in `one_in` with `mode`;
/// records are reported to `report` (an --oml-collect URI).
pub fn start(pair: &Pair, one_in: u32, mode: InlineMode, report: &str) -> Result<Attached> {
    let mut settings = Settings::default();
    let dst = format!("dst={RX_ADDR}");
    let mode = format!("mode={}", mode.setting());
    let sample = format!("sample={one_in}");
    settings.set_all([dst.as_str(), "proto=udp", mode.as_str(), sample.as_str()])?;
    let client = udp::new_client(report, "inline-sink", &[])?;
    let streams = Streams::declare(&client)?;
    client
        .start()
        .with_context(|| format!("connecting to {report}"))?;
    let s = settings.clone();
    let source = netns::run_in(&pair.tx.name, move || {
        Agent::start(TX_IF, Role::Source, &s, LoadOptions::default())
    })?
    .context("attaching the in-line source")?;
    let mut sink = netns::run_in(&pair.rx.name, move || {
        Agent::start(RX_IF, Role::Sink, &settings, LoadOptions::default())
    })?
    .context("attaching the in-line sink")?;
    let records = Arc::new(AtomicU64::new(0));
    let summaries = Arc::new(Mutex::new(Summaries::default()));
    {
        let (records, summaries) = (Arc::clone(&records), Arc::clone(&summaries));
        sink.read_records(move |m| {
            records.fetch_add(1, Ordering::Relaxed);
            summaries
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .observe(&m);
            if let Err(e) = streams.record(&m) {
                tracing::warn!(error = %e, "inline record inject failed");
            }
        })?;
    }
    Ok(Attached {
        source,
        sink,
        client,
        records,
        summaries,
    })
}

impl Attached {
    /// Drains the records, detaches both programs and returns what they
    /// counted: (metric, value) pairs for tools.csv.
    pub fn stop(self) -> Result<Vec<(&'static str, f64)>> {
        // Let the record thread read what is queued.
        std::thread::sleep(inline::POLL_INTERVAL * 3);
        let src = self.source.counters()?;
        let sink = self.sink.counters()?;
        self.sink.stop().context("detaching the in-line sink")?;
        self.source.stop().context("detaching the in-line source")?;
        self.client
            .close()
            .context("closing the in-line sink's client")?;
        let flows = self
            .summaries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let lost: i64 = flows.iter().map(|f| f.lost).sum();
        Ok(vec![
            ("source_matched", src.get(Counter::SrcMatched) as f64),
            (
                "source_instrumented",
                src.get(Counter::SrcInstrumented) as f64,
            ),
            ("source_errors", src.get(Counter::SrcError) as f64),
            ("sink_marked", sink.get(Counter::SinkMarked) as f64),
            ("sink_ring_drops", sink.get(Counter::SinkRingDrops) as f64),
            ("records_read", self.records.load(Ordering::Relaxed) as f64),
            ("flow_lost", lost as f64),
        ])
    }
}
