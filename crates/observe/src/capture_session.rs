//! A capture session on the receiving interface, driven as the capture
//! daemon drives one: an AF_PACKET ring (opened inside the receiver's
//! namespace) feeding the demultiplexer and the session, with the periodic
//! tick; its files go to the run's temporary directory.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{anyhow, Context, Result};
use capture::source::{AfPacket, AfPacketConfig};
use capture::{Demux, Key, Session, SessionConfig, SessionEnv};

use crate::plan::Capture;
use crate::veth::{Pair, RX_IF};

/// How often the sessions get their periodic work, as in the daemon.
const TICK: Duration = Duration::from_millis(250);

/// The session of a level, as the daemon's control API would receive it.
fn config(level: Capture) -> Option<&'static str> {
    match level {
        Capture::Off => None,
        Capture::Header => {
            Some(r#"{"name":"header","snaplen":64,"header_only":true,"outputs":[{"type":"pcap"}]}"#)
        }
        Capture::AnonFlows => Some(
            r#"{"name":"anon","snaplen":128,"header_only":true,"anonymization":{"key":"observe"},
            "outputs":[{"type":"pcap"},{"type":"ipfix","target":{"transport":"file","path":"flows.ipfix"}}]}"#,
        ),
    }
}

/// What the capture thread counted.
struct Counts {
    captured: u64,
    kernel_drops: u64,
    our_drops: u64,
    flows: u64,
}

/// A capture running for one run.
pub struct Running {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<Counts>>,
    dir: PathBuf,
}

/// Starts the session of `level` (None for `off`); returns once its
/// packet socket is open, so no packet of the run is missed.
pub fn start(pair: &Pair, level: Capture, dir: &Path) -> Result<Option<Running>> {
    let Some(json) = config(level) else {
        return Ok(None);
    };
    let cfg = SessionConfig::from_json(json).context("capture session configuration")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let env = SessionEnv {
        data_dir: dir.to_owned(),
        source: RX_IF.into(),
        // Any fixed key: the anonymised files are deleted after the run.
        key: Some(Key::from_bytes([18; 32])),
        closed: None,
        flows: None,
    };
    let mut demux = Demux::new();
    demux.add(Session::new(cfg, &env).context("starting the capture session")?);
    let stop = Arc::new(AtomicBool::new(false));
    let ns = pair.rx.try_clone()?;
    let (ready_tx, ready_rx) = mpsc::channel();
    let thread = {
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("sg-observe-capture".into())
            .spawn(move || -> Result<Counts> {
                let opened = ns.enter().and_then(|()| {
                    AfPacket::open(AfPacketConfig::new(RX_IF))
                        .map_err(|e| anyhow!("opening AF_PACKET on {RX_IF}: {e}"))
                });
                let _ = ready_tx.send(opened.as_ref().err().map(|e| format!("{e:#}")));
                let mut src = opened?;
                let mut last_tick = Instant::now();
                while !stop.load(Ordering::Acquire) {
                    src.next_block(20, |ts, f, len| demux.process(ts, f, len))?;
                    if last_tick.elapsed() >= TICK {
                        last_tick = Instant::now();
                        for (name, e) in demux.tick(now_ns()) {
                            tracing::warn!(session = %name, error = %e, "capture tick failed");
                        }
                    }
                }
                // What is left in the ring.
                while src.next_block(0, |ts, f, len| demux.process(ts, f, len))? > 0 {}
                let kernel_drops = src.stats().map(|s| s.drops).unwrap_or(0);
                let captured = demux.packets();
                let (mut our_drops, mut flows) = (0, 0);
                for (name, r) in demux.stop_all(now_ns()) {
                    let c = r.with_context(|| format!("stopping capture session {name}"))?;
                    our_drops += c.dropped_by_us;
                    flows += c.flows_exported;
                }
                Ok(Counts {
                    captured,
                    kernel_drops,
                    our_drops,
                    flows,
                })
            })?
    };
    if let Some(e) = ready_rx.recv().context("the capture thread ended")? {
        let _ = thread.join();
        return Err(anyhow!(e));
    }
    Ok(Some(Running {
        stop,
        thread,
        dir: dir.to_owned(),
    }))
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Bytes of every file under `dir`.
fn bytes_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => bytes_under(&e.path()),
            _ => e.metadata().map(|m| m.len()).unwrap_or(0),
        })
        .sum()
}

impl Running {
    /// Stops the session (closing its files) and returns what it counted:
    /// (metric, value) pairs for tools.csv.
    pub fn stop(self) -> Result<Vec<(&'static str, f64)>> {
        self.stop.store(true, Ordering::Release);
        let c = self
            .thread
            .join()
            .map_err(|_| anyhow!("the capture thread panicked"))??;
        Ok(vec![
            ("captured", c.captured as f64),
            ("kernel_drops", c.kernel_drops as f64),
            ("our_drops", c.our_drops as f64),
            ("flows_exported", c.flows as f64),
            ("bytes_written", bytes_under(&self.dir) as f64),
        ])
    }
}
