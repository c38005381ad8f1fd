//! The client side: one task per connection reads the header, picks the
//! journal, and appends whole tuples to it before anything is forwarded.
//! A resumable client (spec §3.6) gets the resume line and acknowledgements.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use omsp::{Decoder, Event, Header};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::config::FsyncPolicy;
use crate::framer::{Framer, Frames};
use crate::proxy::Shared;
use crate::registry::{Claim, Entry};
use omsp::session::{Line, Offer, SessionRequest};

/// Bytes per socket read.
const READ_CHUNK: usize = 256 << 10;

/// How long a finished connection waits to send its last acknowledgement.
const LAST_ACK: Duration = Duration::from_secs(3);

/// Decode errors logged per connection (the rest are only counted).
const LOGGED_ERRORS: usize = 10;

/// How long a connection keeps reading, after shutdown was requested, for
/// data its client had already sent (as the collection server does).
const DRAIN_WINDOW: Duration = Duration::from_millis(250);

/// Longest a connection drains after shutdown was requested.
const MAX_DRAIN: Duration = Duration::from_secs(2);

/// How a client connection ended.
#[derive(Debug, PartialEq, Eq)]
enum End {
    /// The client closed: its session is complete.
    Closed,
    /// A read failed (the client may come back, if resumable).
    Broken(String),
    /// The stream cannot be decoded any further.
    Fatal(String),
    /// A newer connection of the same session took over.
    Superseded,
    /// The proxy is shutting down.
    Shutdown,
}

/// Serves one client connection.
pub async fn serve(stream: TcpStream, peer: SocketAddr, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let (mut rd, wr) = stream.into_split();
    let mut decoder = Decoder::with_limits(shared.config.limits);
    let mut raw = Vec::new();
    let header = tokio::time::timeout(
        shared.config.header_timeout,
        read_header(&mut rd, &mut decoder, &mut raw),
    )
    .await;
    let header = match header {
        Ok(Ok(h)) => h,
        Ok(Err(reason)) if raw.is_empty() => {
            tracing::debug!(client = %peer, %reason, "client closed without sending anything");
            return;
        }
        Ok(Err(reason)) => {
            tracing::warn!(client = %peer, %reason, "client closed: no valid header");
            return;
        }
        Err(_) => {
            tracing::warn!(client = %peer, "client closed: no header within the timeout");
            return;
        }
    };
    let header_len = decoder.offset() as usize;
    let rest = raw.split_off(header_len);
    let offer = match Offer::from_header(&header) {
        Ok(o) => o,
        Err(reason) => {
            tracing::warn!(client = %peer, %reason, "client closed: bad session keys");
            return;
        }
    };
    // The proxy resumes sessions; control messages travel on a session's
    // back-channel only.
    let feedback = offer
        .as_ref()
        .is_some_and(|o| o.feedback && o.session.is_some());
    let request = offer.and_then(|o| o.session);
    let (entry, claim) = match attach(&shared, &header, &raw, request.as_ref()).await {
        Ok(x) => x,
        Err(reason) => {
            tracing::error!(client = %peer, %reason, "client closed: no journal");
            return;
        }
    };
    *entry.client.lock().unwrap_or_else(|p| p.into_inner()) = Some(peer);
    let span = tracing::info_span!("client", client = %peer, journal = entry.id);
    let _enter = span.enter();
    tracing::info!(
        domain = header.domain.as_deref(),
        sender = header.sender_id.as_deref(),
        resumable = request.is_some(),
        "client connected"
    );
    drop(_enter);
    let mut conn = Connection {
        entry: Arc::clone(&entry),
        shared: Arc::clone(&shared),
        pending: Vec::new(),
        pending_base: 0,
        errors: 0,
        feedback,
    };
    let mut write_half = None;
    let (acks, finished) = match &request {
        Some(r) => match conn.start_resumable(wr, r).await {
            Ok(x) => (Some(x.0), Some(x.1)),
            Err(reason) => {
                tracing::warn!(client = %peer, %reason, "client closed");
                detach(&entry, peer);
                return;
            }
        },
        None => {
            // Kept open, unused, until the end: dropping it would half-close
            // the connection, which the server never does either.
            write_half = Some(wr);
            (None, None)
        }
    };
    let (base, primed) = {
        let j = entry.lock();
        (j.end(), j.header_at(j.end()))
    };
    conn.pending_base = base;
    let framer = if base > 0 {
        // A resumed stream: the decoder learns every stream declared before
        // the resume offset from the journal (the client's header has to
        // declare only those before the offset it announced).
        match Framer::with_header(shared.config.limits, &primed, base, true) {
            Ok(mut f) => {
                f.feed(&rest);
                f
            }
            Err(reason) => {
                tracing::error!(journal = entry.id, %reason, "cannot re-read the journal's header");
                detach(&entry, peer);
                return;
            }
        }
    } else {
        // This decoder has been fed `rest` already.
        Framer::after_header(decoder, base, true)
    };
    let end = conn.run(rd, framer, rest, claim.as_ref()).await;
    let resumable = request.is_some();
    let closes = !resumable || matches!(end, End::Closed | End::Fatal(_));
    if closes {
        if let Err(e) = entry.lock().close() {
            tracing::error!(journal = entry.id, error = %e, "cannot record the end of the stream");
        }
    }
    if let Err(e) = entry.sync().await {
        tracing::error!(journal = entry.id, error = %e, "journal sync failed");
    }
    entry.bump();
    if let (Some(acks), Some(finished)) = (acks, finished) {
        let _ = finished.send(true);
        let mut acks = acks;
        if end == End::Superseded || tokio::time::timeout(LAST_ACK, &mut acks).await.is_err() {
            acks.abort();
        }
    }
    detach(&entry, peer);
    drop(write_half);
    let bytes = entry.lock().end() - base;
    match end {
        End::Closed => tracing::info!(client = %peer, journal = entry.id, bytes, "client closed"),
        End::Superseded => {
            tracing::info!(client = %peer, journal = entry.id, bytes, "client connection superseded by a newer one")
        }
        End::Shutdown => {
            tracing::info!(client = %peer, journal = entry.id, bytes, "client connection closed: shutting down")
        }
        End::Broken(reason) | End::Fatal(reason) => {
            tracing::warn!(client = %peer, journal = entry.id, bytes, %reason, "client connection ended on error")
        }
    }
}

fn detach(entry: &Entry, peer: SocketAddr) {
    let mut c = entry.client.lock().unwrap_or_else(|p| p.into_inner());
    if *c == Some(peer) {
        *c = None;
    }
}

/// Reads until the decoder has the header.
async fn read_header(
    rd: &mut tokio::net::tcp::OwnedReadHalf,
    decoder: &mut Decoder,
    raw: &mut Vec<u8>,
) -> Result<Header, String> {
    let mut buf = vec![0u8; 8192];
    loop {
        match decoder.next_event() {
            Some(Ok(Event::Header(h))) => return Ok(h),
            Some(Err(e)) => return Err(e.to_string()),
            Some(Ok(_)) => return Err("data before the header".into()),
            None => {}
        }
        let n = rd.read(&mut buf).await.map_err(|e| e.to_string())?;
        if n == 0 {
            decoder.finish();
            if let Some(Err(e)) = decoder.next_event() {
                return Err(e.to_string());
            }
            return Err("closed before the end of the header".into());
        }
        raw.extend_from_slice(&buf[..n]);
        decoder.feed(&buf[..n]);
    }
}

/// Finds or creates the journal for a client.
async fn attach(
    shared: &Arc<Shared>,
    header: &Header,
    raw: &[u8],
    request: Option<&SessionRequest>,
) -> Result<(Arc<Entry>, Option<Claim>), String> {
    let Some(r) = request else {
        let entry = shared.registry.create(raw, None)?;
        shared.spawn_forwarder(Arc::clone(&entry));
        return Ok((entry, None));
    };
    if let Some(entry) = shared.registry.find(header.domain.as_deref(), r) {
        let claim = entry.claim().await?;
        return Ok((entry, Some(claim)));
    }
    let entry = shared.registry.create(raw, Some(&r.id))?;
    let claim = entry.claim().await?;
    shared.spawn_forwarder(Arc::clone(&entry));
    Ok((entry, Some(claim)))
}

/// State of one client connection after its header.
struct Connection {
    /// Its journal.
    entry: Arc<Entry>,
    /// Proxy state.
    shared: Arc<Shared>,
    /// Bytes received but not journaled (an unfinished tuple).
    pending: Vec<u8>,
    /// Data offset of `pending[0]`.
    pending_base: u64,
    /// Decode errors seen.
    errors: usize,
    /// The client accepts control messages (relayed from the upstream).
    feedback: bool,
}

impl Connection {
    /// Answers the resume line and starts the acknowledgements.
    async fn start_resumable(
        &mut self,
        mut wr: OwnedWriteHalf,
        request: &SessionRequest,
    ) -> Result<(tokio::task::JoinHandle<()>, watch::Sender<bool>), String> {
        // Everything the resume offset covers must be durable.
        self.entry
            .sync()
            .await
            .map_err(|e| format!("journal sync: {e}"))?;
        let resume = self.entry.lock().end();
        if request.offset > resume {
            tracing::info!(
                journal = self.entry.id,
                announced = request.offset,
                resume,
                "client announced more than the journal holds: it resends from the journal's end"
            );
        }
        wr.write_all(Line::Resume(resume).to_string().as_bytes())
            .await
            .map_err(|e| format!("writing the resume line: {e}"))?;
        let (finished, finished_rx) = watch::channel(false);
        let controls = if self.feedback {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            self.entry.attach_controls(tx);
            Some(rx)
        } else {
            None
        };
        let acks = tokio::spawn(send_acks(
            wr,
            Arc::clone(&self.entry),
            resume,
            finished_rx,
            controls,
        ));
        Ok((acks, finished))
    }

    async fn run(
        &mut self,
        mut rd: tokio::net::tcp::OwnedReadHalf,
        mut framer: Framer,
        first: Vec<u8>,
        claim: Option<&Claim>,
    ) -> End {
        let mut shutdown = self.shared.shutdown.subscribe();
        let mut buf = vec![0u8; READ_CHUNK];
        // `first` (read with the header) is in the framer already.
        self.pending.extend_from_slice(&first);
        let mut eof = false;
        // Set once shutdown is requested: what the client had already sent
        // is still read and journaled, until it pauses or this deadline.
        let mut drain_until: Option<Instant> = None;
        loop {
            if let Err(reason) = self.journal(&mut framer).await {
                return End::Fatal(reason);
            }
            if eof {
                if !self.pending.is_empty() {
                    tracing::warn!(
                        journal = self.entry.id,
                        bytes = self.pending.len(),
                        "client closed inside a tuple: its incomplete last tuple is not forwarded"
                    );
                }
                return End::Closed;
            }
            if drain_until.is_none() && *shutdown.borrow_and_update() {
                drain_until = Some(Instant::now() + MAX_DRAIN);
            }
            let window = match drain_until {
                Some(until) if Instant::now() >= until => return End::Shutdown,
                Some(until) => DRAIN_WINDOW.min(until - Instant::now()),
                None => Duration::MAX,
            };
            let read = tokio::select! {
                r = tokio::time::timeout(window, rd.read(&mut buf)) => match r {
                    Ok(r) => r,
                    // Draining, and the client sent nothing more.
                    Err(_) => return End::Shutdown,
                },
                () = superseded(claim) => return End::Superseded,
                _ = shutdown.changed(), if drain_until.is_none() => continue,
            };
            match read {
                Ok(0) => {
                    framer.finish();
                    eof = true;
                }
                Ok(n) => {
                    framer.feed(&buf[..n]);
                    self.pending.extend_from_slice(&buf[..n]);
                }
                Err(e) => {
                    let _ = self.journal(&mut framer).await;
                    return End::Broken(format!("read: {e}"));
                }
            }
        }
    }

    /// Appends every whole tuple received so far.
    async fn journal(&mut self, framer: &mut Framer) -> Result<(), String> {
        let mut frames = Frames {
            boundary: self.pending_base,
            ..Frames::default()
        };
        let drained = framer.drain(&mut frames);
        for e in &frames.errors {
            self.errors += 1;
            if self.errors <= LOGGED_ERRORS {
                tracing::warn!(journal = self.entry.id, offset = e.offset, error = %e.kind,
                    "client sent data the decoder rejects: journaled as is, the upstream will skip it");
            }
        }
        let n = (frames.boundary - self.pending_base) as usize;
        if n > 0 || !frames.declarations.is_empty() {
            self.shared.registry.reserve(n as u64).await;
            self.entry
                .lock()
                .append(&self.pending[..n], frames.declarations)
                .map_err(|e| format!("journal write failed: {e}"))?;
            self.pending.drain(..n);
            self.pending_base += n as u64;
            if self.shared.registry.fsync() == FsyncPolicy::Always {
                self.entry
                    .sync()
                    .await
                    .map_err(|e| format!("journal sync failed: {e}"))?;
            }
            self.entry.bump();
        }
        drained.map_err(|e| format!("the client's stream cannot be decoded further: {e}"))
    }
}

async fn superseded(claim: Option<&Claim>) {
    match claim {
        Some(c) => c.superseded().await,
        None => std::future::pending().await,
    }
}

/// Sends `streamgauge-ack` whenever the journal's durable offset moves,
/// and a last one once the connection is finished; relays the upstream's
/// control lines to a client that asked for feedback.
async fn send_acks(
    mut wr: OwnedWriteHalf,
    entry: Arc<Entry>,
    resumed: u64,
    mut finished: watch::Receiver<bool>,
    mut controls: Option<tokio::sync::mpsc::UnboundedReceiver<String>>,
) {
    let mut changed = entry.changed.subscribe();
    let mut sent = resumed;
    loop {
        changed.borrow_and_update();
        let done = *finished.borrow_and_update();
        let durable = entry.lock().durable();
        if durable > sent {
            if wr
                .write_all(Line::Ack(durable).to_string().as_bytes())
                .await
                .is_err()
            {
                return;
            }
            sent = durable;
        }
        if done {
            let _ = wr.shutdown().await;
            return;
        }
        tokio::select! {
            r = changed.changed() => if r.is_err() { return },
            r = finished.changed() => if r.is_err() { return },
            Some(line) = next_control(&mut controls) => {
                if wr.write_all(line.as_bytes()).await.is_err() {
                    // Not delivered: the next connection of this client gets it.
                    entry.relay_control(line);
                    return;
                }
            }
        }
    }
}

/// The next control line to relay; never ready without a relay.
async fn next_control(
    controls: &mut Option<tokio::sync::mpsc::UnboundedReceiver<String>>,
) -> Option<String> {
    match controls {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
