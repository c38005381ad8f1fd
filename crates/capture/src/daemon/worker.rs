//! One packet source thread per interface: it owns the AF_PACKET ring and
//! the [`Demux`] of the sessions on that interface, reads each packet once,
//! and takes commands (add, pause, resume, stop) between blocks.
//!
//! Sessions never leave this thread while they run, so the packet path
//! takes no lock; the thread publishes counters and state changes into the
//! shared registry a few times a second.

use super::netns;
use super::registry::State;
use super::Shared;
use crate::counters::Counters;
use crate::demux::Demux;
use crate::linktype::LinkType;
use crate::session::Session;
use crate::source::{AfPacket, AfPacketConfig};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::oneshot;

/// How long one wait for a ring block may take (bounds command latency).
const POLL_MS: i32 = 50;
/// How often counters are published, ticks run and the interface is checked.
const HOUSEKEEPING: Duration = Duration::from_millis(250);

/// What the control side asks a source thread to do.
pub enum Command {
    /// Add a running session; acknowledged once every later packet reaches it.
    Add(Box<Session>, oneshot::Sender<()>),
    /// Stop handing packets to a session (it stays open); acknowledged
    /// once no later packet reaches it.
    Pause(String, oneshot::Sender<()>),
    /// Hand packets to a paused session again (acknowledged).
    Resume(String, oneshot::Sender<()>),
    /// Stop a session: files closed, final counters returned.
    Stop {
        /// Session id.
        id: String,
        /// Final counters or the error of the last close.
        reply: oneshot::Sender<Result<Counters, String>>,
    },
    /// Stop every session and end the thread.
    Shutdown,
}

/// The control side's handle on a source thread.
pub struct Worker {
    /// Commands to the thread.
    pub tx: Sender<Command>,
    /// False once the thread ended (interface gone, read error, shutdown).
    pub alive: Arc<AtomicBool>,
    /// The thread, joined at shutdown.
    pub thread: Option<JoinHandle<()>>,
    /// The interface's link type: sessions on it are built for it.
    pub link: LinkType,
}

/// Current time in ns since the epoch.
fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Opens the interface's ring (in the configured namespace) in a new
/// thread and starts reading; returns once the ring is open or failed.
pub fn spawn(interface: &str, shared: Arc<Shared>) -> Result<Worker, String> {
    let (tx, rx) = mpsc::channel();
    let (ready_tx, ready_rx) = mpsc::channel();
    let alive = Arc::new(AtomicBool::new(true));
    let iface = interface.to_string();
    let alive2 = Arc::clone(&alive);
    let thread = std::thread::Builder::new()
        .name(format!("capture-{iface}"))
        .spawn(move || {
            let opened = (|| {
                if let Some(ns) = &shared.config.netns {
                    netns::enter(ns).map_err(|e| format!("network namespace {ns}: {e}"))?;
                }
                AfPacket::open(AfPacketConfig::new(&iface)).map_err(|e| e.to_string())
            })();
            match opened {
                Ok(src) => {
                    let _ = ready_tx.send(Ok(src.link_type()));
                    run(iface, src, rx, &shared);
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                }
            }
            alive2.store(false, Ordering::Release);
        })
        .map_err(|e| format!("cannot start a source thread: {e}"))?;
    match ready_rx.recv() {
        Ok(Ok(link)) => Ok(Worker {
            tx,
            alive,
            thread: Some(thread),
            link,
        }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => Err("the source thread ended before opening the interface".into()),
    }
}

/// The sessions of one interface.
struct Sessions {
    /// Sessions receiving packets.
    demux: Demux,
    /// Paused sessions (kept open, not fed).
    paused: HashMap<String, Session>,
}

impl Sessions {
    /// Stops one session, wherever it is.
    fn stop(&mut self, id: &str) -> Option<Result<Counters, String>> {
        let mut s = self.demux.remove(id).or_else(|| self.paused.remove(id))?;
        Some(s.stop(now_ns()).map_err(|e| e.to_string()))
    }

    /// Every session name.
    fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .demux
            .sessions()
            .iter()
            .map(|s| s.config().name.clone())
            .collect();
        v.extend(self.paused.keys().cloned());
        v
    }
}

fn run(iface: String, mut src: AfPacket, rx: Receiver<Command>, shared: &Shared) {
    let mut ss = Sessions {
        demux: Demux::new(),
        paused: HashMap::new(),
    };
    let mut last = Instant::now();
    let failure = loop {
        match drain(&rx, &mut ss, shared) {
            Ok(()) => {}
            Err(()) => break None,
        }
        let demux = &mut ss.demux;
        if let Err(e) = src.next_block(POLL_MS, |ts, f, len| demux.process(ts, f, len)) {
            break Some(format!("reading interface {iface} failed: {e}"));
        }
        if last.elapsed() < HOUSEKEEPING {
            continue;
        }
        last = Instant::now();
        if iface != crate::source::ANY && !netns::interface_exists(&iface) {
            break Some(format!(
                "interface {iface} disappeared while capturing; files were closed"
            ));
        }
        if let Ok(st) = src.stats() {
            ss.demux.set_kernel_drops(st.drops);
            for s in ss.paused.values_mut() {
                s.set_kernel_drops(st.drops);
            }
        }
        housekeeping(&iface, &mut ss, shared);
    };
    // Every session still here ends now: shutdown stops them, a failure fails them.
    for id in ss.names() {
        let r = ss.stop(&id);
        finish(shared, &id, r, failure.clone());
    }
}

/// Applies pending commands; `Err` on shutdown or when the control side is gone.
fn drain(rx: &Receiver<Command>, ss: &mut Sessions, shared: &Shared) -> Result<(), ()> {
    loop {
        match rx.try_recv() {
            Ok(Command::Add(s, ack)) => {
                ss.demux.add(*s);
                let _ = ack.send(());
            }
            Ok(Command::Pause(id, ack)) => {
                if let Some(s) = ss.demux.remove(&id) {
                    ss.paused.insert(id, s);
                }
                let _ = ack.send(());
            }
            Ok(Command::Resume(id, ack)) => {
                if let Some(s) = ss.paused.remove(&id) {
                    ss.demux.add(s);
                }
                let _ = ack.send(());
            }
            Ok(Command::Stop { id, reply }) => {
                let r = ss.stop(&id);
                if let Some(Ok(c)) = &r {
                    shared.report_final(&id, c);
                }
                let _ = reply.send(r.unwrap_or_else(|| Err("not running".into())));
            }
            Ok(Command::Shutdown) | Err(TryRecvError::Disconnected) => return Err(()),
            Err(TryRecvError::Empty) => return Ok(()),
        }
    }
}

/// Ticks, publishes counters, sends counter snapshots.
fn housekeeping(iface: &str, ss: &mut Sessions, shared: &Shared) {
    let now = now_ns();
    for (id, e) in ss.demux.tick(now) {
        let r = ss.stop(&id);
        let reason = format!("on {iface}: {e}");
        finish(shared, &id, r, Some(reason));
    }
    let snaps = ss.demux.poll_counters(now);
    {
        let mut reg = shared.lock();
        for s in ss.demux.sessions() {
            reg.set_counters(&s.config().name, s.counters());
        }
        for (id, s) in &ss.paused {
            reg.set_counters(id, s.counters());
        }
    }
    for (id, c) in snaps {
        shared.report(&id, &c);
    }
}

/// Records the end of a session: final counters, and state `failed` with
/// the reason when there is one (else `stopped`).
fn finish(shared: &Shared, id: &str, r: Option<Result<Counters, String>>, failure: Option<String>) {
    let mut reason = failure;
    if let Some(Ok(c)) = &r {
        shared.report_final(id, c);
    }
    let mut reg = shared.lock();
    let Some(rec) = reg.sessions.get_mut(id) else {
        return;
    };
    match r {
        Some(Ok(c)) => rec.counters = c,
        Some(Err(e)) => {
            rec.log(format!("closing files failed: {e}"));
            reason.get_or_insert(e);
        }
        None => {}
    }
    match reason {
        Some(why) => {
            tracing::warn!(session = %id, reason = %why, "capture session failed");
            rec.set_state(State::Failed, Some(why));
            reg.save(id);
        }
        // Not saved: a session running when the daemon shuts down runs
        // again when it starts (spec/capture-api.md, Restart).
        None => rec.set_state(State::Stopped, Some("daemon shutting down".into())),
    }
}
