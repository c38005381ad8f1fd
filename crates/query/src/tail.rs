//! `GET …/tail`: new rows as Server-Sent Events (`event: row`, `id:` the
//! row's `oml_tuple_id`, `data:` a JSON object). Resumes after
//! `Last-Event-ID` or `?after=`; without either it starts at the end.
//!
//! The tail reads with its own connection, woken by the [`CommitFeed`]
//! (or every `poll` without one), so ingestion never waits for a client.
//! A client that falls more than `max_lag` rows behind gets a final
//! `event: lagged` naming the id to resume from, and is closed.
//!
//! [`CommitFeed`]: crate::CommitFeed

use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use crate::auth::Caller;
use crate::error::QueryError;
use crate::exec::open;
use crate::export::{columns, Cell, Column, ExportError, Source, Timestamps};
use crate::format::json::api_value;
use crate::plan;
use crate::request::RowsRequest;
use crate::sql::Sql;
use crate::state::QueryState;

/// Rows read per round.
const BATCH: u64 = 1000;
/// Events queued towards the client.
const QUEUE: usize = 256;

/// What a tail needs between rounds.
struct Tail {
    /// The domain's connection.
    src: Source,
    /// The stream's table.
    table: String,
    /// Parsed filters and columns.
    req: RowsRequest,
    /// Last id sent.
    last: i64,
}

/// Starts a tail; errors (404, 400) are answered before the stream opens.
pub async fn tail(
    state: QueryState,
    caller: Caller,
    domain: String,
    stream: String,
    pairs: Vec<(String, String)>,
    last_event_id: Option<String>,
) -> Response {
    let st = state.clone();
    let d = domain.clone();
    let opened = tokio::task::spawn_blocking(move || -> Result<Tail, QueryError> {
        let mut src = open(&st, &caller, &d)?;
        let schema = crate::catalog::find_stream(&mut src, &d, &stream)?;
        let start = src.start_time().map_err(QueryError::Database)?.unwrap_or(0);
        let mut req = RowsRequest::parse(&pairs, &columns(&schema), start)?;
        crate::exec::corrected_if_possible(&mut src, &mut req)?;
        req.limit = Some(BATCH);
        let resume = last_event_id.or_else(|| req.after.map(|a| a.to_string()));
        let last = match resume {
            Some(v) => v.trim().parse::<i64>().map_err(|_| {
                QueryError::bad("after", format!("{v:?}: give an event id (oml_tuple_id)"))
            })?,
            None => max_id(&mut src, &schema.name).map_err(QueryError::Database)?,
        };
        Ok(Tail {
            src,
            table: schema.name,
            req,
            last,
        })
    })
    .await;
    let tail = match opened {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => return e.into_response(),
        Err(_) => return crate::auth::ApiError::internal("tail set-up failed").into_response(),
    };
    let (tx, rx) = mpsc::channel::<Result<Event, Infallible>>(QUEUE);
    tokio::spawn(run(state, domain, tail, tx));
    let stream =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
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

/// One round: the rows after `t.last`, and how far behind the end we are.
fn round(t: &mut Tail) -> Result<(Vec<(i64, Value)>, i64), ExportError> {
    t.req.after = Some(t.last);
    let sql = plan::rows(t.src.dialect(), &t.table, &t.req);
    let cols: Vec<Column> = plan::selected(&t.req);
    let times = Timestamps::new(None);
    let mut out = Vec::new();
    let int64_string = t.req.int64_string;
    let limit = t.req.limit.unwrap_or(BATCH) as usize;
    t.src.run(&sql, &cols, |cells| {
        if out.len() < limit {
            if let Cell::Int(id) = cells[0] {
                let mut m = Map::new();
                for (c, v) in cols[1..].iter().zip(&cells[1..]) {
                    m.insert(c.name.clone(), api_value(v, c.kind, times, int64_string));
                }
                out.push((id, Value::Object(m)));
            }
        }
        Ok(())
    })?;
    if let Some((id, _)) = out.last() {
        t.last = *id;
    }
    let end = max_id(&mut t.src, &t.table)?;
    Ok((out, end - t.last))
}

async fn run(
    state: QueryState,
    domain: String,
    mut t: Tail,
    tx: mpsc::Sender<Result<Event, Infallible>>,
) {
    let mut feed = state.feed.as_ref().map(|f| f.subscribe(&domain));
    loop {
        let r = tokio::task::spawn_blocking(move || {
            let r = round(&mut t);
            (t, r)
        })
        .await;
        let Ok((back, r)) = r else { return };
        t = back;
        let (rows, lag) = match r {
            Ok(x) => x,
            Err(e) => {
                let data = json!({"code": "database_error", "message": e.to_string()});
                let _ = tx
                    .send(Ok(Event::default().event("error").data(data.to_string())))
                    .await;
                return;
            }
        };
        let full = rows.len() as u64 >= BATCH;
        for (id, row) in rows {
            let ev = Event::default()
                .event("row")
                .id(id.to_string())
                .data(row.to_string());
            if tx.send(Ok(ev)).await.is_err() {
                return; // The client went away.
            }
        }
        if lag > state.max_lag as i64 {
            let data = json!({
                "code": "lagged",
                "message": format!("this client is {lag} rows behind (more than {}): fetch the gap with GET …/rows?after={} and tail again", state.max_lag, t.last),
                "resume_after": t.last,
            });
            let _ = tx
                .send(Ok(Event::default().event("lagged").data(data.to_string())))
                .await;
            return;
        }
        if full {
            continue;
        }
        match feed.as_mut() {
            Some(f) => {
                // The poll stays as a safety net; a closed feed falls back to it.
                let waited =
                    tokio::time::timeout(state.poll.max(Duration::from_secs(5)), f.changed()).await;
                if matches!(waited, Ok(Err(_))) {
                    feed = None;
                }
            }
            None => tokio::time::sleep(state.poll).await,
        }
        if tx.is_closed() {
            return;
        }
    }
}
