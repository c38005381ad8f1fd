//! The client: lifecycle (configure, start, close) and shared state.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use omsp::metadata::{HEADER_ONLY_KEYS, ROOT_SUBJECT, SCHEMA_KEY};
use omsp::names::{is_valid_domain, is_valid_name};
use omsp::OmlType;

pub(crate) use crate::clock::Clock;
use crate::destination::{default_destination, default_sender_id, label};
use crate::error::ClientError;
use crate::header::Identity;
use crate::layout::Indexer;
use crate::mp::{check_key, Mp, MpDef};
use crate::queue::dest::DestQueue;
use crate::queue::ring::{lock, Rings};
use crate::queue::Memory;
use crate::spec::{ClientSpec, OverloadPolicy};
use crate::stats::{self, Stats};
use crate::stream::Stream;

const CONFIGURING: u8 = 0;
const RUNNING: u8 = 1;
const CLOSED: u8 = 2;

/// Run-time settings that are not part of a [`ClientSpec`].
#[derive(Debug, Clone)]
pub struct Options {
    /// Bytes of each per-thread queue (one per injecting thread and client).
    /// A sample larger than this cannot be injected. Default 512 KiB.
    pub ring_bytes: usize,
    /// How long `close` waits for a destination that makes no progress
    /// before it gives up on its remaining tuples (counted as dropped).
    /// Default 5 s.
    pub close_timeout: Duration,
    /// How long a TCP destination with a back-channel waits for the
    /// receiver's `streamgauge-resume` line before it treats the receiver as
    /// one that does not speak the extension (spec §3.6). Default 5 s.
    pub backchannel_timeout: Duration,
    /// Sequence number of each stream's first tuple: 1 as liboml2 numbers
    /// them (the default), 0 as the oml4py package does (its drop-in uses
    /// 0 so that tables are identical).
    pub first_seq: i64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            ring_bytes: 512 << 10,
            close_timeout: Duration::from_secs(5),
            backchannel_timeout: Duration::from_secs(5),
            first_seq: 1,
        }
    }
}

/// Work for the writer other than samples.
#[derive(Debug)]
pub(crate) enum Control {
    /// A metadata tuple for every destination.
    Metadata {
        subject: String,
        key: String,
        value: String,
        /// Inject time; `None` before start (the writer stamps it).
        ts: Option<f64>,
    },
}

/// An MP added after start, with its streams (destination index, stream).
pub(crate) type LateMp = (Arc<MpDef>, Vec<(usize, Stream)>);

/// Measurement points and stream indices.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    /// Every MP, by id.
    pub(crate) mps: Vec<Arc<MpDef>>,
    /// Hands out indices after start.
    pub(crate) indexer: Option<Indexer>,
    /// MPs added after start, with their streams, for the writer to declare.
    pub(crate) late: Vec<LateMp>,
}

/// State shared by the client handle, its MPs and its writer.
#[derive(Debug)]
pub(crate) struct Shared {
    /// `CONFIGURING`, `RUNNING` or `CLOSED`.
    state: AtomicU8,
    /// The spec, with the default destination filled in.
    pub(crate) spec: ClientSpec,
    pub(crate) options: Options,
    /// Domain, sender id, app name.
    identity: Identity,
    /// Set at start.
    clock: OnceLock<Clock>,
    pub(crate) rings: Rings,
    pub(crate) memory: Arc<Memory>,
    pub(crate) registry: Mutex<Registry>,
    /// `registry.late` or `control` has something for the writer.
    pub(crate) news: AtomicBool,
    pub(crate) control: Mutex<Vec<Control>>,
    /// Destination queues (for statistics), set at start.
    queues: OnceLock<Vec<Arc<DestQueue>>>,
    /// `_client_instrumentation` is reported somewhere (index 1 is taken).
    instr_on: bool,
}

impl Shared {
    /// The application name.
    pub(crate) fn app(&self) -> &str {
        &self.identity.app
    }

    /// True between start and close.
    #[inline]
    pub(crate) fn is_running(&self) -> bool {
        self.state.load(Ordering::Acquire) == RUNNING
    }

    /// True once `close` was called.
    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        self.state.load(Ordering::Acquire) == CLOSED
    }

    /// The current raw time ([`Clock::raw`]), or why injecting is not
    /// possible now; `None` for a no-op client.
    #[inline]
    pub(crate) fn running_clock(&self) -> Result<Option<u64>, ClientError> {
        match self.state.load(Ordering::Acquire) {
            RUNNING if self.spec.noop => Ok(None),
            RUNNING => Ok(Some(self.clock.get().map_or(0, Clock::raw))),
            CONFIGURING => Err(ClientError::NotStarted),
            _ => Err(ClientError::Closed),
        }
    }

    /// Queues one metadata tuple for every destination.
    pub(crate) fn inject_metadata(
        &self,
        subject: String,
        key: &str,
        value: &str,
    ) -> Result<(), ClientError> {
        check_key(key)?;
        if subject == ROOT_SUBJECT && (key == SCHEMA_KEY || HEADER_ONLY_KEYS.contains(&key)) {
            return Err(ClientError::ReservedKey(key.to_owned()));
        }
        if self.state.load(Ordering::Acquire) == CLOSED {
            return Err(ClientError::Closed);
        }
        if self.spec.noop {
            return Ok(());
        }
        let ts = self.clock.get().map(Clock::now);
        lock(&self.control).push(Control::Metadata {
            subject,
            key: key.to_owned(),
            value: value.to_owned(),
            ts,
        });
        self.news.store(true, Ordering::Release);
        self.rings.wake_writer();
        Ok(())
    }
}

/// An injection point: measurement points, streams, destinations.
///
/// Lifecycle: [`Client::new`] checks the spec; [`Client::add_mp`] defines
/// measurement points (before or after start); [`Client::start`] opens the
/// destinations and starts the writer thread; [`Mp::inject`] from any
/// thread; [`Client::close`] (or dropping the client) flushes everything
/// and waits for the writer and senders. Every method takes `&self`, so a
/// client can be shared between threads.
#[derive(Debug)]
pub struct Client {
    shared: Arc<Shared>,
    /// The writer thread, until close.
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl Client {
    /// A client for `spec`, with default [`Options`].
    pub fn new(spec: ClientSpec) -> Result<Client, ClientError> {
        Client::with_options(spec, Options::default())
    }

    /// A client for `spec`. Checks names (no I/O happens before `start`).
    /// With no destination, the reference's default file is used
    /// ([`crate::destination::default_destination`]); with no sender id,
    /// `<hostname>-<pid>`; with no domain, the application name.
    pub fn with_options(mut spec: ClientSpec, options: Options) -> Result<Client, ClientError> {
        if !is_valid_name(&spec.app) {
            return Err(ClientError::InvalidName {
                what: "application",
                name: spec.app.clone(),
            });
        }
        let domain = spec.domain.clone().unwrap_or_else(|| spec.app.clone());
        if !is_valid_domain(&domain) {
            return Err(ClientError::InvalidHeaderValue {
                what: "domain",
                value: domain,
                reason: "want 1-63 bytes of [A-Za-z0-9_.-], not starting with '.'",
            });
        }
        let sender_id = spec.id.clone().unwrap_or_else(default_sender_id);
        if sender_id.is_empty() || sender_id.chars().any(char::is_control) {
            return Err(ClientError::InvalidHeaderValue {
                what: "sender id",
                value: sender_id,
                reason: "must be non-empty, without control characters",
            });
        }
        if spec.destinations.is_empty() {
            let d = default_destination(&spec.app, spec.id.as_deref(), spec.domain.as_deref());
            spec.destinations.push(d);
        }
        let instr_on =
            spec.instr_interval.is_some() && spec.destinations.iter().any(|d| d.instrumentation);
        let blocking = spec
            .destinations
            .iter()
            .any(|d| matches!(d.policy, OverloadPolicy::Block { .. }));
        let memory = Arc::new(Memory::default());
        let identity = Identity {
            domain,
            sender_id,
            app: spec.app.clone(),
            start_time: 0,
        };
        let shared = Shared {
            state: AtomicU8::new(CONFIGURING),
            rings: Rings::new(options.ring_bytes.max(64), blocking, Arc::clone(&memory)),
            spec,
            options,
            identity,
            clock: OnceLock::new(),
            memory,
            registry: Mutex::new(Registry::default()),
            news: AtomicBool::new(false),
            control: Mutex::new(Vec::new()),
            queues: OnceLock::new(),
            instr_on,
        };
        Ok(Client {
            shared: Arc::new(shared),
            writer: Mutex::new(None),
        })
    }

    /// Defines a measurement point. Names must be `[A-Za-z_][A-Za-z0-9_]*`
    /// and unique. After start, the MP gets a default stream on every
    /// destination without an explicit stream list, declared through schema
    /// 0 with the next free index (as liboml2 does).
    pub fn add_mp(&self, name: &str, fields: &[(&str, OmlType)]) -> Result<Mp, ClientError> {
        let fields = crate::layout::mp_fields(name, fields)?;
        let sh = &self.shared;
        let mut reg = lock(&sh.registry);
        let state = sh.state.load(Ordering::Acquire);
        if state == CLOSED {
            return Err(ClientError::Closed);
        }
        if reg.mps.iter().any(|m| m.name == name) {
            return Err(ClientError::DuplicateMp(name.to_owned()));
        }
        let def = Arc::new(MpDef::new(reg.mps.len() as u32, name, fields));
        if state == RUNNING && !sh.spec.noop {
            let streams = match reg.indexer.as_mut() {
                Some(ix) => crate::layout::late_streams(&sh.spec, &sh.identity.app, &def, ix)?,
                None => Vec::new(),
            };
            reg.late.push((Arc::clone(&def), streams));
            sh.news.store(true, Ordering::Release);
            sh.rings.wake_writer();
        }
        reg.mps.push(Arc::clone(&def));
        Ok(Mp {
            def,
            shared: Arc::clone(sh),
        })
    }

    /// Starts: builds streams and filters, opens files, starts the writer
    /// and one sender thread per destination (TCP destinations connect from
    /// their thread, so `start` does not wait for a server).
    pub fn start(&self) -> Result<(), ClientError> {
        let sh = &self.shared;
        let mut writer = lock(&self.writer);
        let mut reg = lock(&sh.registry);
        match sh.state.load(Ordering::Acquire) {
            CONFIGURING => {}
            RUNNING => return Err(ClientError::AlreadyStarted),
            _ => return Err(ClientError::Closed),
        }
        if sh.spec.noop {
            sh.state.store(RUNNING, Ordering::Release);
            return Ok(());
        }
        let clock = sh.clock.get_or_init(Clock::start).clone();
        let identity = Identity {
            start_time: clock.start_time,
            ..sh.identity.clone()
        };
        let (handle, queues, indexer) = crate::start::start(sh, &reg, clock, &identity)?;
        reg.indexer = Some(indexer);
        let _ = sh.queues.set(queues);
        sh.rings.set_writer(handle.thread().clone());
        *writer = Some(handle);
        sh.state.store(RUNNING, Ordering::Release);
        Ok(())
    }

    /// Injects experiment-level metadata (subject `.`). Allowed before start
    /// (sent right after the header). Keys must be valid names; `schema` and
    /// the header keys are reserved.
    pub fn inject_metadata(&self, key: &str, value: &str) -> Result<(), ClientError> {
        self.shared
            .inject_metadata(ROOT_SUBJECT.to_owned(), key, value)
    }

    /// The `start-time` sent in headers (Unix seconds), once started.
    pub fn start_time(&self) -> Option<i64> {
        self.shared.clock.get().map(|c| c.start_time)
    }

    /// The domain sent in headers.
    pub fn domain(&self) -> &str {
        &self.shared.identity.domain
    }

    /// The sender id sent in headers.
    pub fn sender_id(&self) -> &str {
        &self.shared.identity.sender_id
    }

    /// A snapshot of every counter (exact once the client is closed).
    pub fn stats(&self) -> Stats {
        let sh = &self.shared;
        let mps: Vec<Arc<MpDef>> = lock(&sh.registry).mps.clone();
        let mut st = Stats {
            mps: mps.iter().map(|m| stats::mp(m)).collect(),
            memory: sh.memory.stats(),
            ..Stats::default()
        };
        st.injected = st.mps.iter().map(|m| m.injected).sum();
        st.dropped_at_inject = st.mps.iter().map(|m| m.dropped_at_inject).sum();
        if let Some(queues) = sh.queues.get() {
            for (q, d) in queues.iter().zip(&sh.spec.destinations) {
                let c = q.counters();
                st.destinations
                    .push(stats::destination(label(&d.uri), &c, q.queued(), &mps));
            }
        }
        st
    }

    /// Closes: later injects fail with [`ClientError::Closed`]; everything
    /// injected before is filtered, encoded and written (partial sample
    /// windows are flushed), a last `_client_instrumentation` report is sent,
    /// and the writer and senders are joined. A destination that makes no
    /// progress for [`Options::close_timeout`] is given up, its remaining
    /// tuples counted as dropped. Idempotent; dropping the client closes it.
    ///
    /// Accounting is exact for samples injected before `close` is called;
    /// a sample injected by another thread *while* `close` runs is either
    /// written or rejected with [`ClientError::Closed`], except in a narrow
    /// race where it is queued after the writer's last pass and lost
    /// uncounted. Stop injecting threads first when every sample matters.
    pub fn close(&self) -> Result<(), ClientError> {
        let mut writer = lock(&self.writer);
        self.shared.state.store(CLOSED, Ordering::Release);
        self.shared.rings.wake_writer();
        if let Some(h) = writer.take() {
            if h.join().is_err() {
                tracing::error!("the writer thread panicked");
            }
        }
        Ok(())
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

impl Shared {
    pub(crate) fn instr_on(&self) -> bool {
        self.instr_on
    }
}
