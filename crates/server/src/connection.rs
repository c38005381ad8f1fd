//! One client connection: socket → decoder → rows → the database writer.
//!
//! Memory per connection is bounded: one read chunk, the decoder's buffer
//! (at most one unfinished line or packet, capped by [`omsp::Limits`]) and
//! one batch of rows. While the writer's queue is full the connection does
//! not read, so the kernel's socket buffers fill and TCP slows the client.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use omsp::names::is_valid_domain;
use omsp::session::{Offer, SessionRequest};
use omsp::{Decoder, Event, Header, Sample, Schema};
use store::metadata::{classify, MetadataTuple};
use store::{ClockReport, Row, TableId};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::sync::{oneshot, watch};

use crate::auth::Auth;
use crate::clock::{ClockTracker, CLOCK_STREAM};
use crate::config::PRE_AUTH_HEADER;
use crate::feedback::{Feedback, Registration};
use crate::metrics::rejects::clip;
use crate::metrics::{ClientEvent, CloseReason, ConnRejects, DomainMetrics, Metrics};
use crate::read_buffer::ReadBuffer;
use crate::registry::{DbClient, Registry};
use crate::session::{self, Claim, Feeds};
use crate::shutdown::Shutdown;
use crate::socket::Movable;
use crate::writer::{Attached, Command, Progress};

/// How long a finished resumable connection waits for the commit that
/// acknowledges its last rows.
const LAST_ACK: Duration = Duration::from_secs(3);

/// How long a connection keeps reading, after shutdown was requested, for
/// data its client had already sent.
const DRAIN_WINDOW: Duration = Duration::from_millis(250);

/// Longest a connection drains after shutdown was requested, however busy
/// its client is.
const MAX_DRAIN: Duration = Duration::from_secs(2);

/// What every connection shares.
#[derive(Debug)]
pub struct Shared {
    /// Open databases.
    pub registry: Arc<Registry>,
    /// Drop clients silent for this long.
    pub idle_timeout: Option<Duration>,
    /// Decoder bounds.
    pub limits: omsp::Limits,
    /// Bytes per socket read.
    pub read_chunk: usize,
    /// Rows per batch handed to the writer.
    pub batch_rows: usize,
    /// Value bytes per batch handed to the writer.
    pub batch_bytes: usize,
    /// Self-measurement counters.
    pub metrics: Arc<Metrics>,
    /// Token authentication (`--auth-file`); `None`: every domain is open.
    pub auth: Option<Arc<Auth>>,
    /// Resumable sessions being served.
    pub sessions: session::Sessions,
    /// Feedback peers and rules.
    pub feedback: Arc<Feedback>,
    /// Connection counts and limits.
    pub admission: Arc<crate::admission::Admission>,
    /// The collection runtime, if connections are accepted and their
    /// headers read on a runtime of lower priority: where a connection
    /// moves once its header is complete ([`crate::socket`]). `None`: the
    /// whole connection runs where it was accepted.
    pub collection: Option<tokio::runtime::Handle>,
    /// Places for connections reading a large header
    /// ([`crate::config::LARGE_HEADERS_AT_ONCE`]).
    pub large_headers: Arc<tokio::sync::Semaphore>,
}

/// Why a connection ended (for the log).
#[derive(Debug)]
enum End {
    /// The client closed the connection.
    Closed,
    /// The client sent nothing for the idle timeout.
    Idle,
    /// The server is shutting down.
    Shutdown,
    /// A newer connection of the same resumable session took over.
    Superseded,
    /// A protocol or storage error that the session cannot survive.
    Error(String),
    /// The header is complete: the connection moves to the collection
    /// runtime (never the end of a connection).
    Moving,
}

/// A resumable session's state on its connection (spec §3.6).
struct Resumable {
    /// Session id.
    id: Arc<str>,
    /// Data offset of the first byte after the header on this connection.
    base: u64,
    /// Decoder offset where the data starts (the end of the header).
    header_end: u64,
    /// Decoder offset just after the last tuple handled.
    boundary: u64,
    /// This connection serves the session.
    claim: Claim,
}

/// The back-channel of a connection that asked for one.
struct Back {
    /// End of this connection's data, once known, for the last ack.
    last: watch::Sender<Option<u64>>,
    /// The task writing the back-channel.
    task: tokio::task::JoinHandle<()>,
    /// Registration as a feedback peer.
    feedback: Option<Registration>,
    /// Fields that feedback rules watch, for the rules in force when it was
    /// computed.
    watched: Option<(Arc<Vec<crate::feedback::Rule>>, Watched)>,
}

/// Per stream index: (field index, stream name, field name) of watched fields.
type Watched = HashMap<u32, Vec<(usize, String, String)>>;

impl Resumable {
    /// Data offset of the last tuple boundary.
    fn offset(&self) -> u64 {
        self.base + (self.boundary - self.header_end)
    }
}

/// The session a header opened.
#[derive(Debug)]
struct Session {
    /// Membership of the database (its writer queue).
    db: DbClient,
    /// `oml_sender_id`.
    sender_id: i64,
    /// Seconds added to client timestamps: client start − database start.
    offset: f64,
    /// Database start time, for `oml_ts_server`.
    db_start: f64,
    /// Stream index → table.
    tables: HashMap<u32, TableId>,
    /// The domain's counters.
    metrics: Arc<DomainMetrics>,
    /// `sender-id` and `app-name`, for the `Disconnect` event.
    who: (String, String),
    /// The estimate of the sender's clock offset; `None` without `start-time`.
    clock: Option<ClockTracker>,
    /// Index of the sender's `_client_clock` stream, once declared.
    clock_stream: Option<u32>,
}

/// State of one connection.
struct Connection {
    /// Client address (for the log).
    peer: SocketAddr,
    /// Shared server state.
    shared: Arc<Shared>,
    /// Protocol state.
    decoder: Decoder,
    /// Set by the header.
    session: Option<Session>,
    /// Rows not yet handed to the writer.
    batch: Vec<Row>,
    /// Bytes held by `batch` (rows and their values' contents).
    batch_bytes: usize,
    /// The header has shown a token that opens its domain (or no token is
    /// needed), so it may grow to the decoder's full header limit.
    pre_auth_passed: bool,
    /// Arrival time (Unix seconds) of the chunk being decoded.
    now: f64,
    /// Rows handed to the writer so far.
    rows: u64,
    /// Set when the header asked for a resumable session.
    resumable: Option<Resumable>,
    /// Set when the header asked for a back-channel.
    back: Option<Back>,
    /// The socket's write half until a back-channel needs it.
    out: Option<Box<dyn AsyncWrite + Send + Unpin>>,
    /// Rejected input so far, for rate-limited logging.
    rejects: ConnRejects,
    /// Reason ([`omsp::ErrorKind::code`]) of the fatal input error that
    /// ended the connection, if one did.
    fatal: Option<&'static str>,
    /// Reading the header on the low-priority runtime: stop at the
    /// complete header, whose session starts on the collection runtime.
    moving: bool,
    /// The complete header, decoded before the move, until its session
    /// starts.
    header: Option<Header>,
    /// This connection's place among those reading a large header, while
    /// it reads one.
    large_header: Option<tokio::sync::OwnedSemaphorePermit>,
}

/// Serves one client until it leaves, errs, idles out or shutdown drains it.
/// `stream` is the TCP socket, or the TLS session on it. With a collection
/// runtime in `shared`, the header is read here (a runtime of lower
/// priority) and the rest of the connection moves there; `lease` (its
/// admission, say) is dropped when the connection ends, wherever it ends.
pub async fn serve<S: Movable, L: Send + 'static>(
    mut stream: S,
    peer: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Shutdown,
    lease: L,
) {
    // Debug only: "client ready" marks a session; a flood of connections
    // that never send a valid header must not write a line each.
    tracing::debug!(client = %peer, "client connected");
    let metrics = Arc::clone(&shared.metrics);
    metrics.connections_accepted.fetch_add(1, Ordering::Relaxed);
    metrics.event(|| event(peer, None, "Connect", ""));
    let collection = shared.collection.clone();
    let mut conn = Connection {
        peer,
        decoder: Decoder::with_limits(shared.limits),
        // Room for rows comes with the first rows (a connection that
        // never sends any holds none).
        batch: Vec::new(),
        batch_bytes: 0,
        pre_auth_passed: shared.auth.is_none(),
        shared,
        session: None,
        now: 0.0,
        rows: 0,
        resumable: None,
        back: None,
        out: None,
        rejects: ConnRejects::default(),
        fatal: None,
        moving: collection.is_some(),
        header: None,
        large_header: None,
    };
    // Boxed: what a connection awaits once it has a session (and its
    // close) need no room in the future of one that never sends a header.
    let Some(collection) = collection else {
        let end = Box::pin(conn.session_phase(stream, shutdown)).await;
        Box::pin(conn.close(end)).await;
        drop(lease);
        return;
    };
    let end = conn.run(&mut stream, shutdown.clone()).await;
    if !matches!(end, End::Moving) {
        Box::pin(conn.close(end)).await;
        drop(lease);
        return;
    }
    conn.moving = false;
    if let Err(e) = stream.socket().detach() {
        Box::pin(conn.close(End::Error(format!("moving the connection: {e}")))).await;
        drop(lease);
        return;
    }
    collection.spawn(async move {
        let end = match stream.socket().attach() {
            Ok(()) => conn.session_phase(stream, shutdown).await,
            Err(e) => End::Error(format!("moving the connection: {e}")),
        };
        Box::pin(conn.close(end)).await;
        drop(lease);
    });
}

impl Connection {
    /// The connection from its header on: starts the session of a header
    /// decoded before a move, then reads on.
    async fn session_phase<S: Movable>(&mut self, stream: S, shutdown: Shutdown) -> End {
        let (stream, out) = tokio::io::split(stream);
        self.out = Some(Box::new(out));
        if self.header.is_some() {
            if let Err(reason) = self.process().await.and(self.flush().await) {
                return End::Error(reason);
            }
        }
        self.run(stream, shutdown).await
    }

    /// Logs and counts the end of the connection.
    async fn close(mut self, end: End) {
        let conn = &mut self;
        let peer = conn.peer;
        let metrics = Arc::clone(&conn.shared.metrics);
        Box::pin(conn.last_ack(!matches!(end, End::Superseded))).await;
        let client = peer;
        let domain = conn.session.as_ref().map(|s| s.db.domain().to_owned());
        let reason = match end {
            End::Closed => CloseReason::Closed,
            End::Idle => CloseReason::Idle,
            End::Shutdown => CloseReason::Shutdown,
            End::Superseded | End::Moving => CloseReason::Closed,
            End::Error(_) => CloseReason::Error,
        };
        let lenient = conn.decoder.lenient();
        if lenient != omsp::text::Leniency::default() {
            tracing::warn!(%client, domain, bools = lenient.bools, nul_cut = lenient.nul_cut,
            "text values read leniently, as the reference reads them: booleans other than a prefix of true/false stored as true, values cut at a NUL byte");
        }
        conn.log_reject_summary(true);
        // A connection that never opened a session writes its closing line
        // within the server's budget of reject lines (by fatal error, or
        // `no_header`), so that a flood of bad connections writes a bounded log.
        let budget = conn
            .session
            .is_none()
            .then(|| conn.fatal.unwrap_or("no_header"));
        let logged = budget.is_none_or(|reason| metrics.rejects.admit(reason));
        // `received`: rows handed to the writer, not rows stored (the store may
        // still refuse some; those are counted and logged by the writer).
        match end {
            _ if !logged => {}
            End::Error(reason) => {
                let reason = clip(&reason);
                tracing::warn!(%client, domain, received = conn.rows, %reason, "client disconnected on error");
            }
            End::Idle => {
                tracing::warn!(%client, domain, received = conn.rows, "client dropped due to idleness");
            }
            end => {
                tracing::info!(%client, domain, received = conn.rows, ?end, "client disconnected")
            }
        }
        metrics.closed(reason);
        // A connection that received a lot (a large header or packets) freed
        // it on this thread; hand the freed pages back now, as the thread may
        // go idle after it (see `trim`).
        if conn.decoder.offset() >= crate::trim::LARGE_CONNECTION {
            crate::trim::collect_this_thread();
        }
        let who = conn.session.as_ref().map(|s| (s.db.domain(), &s.who));
        metrics.event(|| {
            event(
                peer,
                who,
                "Disconnect",
                ClientEvent::disconnect_message(reason),
            )
        });
    }
}

/// A `server_clients` row.
fn event(
    peer: SocketAddr,
    who: Option<(&str, &(String, String))>,
    event: &'static str,
    message: &str,
) -> ClientEvent {
    let (domain, node, app) = match who {
        Some((domain, (node, app))) => (domain, node.as_str(), app.as_str()),
        None => ("", "", ""),
    };
    ClientEvent {
        address: peer.ip().to_string(),
        port: peer.port(),
        node_id: node.to_owned(),
        domain: domain.to_owned(),
        appname: app.to_owned(),
        event,
        message: message.to_owned(),
    }
}

impl Connection {
    async fn run<S: AsyncRead + Unpin>(&mut self, mut stream: S, mut shutdown: Shutdown) -> End {
        let mut buf = ReadBuffer::new(self.shared.read_chunk);
        let mut drain_until = shutdown.is_requested().then(|| Instant::now() + MAX_DRAIN);
        loop {
            let draining = drain_until.is_some();
            if drain_until.is_some_and(|until| Instant::now() >= until) {
                if Box::pin(self.finish()).await {
                    return End::Moving;
                }
                return End::Shutdown;
            }
            let limit = match drain_until {
                Some(until) => {
                    Some(DRAIN_WINDOW.min(until.saturating_duration_since(Instant::now())))
                }
                None => self.shared.idle_timeout,
            };
            if self.needs_large_header_place() {
                let sem = Arc::clone(&self.shared.large_headers);
                let wait = async {
                    match limit {
                        Some(d) => tokio::time::timeout(d, sem.acquire_owned()).await.ok(),
                        None => Some(sem.acquire_owned().await),
                    }
                };
                let got = tokio::select! {
                    p = wait => p,
                    () = shutdown.requested() => return End::Shutdown,
                };
                match got {
                    Some(Ok(p)) => self.large_header = Some(p),
                    _ => return End::Idle,
                }
            }
            let read = tokio::select! {
                r = read_for(&mut stream, buf.room(), limit) => r,
                () = summary_due(&self.rejects) => {
                    self.log_reject_summary(false);
                    continue;
                }
                () = superseded(self.resumable.as_ref()) => {
                    if Box::pin(self.finish()).await {
                        return End::Moving;
                    }
                    return End::Superseded;
                }
                () = shutdown.requested(), if !draining => {
                    drain_until = Some(Instant::now() + MAX_DRAIN);
                    continue;
                }
            };
            let n = match read {
                Ok(Some(n)) => n,
                Ok(None) if draining => 0,
                Ok(None) => {
                    if Box::pin(self.finish()).await {
                        return End::Moving;
                    }
                    return End::Idle;
                }
                Err(e) => {
                    if Box::pin(self.finish()).await {
                        return End::Moving;
                    }
                    return End::Error(format!("read: {e}"));
                }
            };
            self.now = unix_now();
            self.shared
                .metrics
                .bytes_received
                .fetch_add(n as u64, Ordering::Relaxed);
            if n == 0 {
                self.decoder.finish();
            } else {
                self.decoder.feed(buf.filled(n));
                buf.record(n);
            }
            // Rows decoded before an error are still handed over.
            let processed = self.process().await.and_then(|()| self.pre_auth());
            if let Err(reason) = processed.and(self.flush().await) {
                return End::Error(reason);
            }
            if self.header.is_some() || self.session.is_some() {
                self.large_header = None;
            }
            if self.moving && self.header.is_some() {
                return End::Moving;
            }
            if n == 0 {
                return if draining { End::Shutdown } else { End::Closed };
            }
        }
    }

    /// Whether the connection is inside a large header without a place to
    /// read more of it ([`crate::config::LARGE_HEADERS_AT_ONCE`]).
    fn needs_large_header_place(&self) -> bool {
        self.large_header.is_none()
            && self.session.is_none()
            && self.header.is_none()
            && self.decoder.offset() + self.decoder.buffered() as u64 > crate::config::LARGE_HEADER
            && self.decoder.partial_header().is_some()
    }

    /// With token authentication on, a header that has not yet shown a
    /// token opening its domain may hold only [`PRE_AUTH_HEADER`] bytes: an
    /// unknown client cannot make the server keep a large header. The
    /// complete header is checked again, authoritatively, in
    /// `start_session`.
    fn pre_auth(&mut self) -> Result<(), String> {
        if self.pre_auth_passed {
            return Ok(());
        }
        let (Some(auth), Some(partial)) = (&self.shared.auth, self.decoder.partial_header()) else {
            // The header is complete: start_session has decided.
            self.pre_auth_passed = self.session.is_some();
            return Ok(());
        };
        if let Some(domain) = partial.domain.as_deref() {
            if auth.admits_partial(domain, partial) {
                self.pre_auth_passed = true;
                return Ok(());
            }
        }
        let read = self.decoder.offset() + self.decoder.buffered() as u64;
        if read > PRE_AUTH_HEADER as u64 {
            self.fatal = Some("pre_auth_header");
            if self.shared.metrics.rejects.admit("pre_auth_header") {
                tracing::warn!(client = %self.peer, domain = partial.domain.as_deref(), bytes = read,
                    "header too long before a valid {} token; connection refused (a client must send its token within the first {} KiB of the header)",
                    crate::auth::AUTH_KEY, PRE_AUTH_HEADER / 1024);
            }
            return Err(format!(
                "authentication failed: no valid {} token in the first {PRE_AUTH_HEADER} header bytes",
                crate::auth::AUTH_KEY
            ));
        }
        Ok(())
    }

    /// Writes, once per period (or at the end), how many rejects of each
    /// reason this connection had since the last such line.
    fn log_reject_summary(&mut self, last: bool) {
        for (reason, rejected, total) in self.rejects.summary(last, &self.shared.metrics.rejects) {
            tracing::warn!(client = %self.peer, reason, rejected, total,
                "input rejected repeatedly on this connection");
        }
    }

    /// Decodes what remains buffered (a last line without LF) before closing.
    /// Returns whether that completed the header of a connection that
    /// moves (its session then starts, and its rows are handed over, on
    /// the collection runtime).
    async fn finish(&mut self) -> bool {
        self.decoder.finish();
        let _ = self.process().await;
        let _ = self.flush().await;
        self.moving && self.header.is_some()
    }

    /// Handles every event the buffered input yields; while `moving`,
    /// only up to the complete header.
    async fn process(&mut self) -> Result<(), String> {
        if self.moving && self.header.is_some() {
            return Ok(());
        }
        if let Some(h) = self.header.take() {
            Box::pin(self.start_session(h)).await?;
        }
        while let Some(event) = self.decoder.next_event() {
            match event {
                Err(e) if e.is_fatal() => {
                    let code = e.kind.code();
                    self.shared.metrics.decode_error(code);
                    self.fatal = Some(code);
                    if self.shared.metrics.rejects.admit(code) {
                        let error = clip(&e.kind.to_string()).into_owned();
                        tracing::warn!(client = %self.peer, offset = e.offset, %error,
                            "fatal input error");
                    }
                    return Err(e.to_string());
                }
                Err(e) => {
                    let code = e.kind.code();
                    self.shared.metrics.decode_error(code);
                    if let Some(session) = &self.session {
                        session
                            .metrics
                            .rejected_decode
                            .fetch_add(1, Ordering::Relaxed);
                    }
                    if self.rejects.reject(code, &self.shared.metrics.rejects) {
                        let error = clip(&e.kind.to_string()).into_owned();
                        tracing::warn!(client = %self.peer, offset = e.offset, %error, reason = code,
                            "input rejected (more of this reason on this connection are counted and summarised every 10 s)");
                    }
                    self.log_reject_summary(false);
                }
                // Boxed: the session start is the largest future a
                // connection awaits, and it runs once; every connection
                // would otherwise hold room for it while it waits for data.
                Ok(Event::Header(h)) if self.moving => {
                    self.header = Some(h);
                    return Ok(());
                }
                Ok(Event::Header(h)) => Box::pin(self.start_session(h)).await?,
                Ok(Event::Schema(s)) => {
                    let id = self.register(&s).await?;
                    if let Some(session) = &mut self.session {
                        session.tables.insert(s.index, id);
                    }
                }
                Ok(Event::Sample(s)) => {
                    self.observe(&s);
                    self.clock(&s).await?;
                    self.sample(s).await?;
                    if let Some(r) = &mut self.resumable {
                        r.boundary = self.decoder.offset();
                    }
                }
            }
            if self.batch.len() >= self.shared.batch_rows
                || self.batch_bytes >= self.shared.batch_bytes
            {
                self.flush().await?;
            }
        }
        Ok(())
    }

    async fn start_session(&mut self, h: Header) -> Result<(), String> {
        let domain = h.domain.as_deref().ok_or("header has no domain")?;
        if !is_valid_domain(domain) {
            return Err(format!(
                "invalid domain {domain:?} (want 1-63 bytes of [A-Za-z0-9_.-], not starting with '.')"
            ));
        }
        if let Some(auth) = &self.shared.auth {
            auth.admit(domain, &h, self.peer)?;
        }
        let sender = h.sender_id.clone().unwrap_or_else(|| {
            tracing::warn!(client = %self.peer, "header has no sender-id; using the client address");
            self.peer.ip().to_string()
        });
        let start_time = h.start_time.unwrap_or(self.now as i64);
        let db = self
            .shared
            .registry
            .join(domain)
            .map_err(|e| format!("cannot start database writer: {e}"))?;
        let (reply, answer) = oneshot::channel();
        db.send(Command::Attach {
            start_time,
            sender: sender.clone(),
            reply,
        })
        .await
        .map_err(|()| "database writer is gone")?;
        let Attached {
            sender_id,
            db_start,
        } = answer
            .await
            .map_err(|_| "database writer is gone".to_owned())?
            .map_err(|e| format!("database {domain}: {e}"))?;
        tracing::info!(client = %self.peer, domain, sender, sender_id,
            app = h.app_name.as_deref(), protocol = h.protocol, content = h.content.name(),
            "client ready");
        self.session = Some(Session {
            db,
            sender_id,
            // Saturating: both times come from clients (any i64).
            offset: start_time.saturating_sub(db_start) as f64,
            db_start: db_start as f64,
            tables: HashMap::new(),
            metrics: self.shared.metrics.domain(domain),
            clock: h
                .start_time
                .map(|t| ClockTracker::new(sender_id, &sender, t)),
            clock_stream: None,
            who: (sender, h.app_name.clone().unwrap_or_default()),
        });
        if let Some(s) = &self.session {
            let who = Some((domain, &s.who));
            self.shared
                .metrics
                .event(|| event(self.peer, who, "Ready", ""));
        }
        for schema in &h.schemas {
            let id = self.register(schema).await?;
            if let Some(session) = &mut self.session {
                session.tables.insert(schema.index, id);
            }
        }
        let exact = omsp::exact_doubles::offered(&h);
        if let Some(request) = Offer::from_header(&h).map_err(|e| e.to_string())? {
            self.start_back_channel(domain, request, sender_id, exact)
                .await?;
        } else if exact {
            let out = self.out.as_mut().ok_or("back-channel already in use")?;
            session::confirm_exact_doubles(out).await?;
        }
        Ok(())
    }

    /// Answers the resume line, then starts the back-channel task (acks of
    /// a resumable session, control messages of a feedback peer).
    async fn start_back_channel(
        &mut self,
        domain: &str,
        request: Offer,
        sender_id: i64,
        exact_doubles: bool,
    ) -> Result<(), String> {
        let (resumed, acks) = match request.session {
            Some(session) => {
                let (stored, acks) = self.start_resumable(domain, session, sender_id).await?;
                (stored, Some(acks))
            }
            None => (0, None),
        };
        let mut out = self.out.take().ok_or("back-channel already in use")?;
        session::send_resume(&mut out, resumed)
            .await
            .map_err(|e| format!("writing the resume line: {e}"))?;
        if exact_doubles {
            session::confirm_exact_doubles(&mut out).await?;
        }
        let (feedback, control) = match (request.feedback, &self.session) {
            (true, Some(s)) => {
                let (reg, rx) =
                    self.shared
                        .feedback
                        .register(domain, &s.who.0, Arc::clone(&s.metrics));
                tracing::info!(client = %self.peer, domain, sender = %s.who.0,
                    "sender accepts control messages");
                (Some(reg), Some(rx))
            }
            _ => (None, None),
        };
        let (last, last_rx) = watch::channel(None);
        let feeds = Feeds {
            resumed,
            acks,
            control,
            last: last_rx,
        };
        let task = tokio::spawn(session::back_channel(out, feeds));
        self.back = Some(Back {
            last,
            task,
            feedback,
            watched: None,
        });
        Ok(())
    }

    /// Hands the values of fields that feedback rules watch to the peer.
    fn observe(&mut self, s: &Sample) {
        let Some(back) = &mut self.back else { return };
        let Some(reg) = &back.feedback else { return };
        let rules = self.shared.feedback.rules();
        if !back
            .watched
            .as_ref()
            .is_some_and(|(r, _)| Arc::ptr_eq(r, &rules))
        {
            back.watched = Some((Arc::clone(&rules), HashMap::new()));
        }
        let Some((_, watched)) = &mut back.watched else {
            return;
        };
        let fields = watched.entry(s.stream).or_insert_with(|| {
            let Some(schema) = self.decoder.schema(s.stream) else {
                return Vec::new();
            };
            rules
                .iter()
                .filter_map(|r| match &r.when {
                    crate::feedback::Condition::Field { stream, field }
                        if *stream == schema.name =>
                    {
                        let i = schema.fields.iter().position(|f| f.name == *field)?;
                        Some((i, stream.clone(), field.clone()))
                    }
                    _ => None,
                })
                .collect()
        });
        for (i, stream, field) in fields.iter() {
            if let Some(v) = s.values.get(*i).and_then(numeric) {
                reg.peer.observe(stream, field, v);
            }
        }
    }

    /// Claims the session and learns where it resumes.
    async fn start_resumable(
        &mut self,
        domain: &str,
        request: SessionRequest,
        sender_id: i64,
    ) -> Result<(u64, watch::Receiver<u64>), String> {
        let claim = self.shared.sessions.claim(domain, &request.id).await?;
        let id: Arc<str> = Arc::from(request.id.as_str());
        let session = self.session.as_ref().ok_or("session before header")?;
        let (reply, answer) = oneshot::channel();
        session
            .db
            .send(Command::Resume {
                session: Arc::clone(&id),
                reply,
            })
            .await
            .map_err(|()| "database writer is gone")?;
        let (stored, committed) = answer
            .await
            .map_err(|_| "database writer is gone".to_owned())?
            .map_err(|e| format!("session {id}: {e}"))?;
        if request.offset > stored {
            tracing::warn!(client = %self.peer, session = %id, announced = request.offset, stored,
                "sender announced data beyond what is stored; it must resend from the stored offset");
        }
        tracing::info!(client = %self.peer, session = %id, offset = stored, sender_id, "session resumed");
        let header_end = self.decoder.offset();
        self.resumable = Some(Resumable {
            id,
            base: stored,
            header_end,
            boundary: header_end,
            claim,
        });
        Ok((stored, committed))
    }

    /// Waits (briefly) until a resumable session's last rows are
    /// acknowledged, so a sender that closes cleanly learns they are stored.
    async fn last_ack(&mut self, wait: bool) {
        let Some(back) = self.back.take() else {
            return;
        };
        let mut task = back.task;
        let end = self.resumable.as_ref().map_or(0, Resumable::offset);
        if wait {
            let _ = back.last.send(Some(end));
            if tokio::time::timeout(LAST_ACK, &mut task).await.is_err() {
                task.abort();
            }
        } else {
            task.abort();
        }
        // The claim goes last: a newer connection of the session waits for it.
        self.resumable = None;
    }

    /// Finds or creates the table of `schema` (after handing over pending
    /// rows, so they stay in order).
    async fn register(&mut self, schema: &Schema) -> Result<TableId, String> {
        self.flush().await?;
        let session = self.session.as_ref().ok_or("schema before header")?;
        let (reply, answer) = oneshot::channel();
        session
            .db
            .send(Command::Register {
                schema: schema.clone(),
                reply,
            })
            .await
            .map_err(|()| "database writer is gone")?;
        let id = answer
            .await
            .map_err(|_| "database writer is gone".to_owned())?
            // Named, not quoted: a schema can be tens of KiB of fields.
            .map_err(|e| {
                format!(
                    "schema {} {} ({} fields): {e}",
                    schema.index,
                    schema.name,
                    schema.fields.len()
                )
            })?;
        if schema.name == CLOCK_STREAM {
            if let Some(session) = &mut self.session {
                session.clock_stream = Some(schema.index);
            }
        }
        Ok(id)
    }

    /// Clock awareness: the offset estimate from every tuple's timestamp,
    /// and the sender's own `_client_clock` reports.
    async fn clock(&mut self, s: &Sample) -> Result<(), String> {
        let now = self.now;
        let Some(session) = &mut self.session else {
            return Ok(());
        };
        let estimate = session.clock.as_mut().and_then(|c| c.observe(s.ts, now));
        let report = match session.clock_stream {
            Some(i) if i == s.stream => self.decoder.schema(i).and_then(|schema| {
                ClockReport::from_tuple(schema, &s.values, session.sender_id, &session.who.0, now)
            }),
            _ => None,
        };
        if let Some(e) = estimate {
            session
                .db
                .send(Command::ClockEstimate(e))
                .await
                .map_err(|()| "database writer is gone")?;
        }
        if let Some(r) = report {
            session
                .db
                .send(Command::ClockReport(r))
                .await
                .map_err(|()| "database writer is gone")?;
        }
        Ok(())
    }

    async fn sample(&mut self, s: Sample) -> Result<(), String> {
        if s.stream == 0 {
            if let Some(schema0) = self.decoder.schema(0) {
                match classify(schema0, &s.values) {
                    MetadataTuple::Store => {}
                    MetadataTuple::SchemaDeclaration => return Ok(()),
                    MetadataTuple::HeaderOnlyKey(key) => {
                        tracing::warn!(client = %self.peer, key,
                            "metadata key is only valid in the header; ignoring it");
                        return Ok(());
                    }
                }
            }
        }
        let known = self
            .session
            .as_ref()
            .and_then(|session| session.tables.get(&s.stream).copied());
        let table = match known {
            Some(t) => t,
            None => {
                let schema = self
                    .decoder
                    .schema(s.stream)
                    .cloned()
                    .ok_or_else(|| format!("stream {} has no schema", s.stream))?;
                let id = self.register(&schema).await?;
                if let Some(session) = &mut self.session {
                    session.tables.insert(s.stream, id);
                }
                id
            }
        };
        let session = self.session.as_ref().ok_or("tuple before header")?;
        self.batch_bytes += std::mem::size_of::<Row>()
            + s.values.len() * std::mem::size_of::<omsp::Value>()
            + s.values.iter().map(omsp::Value::heap_bytes).sum::<usize>();
        self.batch.push(Row {
            table,
            sender: session.sender_id,
            seq: s.seq,
            ts_client: s.ts + session.offset,
            ts_server: self.now - session.db_start,
            values: s.values,
        });
        Ok(())
    }

    /// Hands the pending rows to the writer (waiting while its queue is full).
    async fn flush(&mut self) -> Result<(), String> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let session = self.session.as_ref().ok_or("rows before header")?;
        // The next batch gets the room the last one needed at once (no
        // regrowth per row under load; little room for a slow sender).
        let next = Vec::with_capacity(self.batch.len().min(self.shared.batch_rows));
        let rows = std::mem::replace(&mut self.batch, next);
        let budget = session
            .db
            .reserve(std::mem::take(&mut self.batch_bytes))
            .await;
        let n = rows.len() as u64;
        let progress = self.resumable.as_ref().map(|r| Progress {
            session: Arc::clone(&r.id),
            sender: session.sender_id,
            offset: r.offset(),
        });
        session
            .db
            .send(Command::Rows(rows, progress, Some(budget)))
            .await
            .map_err(|()| "database writer is gone".to_owned())?;
        session.metrics.received.fetch_add(n, Ordering::Relaxed);
        if let Some(reg) = self.back.as_ref().and_then(|b| b.feedback.as_ref()) {
            reg.peer.rows.fetch_add(n, Ordering::Relaxed);
        }
        self.rows += n;
        Ok(())
    }
}

/// A numeric field value as f64 (feedback conditions compare numbers).
fn numeric(v: &omsp::Value) -> Option<f64> {
    use omsp::Value;
    match v {
        Value::Int32(x) => Some(f64::from(*x)),
        Value::UInt32(x) => Some(f64::from(*x)),
        Value::Int64(x) => Some(*x as f64),
        Value::UInt64(x) => Some(*x as f64),
        Value::Double(x) => Some(*x),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

/// Resolves when a newer connection takes the session over; never for a
/// connection without a resumable session.
async fn superseded(r: Option<&Resumable>) {
    match r {
        Some(r) => r.claim.superseded().await,
        None => std::future::pending().await,
    }
}

/// Resolves when this connection's rejects since its last summary line
/// are due to be summarised; never while it has none pending.
async fn summary_due(rejects: &ConnRejects) {
    match rejects.next_summary() {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// One read, bounded by `limit`: `Ok(None)` if nothing came in time.
async fn read_for<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut [u8],
    limit: Option<Duration>,
) -> std::io::Result<Option<usize>> {
    match limit {
        Some(d) => match tokio::time::timeout(d, stream.read(buf)).await {
            Ok(r) => r.map(Some),
            Err(_) => Ok(None),
        },
        None => stream.read(buf).await.map(Some),
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
