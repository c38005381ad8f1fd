//! `GET …/tail`: new rows as Server-Sent Events (`event: row`, `id:` the
//! row's `oml_tuple_id`, `data:` a JSON object; with `batch=true`, one
//! `event: rows` per batch, a JSON array per row on its own `data:` line,
//! after an opening `event: fields` naming the values). Resumes after
//! `Last-Event-ID` or `?after=`; without either it starts at the end.
//!
//! The tail reads with its own connection, woken by the [`CommitFeed`]
//! (or every `poll` without one), so ingestion never waits for a client.
//! A client that falls more than `max_lag` rows behind gets a final
//! `event: lagged` naming the id to resume from, and is closed.
//!
//! Clients following the same request share one reader ([`hub`]): a
//! client reads on its own connection only to catch up (after joining, or
//! after falling behind the shared reader), then takes the shared
//! reader's batches, rendered once as SSE text ([`frames`]).
//!
//! A tail ends when its client does, wherever it waits, and gives back its
//! connections, its task and its place among the
//! [`QueryState::max_tails`] tails allowed at once ([`slots`]); a client
//! that vanished without closing is found out by the heartbeat.
//!
//! [`CommitFeed`]: crate::CommitFeed

use std::sync::Arc;
use std::time::Duration;

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::json;
use tokio::sync::{broadcast, mpsc, watch};

use crate::auth::Caller;
use crate::error::QueryError;
use crate::exec::open;
use crate::export::{columns, Cell, Column, Conn, ExportError, Source, Timestamps};
use crate::format::json::write_api_value;
use crate::plan;
use crate::request::RowsRequest;
use crate::sql::{Dialect, Sql};
use crate::state::{CommitFeed, QueryState};

mod committed;
mod frames;
mod hub;
mod slots;
pub use committed::rows_from_commits;
use frames::{Frames, FramesBuilder};
pub use hub::Hub;
use hub::Subscription;
pub use slots::Slots;

/// Rows read in a round that follows a short one (the usual case: a
/// commit's worth of new rows).
const BATCH: u64 = 1000;
/// Rows read in a round while behind: each full round reads four times as
/// many as the last, up to this, so catching up after a large commit takes
/// a few queries rather than one per thousand rows.
const MAX_BATCH: u64 = 16_000;
/// Batches (of up to [`BATCH`] rows) queued towards the client.
const QUEUE: usize = 4;
/// On PostgreSQL, the longest an idle reader waits before it reads again
/// though no commit of this process woke it: other collection servers
/// may commit to the same database (docs/scale-out.md), and nothing tells
/// us when. Each time costs one or two indexed reads past the last id
/// sent, per reader. Rows another server commits reach tails here within
/// about this, or, while this process commits too, once the end its
/// writer published ([`CommitFeed::committed_end`]) is no longer fresh
/// (the server keeps one a second) or a later commit moves it past them.
const OTHER_WRITERS: Duration = Duration::from_millis(500);

/// What a tail needs between rounds.
pub struct Tail {
    /// The domain's connection.
    src: Conn,
    /// The stream's table.
    table: String,
    /// Parsed filters and columns.
    req: RowsRequest,
    /// Last id sent.
    last: i64,
    /// Rows to read in the next round.
    batch: u64,
    /// One event per batch (`batch=true`) rather than per row.
    batched: bool,
    /// The domain, and what tells its committed ends (see [`Tail::end`]).
    domain: String,
    feed: Option<Arc<dyn CommitFeed>>,
}

impl Tail {
    /// Whether other processes may commit rows to this stream unseen by
    /// the [`CommitFeed`]: on PostgreSQL, where several servers may share
    /// a domain (a SQLite file has one writer, this process).
    fn others(&self) -> bool {
        self.src.dialect() == Dialect::Postgres
    }

    /// On PostgreSQL, the highest committed id of the stream if the writer
    /// published it (see [`CommitFeed::committed_end`]).
    fn end(&self) -> Option<i64> {
        if self.src.dialect() != Dialect::Postgres {
            return None;
        }
        self.feed.as_ref()?.committed_end(&self.domain, &self.table)
    }
}

/// Starts a tail; errors (404, 400, and 503 beyond
/// [`QueryState::max_tails`]) are answered before the stream opens.
pub async fn tail(
    state: QueryState,
    caller: Caller,
    domain: String,
    stream: String,
    pairs: Vec<(String, String)>,
    last_event_id: Option<String>,
) -> Response {
    let Some(slot) = state.tail_slots.admit(state.max_tails) else {
        return slots::refused(state.max_tails);
    };
    let resume = last_event_id.or_else(|| {
        pairs
            .iter()
            .find(|(k, _)| k == "after")
            .map(|(_, v)| v.clone())
    });
    let opened = open_tail(&state, &caller, &domain, &stream, &pairs, resume).await;
    let tail = match opened {
        Ok(t) => t,
        Err(e) => return e.into_response(),
    };
    let follow = Follow {
        key: hub_key(&domain, &tail.table, &pairs),
        caller,
        stream,
        pairs,
    };
    let (tx, rx) = mpsc::channel::<Bytes>(QUEUE);
    if tail.batched {
        let cols = plan::selected(&tail.req);
        // The queue is empty: this cannot wait.
        let _ = tx.try_send(frames::fields(cols[1..].iter().map(|c| c.name.as_str())));
    }
    tokio::spawn(async move {
        // The tail ends when its client does, wherever it waits (for a
        // commit, a shared batch, room in the queue): the response's
        // heartbeat fails to write, the body and `rx` with it are dropped,
        // and dropping `run` here gives back its connections (a round
        // under way finishes first), its subscription and the slot.
        let gone = tx.clone();
        tokio::select! {
            biased;
            () = gone.closed() => {}
            () = run(state, domain, follow, tail, tx) => {}
        }
        drop(slot);
    });
    frames::response(rx)
}

/// Opens a connection for a tail of `stream`, positioned after `resume`
/// (an id) or at the end of the stream.
async fn open_tail(
    state: &QueryState,
    caller: &Caller,
    domain: &str,
    stream: &str,
    pairs: &[(String, String)],
    resume: Option<String>,
) -> Result<Tail, QueryError> {
    let (st, caller, d, stream, pairs) = (
        state.clone(),
        caller.clone(),
        domain.to_owned(),
        stream.to_owned(),
        pairs.to_vec(),
    );
    let opened = tokio::task::spawn_blocking(move || -> Result<Tail, QueryError> {
        let mut src = open(&st, &caller, &d)?;
        let schema = crate::catalog::find_stream(&mut src, &d, &stream)?;
        let start = src.start_time().map_err(QueryError::Database)?.unwrap_or(0);
        let mut req = RowsRequest::parse(&pairs, &columns(&schema), start)?;
        refuse_derived(&req)?;
        crate::exec::corrected_if_possible(&mut src, &mut req)?;
        req.limit = Some(BATCH);
        let batched = match pairs.iter().rev().find(|(k, _)| k == "batch") {
            None => false,
            Some((_, v)) => match v.as_str() {
                "true" | "1" => true,
                "false" | "0" => false,
                other => {
                    return Err(QueryError::bad(
                        "batch",
                        format!("{other:?}: use true (one event per batch of rows) or false"),
                    ))
                }
            },
        };
        let last = match resume {
            Some(v) => v.trim().parse::<i64>().map_err(|_| {
                QueryError::bad("after", format!("{v:?}: give an event id (oml_tuple_id)"))
            })?,
            None => {
                let published = (src.dialect() == Dialect::Postgres)
                    .then(|| st.feed.as_ref()?.committed_end(&d, &schema.name))
                    .flatten();
                match published {
                    Some(end) => end,
                    None => max_id(&mut src, &schema.name).map_err(QueryError::Database)?,
                }
            }
        };
        Ok(Tail {
            src: Conn::new(src),
            table: schema.name,
            req,
            last,
            batch: BATCH,
            batched,
            domain: d,
            feed: st.feed.clone(),
        })
    })
    .await;
    opened.unwrap_or_else(|_| {
        Err(QueryError::Database(ExportError::Invalid(
            "tail set-up failed".into(),
        )))
    })
}

/// What identifies the rows a tail sends: the stream and every parameter
/// but the starting point.
fn hub_key(domain: &str, table: &str, pairs: &[(String, String)]) -> String {
    let mut params: Vec<&(String, String)> = pairs.iter().filter(|(k, _)| k != "after").collect();
    params.sort();
    let mut key = format!("{domain}\0{table}");
    for (k, v) in params {
        key.push('\0');
        key.push_str(k);
        key.push('=');
        key.push_str(v);
    }
    key
}

/// What a tail needs to start (or rejoin) the shared reader of its request.
struct Follow {
    /// The shared reader's key.
    key: String,
    /// Who asked (the shared reader opens with the same rights).
    caller: Caller,
    /// The stream, as asked.
    stream: String,
    /// The request's parameters.
    pairs: Vec<(String, String)>,
}

fn max_id(src: &mut Source, table: &str) -> Result<i64, ExportError> {
    let mut sql = Sql::new(src.dialect());
    sql.push("SELECT CAST(max(oml_tuple_id) AS TEXT) FROM ")
        .ident(table);
    Ok(src
        .text_rows(&sql)?
        .first()
        .and_then(|r| r[0].as_deref()?.parse().ok())
        .unwrap_or(0))
}

/// One round: the rows after `t.last` as events, and how far behind the
/// end we are.
///
/// On PostgreSQL, a scan for the rows after the last one sent runs on,
/// past the last committed row, through every row of the writer's open
/// transaction (invisible, but each one checked), on the very pages the
/// writer is filling. When the request selects every row (no time,
/// sender or value filter) its ids are dense, so the round reads ids up
/// to `last + batch` only: fewer rows than a batch then means the
/// committed end. A round that finds nothing under that bound (ids a
/// rolled-back transaction used, or nothing new) looks once without it.
/// Where the writer published the stream's committed end, a dense round
/// reads no further than it, and passes over ids below it that no row
/// holds (every row up to the end is committed); none reads anything once
/// the tail is there. Rows the writer handed over after committing them
/// are rendered from there, not read at all ([`committed`]).
fn round(t: &mut Tail) -> Result<Round, ExportError> {
    let limit = t.batch as usize;
    t.req.limit = Some(t.batch);
    let dense = t.src.dialect() == Dialect::Postgres
        && t.req.from.is_none()
        && t.req.to.is_none()
        && t.req.senders.is_empty()
        && t.req.predicates.is_empty();
    let window = t.last.saturating_add(limit as i64);
    let handed = dense
        .then(|| t.feed.as_ref()?.committed_rows(&t.domain, &t.table, t.last))
        .flatten();
    // Before a handed batch that starts further on, the table holds the
    // rows (committed before it): read up to it.
    let gap = handed
        .as_ref()
        .filter(|rows| rows.first > t.last + 1)
        .map(|rows| rows.first - 1);
    let rendered = handed.and_then(|rows| Some((committed::render(t, &rows, limit)?, rows.last())));
    let (out, full, lag) = match rendered {
        Some((out, last)) => {
            // Without a fresh end, rows past the batch may be in the table
            // (committed by another server): the next round looks.
            let end = t.end();
            let full = end.is_none_or(|e| t.last < e);
            (out, full, end.unwrap_or(last).max(last) - t.last)
        }
        None => match dense.then(|| t.end().or(gap)).flatten() {
            Some(end) => {
                let hi = end.min(window).min(gap.unwrap_or(end));
                let mut out = FramesBuilder::new(std::iter::empty::<&str>(), t.batched);
                if hi > t.last {
                    t.req.until = Some(hi);
                    out = read(t, limit)?;
                    if out.is_empty() {
                        t.last = hi;
                    }
                }
                // More below the end, or the handed batch right after the
                // gap: go on at once. (Stopping at the gap waited for the
                // next wake-up, OTHER_WRITERS once this server's own
                // commits stopped, for each batch it had handed over
                // between another server's rows.)
                let full = out.len() >= limit || t.last < end || gap == Some(t.last);
                (out, full, (end - t.last).max(0))
            }
            None => {
                t.req.until = dense.then_some(window);
                let mut out = read(t, limit)?;
                if dense && out.is_empty() {
                    t.req.until = None;
                    out = read(t, limit)?;
                }
                // Less than a full batch: nothing left to read, no lag. Only a
                // full batch asks where the end is (on PostgreSQL, max() also
                // walks back over the writer's open transaction).
                let full = out.len() >= limit;
                let lag = if full {
                    max_id(&mut t.src, &t.table)? - t.last
                } else {
                    0
                };
                (out, full, lag)
            }
        },
    };
    t.batch = if full {
        t.batch.saturating_mul(4).min(MAX_BATCH)
    } else {
        BATCH
    };
    Ok(Round {
        rows: out.finish(),
        lag,
        full,
    })
}

/// What one round read.
struct Round {
    /// The rows, as events.
    rows: Frames,
    /// How far behind the end of the stream the tail still is.
    lag: i64,
    /// Whether the round read all it asked for (more may be waiting).
    full: bool,
}

/// Reads up to `limit` rows after `t.last` as events; moves `t.last`.
fn read(t: &mut Tail, limit: usize) -> Result<FramesBuilder, ExportError> {
    t.req.after = Some(t.last);
    let sql = plan::rows(t.src.dialect(), &t.table, &t.req);
    let cols: Vec<Column> = plan::selected(&t.req);
    let times = Timestamps::new(None);
    let mut out = FramesBuilder::new(cols[1..].iter().map(|c| c.name.as_str()), t.batched);
    let int64_string = t.req.int64_string;
    let mut last = t.last;
    t.src.run(&sql, &cols, |cells| {
        if out.len() < limit {
            if let Cell::Int(id) = cells[0] {
                out.row(id, |i, buf| {
                    write_api_value(buf, &cells[i + 1], cols[i + 1].kind, times, int64_string)
                });
                last = id;
            }
        }
        Ok(())
    })?;
    t.last = last;
    READ.fetch_add(out.len() as u64, std::sync::atomic::Ordering::Relaxed);
    Ok(out)
}

/// Rows live tails read from the table since the process started.
static READ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Rows live tails read from the table (not taken from the writer's
/// commits) since the process started; every subscriber's reads count,
/// the shared reader's and those of a subscriber catching up on its own.
pub fn rows_read_back() -> u64 {
    READ.load(std::sync::atomic::Ordering::Relaxed)
}

async fn run(
    state: QueryState,
    domain: String,
    follow: Follow,
    mut t: Tail,
    tx: mpsc::Sender<Bytes>,
) {
    let mut feed = state.feed.as_ref().map(|f| f.subscribe(&domain));
    loop {
        // Join the shared reader first, then catch up on our own: every row
        // the reader had passed when we joined is read here.
        let sub = match join(&state, &domain, &follow).await {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::debug!(error = ?e, "tail reads on its own");
                None
            }
        };
        loop {
            if let Some((_, pos)) = &sub {
                if t.last >= *pos {
                    break; // The shared reader's batches hold the rest.
                }
            }
            let before = t.last;
            let r = tokio::task::spawn_blocking(move || {
                let r = round(&mut t);
                (t, r)
            })
            .await;
            let Ok((back, r)) = r else { return };
            t = back;
            let Round { rows, lag, full } = match r {
                Ok(x) => x,
                Err(e) => {
                    let data = json!({"code": "database_error", "message": e.to_string()});
                    let _ = tx.send(frames::event("error", &data)).await;
                    return;
                }
            };
            if let Some((text, _)) = rows.after(i64::MIN) {
                if tx.send(text).await.is_err() {
                    return; // The client went away.
                }
            }
            if lag > state.max_lag as i64 {
                let data = json!({
                    "code": "lagged",
                    "message": format!("this client is {lag} rows behind (more than {}): fetch the gap with GET …/rows?after={} and tail again", state.max_lag, t.last),
                    "resume_after": t.last,
                });
                let _ = tx.send(frames::event("lagged", &data)).await;
                return;
            }
            if full {
                continue;
            }
            if let Some((_, pos)) = &sub {
                // Below the shared reader's position lie rows it sent
                // before we joined: read on while there are any (a round
                // that finds none has passed ids no row holds).
                if t.last > before && t.last < *pos {
                    continue;
                }
                break; // Caught up: follow the shared reader.
            }
            // No shared reader (it could not start): wait for commits.
            wait(&state, &mut feed, t.others()).await;
            if tx.is_closed() {
                return;
            }
        }
        let Some((mut sub, _)) = sub else { continue };
        // Follow until we fall behind the shared reader or it ends; then
        // read on our own again from where we are.
        loop {
            match sub.recv().await {
                Ok(batch) => {
                    let Some((text, last)) = batch.after(t.last) else {
                        continue; // Read while catching up.
                    };
                    if tx.send(text).await.is_err() {
                        return; // The client went away.
                    }
                    t.last = last;
                }
                Err(broadcast::error::RecvError::Lagged(_)) => break,
                Err(broadcast::error::RecvError::Closed) => {
                    if tx.is_closed() {
                        return;
                    }
                    break;
                }
            }
        }
    }
}

/// Subscribes to the shared reader of this request, starting it if none
/// runs.
async fn join(state: &QueryState, domain: &str, f: &Follow) -> Result<Subscription, QueryError> {
    if let Some(sub) = state.tails.subscribe(&f.key) {
        return Ok(sub);
    }
    let reader = open_tail(state, &f.caller, domain, &f.stream, &f.pairs, None).await?;
    Ok(state
        .tails
        .start(f.key.clone(), state.clone(), domain.to_owned(), reader))
}

/// Waits for the domain's next commit (or the poll period without a
/// feed; the poll stays as a safety net with one, and a closed feed falls
/// back to it). With `others`, for at most [`OTHER_WRITERS`]: the feed
/// tells only this process's commits. Without a feed, the poll period
/// already catches every writer's commits.
async fn wait(state: &QueryState, feed: &mut Option<watch::Receiver<u64>>, others: bool) {
    match feed.as_mut() {
        Some(f) => {
            let most = if others {
                OTHER_WRITERS
            } else {
                state.poll.max(Duration::from_secs(5))
            };
            let waited = tokio::time::timeout(most, f.changed()).await;
            if matches!(waited, Ok(Err(_))) {
                *feed = None;
            }
        }
        None => tokio::time::sleep(state.poll).await,
    }
}

/// Rates and gaps are answers over a range (`rows`), not over a tail's
/// rows as they come: say so rather than send stored values.
fn refuse_derived(req: &RowsRequest) -> Result<(), QueryError> {
    if req.derive != crate::request::Derive::None {
        return Err(QueryError::bad(
            "derive",
            "derive= is not supported on tails: ask rows?derive=rate&from=… for the rates so far, and compute the rate of new rows from consecutive tail rows",
        ));
    }
    if req.gaps.is_some() {
        return Err(QueryError::bad(
            "gaps",
            "gaps= is not supported on tails: ask rows?gaps=… for a range",
        ));
    }
    Ok(())
}
