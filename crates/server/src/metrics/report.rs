//! `--self-domain NAME`: the server stores its own state as measurement
//! streams, through the same writer path as its clients (no TCP loopback).
//!
//! - `server_clients` — the reference's `clients` measurement point
//!   (`address:string port:int32 node_id:string domain:string
//!   appname:string event:string message:string`): one row per `Connect`,
//!   `Ready` (header accepted) and `Disconnect` (message `SOCKET_CONN_CLOSED`,
//!   `SOCKET_IDLE`, `SERVER_SHUTDOWN` or `C_PROTOCOL_ERROR`).
//! - `server_stats` — once per second, the totals of [`Metrics::totals`]
//!   over every other domain.
//!
//! Both go into `<data-dir>/<NAME>.sq3` with sender `server`, once per
//! second and once more at shutdown. When the session opens, the
//! cumulative columns of `server_stats` are declared counters (metadata
//! `kind=counter` on `.server_stats.<column>`, as clients declare units),
//! so the query API can serve their rates and plots draw rates by default.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use omsp::{Schema, Value};
use store::{Row, TableId};
use tokio::sync::{mpsc, oneshot};

use super::{CloseReason, Metrics, Totals};
use crate::registry::{DbClient, Registry};
use crate::shutdown::Shutdown;
use crate::writer::{Attached, Command};

/// The `clients` stream (the reference's `server_clients` table).
pub const CLIENTS_SCHEMA: &str = "1 server_clients address:string port:int32 node_id:string \
     domain:string appname:string event:string message:string";

/// The `stats` stream.
pub const STATS_SCHEMA: &str = "2 server_stats connections_accepted:uint64 \
     connections_open:uint64 bytes_received:uint64 tuples_received:uint64 \
     tuples_stored:uint64 tuples_rejected:uint64 decode_errors:uint64 commits:uint64 \
     writer_backlog:uint64 reject_log_lines_suppressed:uint64";

/// The `server_stats` columns that are not counters (gauges of now).
const STATS_GAUGES: &[&str] = &["connections_open", "writer_backlog"];

/// The `sender-id` of the server's own rows.
pub const SENDER: &str = "server";

/// How often state is written.
pub const PERIOD: Duration = Duration::from_secs(1);

/// Connection events kept while the reporter is busy; more are dropped.
pub const EVENT_QUEUE: usize = 4096;

/// One row of `server_clients`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientEvent {
    /// Client IP address.
    pub address: String,
    /// Client port.
    pub port: u16,
    /// The client's `sender-id` (empty before its header).
    pub node_id: String,
    /// Its domain (empty before its header).
    pub domain: String,
    /// Its `app-name` (empty before its header).
    pub appname: String,
    /// `Connect`, `Ready` or `Disconnect`.
    pub event: &'static str,
    /// Why it disconnected (empty otherwise).
    pub message: String,
}

impl ClientEvent {
    /// The reference's disconnect message for a close reason.
    pub fn disconnect_message(reason: CloseReason) -> &'static str {
        match reason {
            CloseReason::Closed => "SOCKET_CONN_CLOSED",
            CloseReason::Idle => "SOCKET_IDLE",
            CloseReason::Shutdown => "SERVER_SHUTDOWN",
            CloseReason::Error => "C_PROTOCOL_ERROR",
        }
    }

    fn values(self) -> Vec<Value> {
        vec![
            Value::String(self.address),
            Value::Int32(i32::from(self.port)),
            Value::String(self.node_id),
            Value::String(self.domain),
            Value::String(self.appname),
            Value::String(self.event.to_owned()),
            Value::String(self.message),
        ]
    }
}

fn stats_values(t: Totals) -> Vec<Value> {
    [
        t.connections_accepted,
        t.connections_open,
        t.bytes_received,
        t.tuples_received,
        t.tuples_stored,
        t.tuples_rejected,
        t.decode_errors,
        t.commits,
        t.writer_backlog,
        t.reject_log_lines_suppressed,
    ]
    .into_iter()
    .map(Value::UInt64)
    .collect()
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The open self-reporting session.
struct Session {
    /// Membership of the self domain's database.
    db: DbClient,
    /// Our `oml_sender_id`.
    sender: i64,
    /// Our start time (Unix seconds).
    start: f64,
    /// The database's start time.
    db_start: f64,
    /// `server_clients` and its next seq.
    clients: (TableId, i64),
    /// `server_stats` and its next seq.
    stats: (TableId, i64),
}

impl Session {
    async fn open(registry: &Arc<Registry>, domain: &str) -> Result<Session, String> {
        let db = registry.join(domain).map_err(|e| e.to_string())?;
        let start = unix_now().floor();
        let (reply, answer) = oneshot::channel();
        let attach = Command::Attach {
            start_time: start as i64,
            sender: SENDER.to_owned(),
            reply,
        };
        db.send(attach).await.map_err(|()| "writer is gone")?;
        let Attached {
            sender_id,
            db_start,
        } = answer.await.map_err(|_| "writer is gone")??;
        let clients = register(&db, CLIENTS_SCHEMA).await?;
        let stats = register(&db, STATS_SCHEMA).await?;
        let session = Session {
            db,
            sender: sender_id,
            start,
            db_start: db_start as f64,
            clients: (clients, 0),
            stats: (stats, 0),
        };
        session.declare_counters().await?;
        Ok(session)
    }

    /// Declares the cumulative `server_stats` columns counters: metadata
    /// rows (stream 0) as a client's `kind` declarations would be stored.
    async fn declare_counters(&self) -> Result<(), String> {
        let schema0 = omsp::metadata::schema0();
        let cols =
            omsp::metadata::MetadataColumns::of(&schema0).ok_or("schema 0 lacks a column")?;
        let stats = Schema::parse(STATS_SCHEMA).map_err(|e| e.to_string())?;
        let table = register(&self.db, &schema0.to_string()).await?;
        let now = unix_now().max(self.start);
        let rows = stats
            .fields
            .iter()
            .filter(|f| !STATS_GAUGES.contains(&f.name.as_str()))
            .enumerate()
            .map(|(seq, f)| {
                let mut values = vec![Value::String(String::new()); schema0.fields.len()];
                values[cols.subject] = Value::String(format!(".{}.{}", stats.name, f.name));
                values[cols.key] = Value::String("kind".to_owned());
                values[cols.value] = Value::String("counter".to_owned());
                self.row(table, seq as i64, now, values)
            })
            .collect();
        self.db
            .send(Command::Rows(rows, None, None))
            .await
            .map_err(|()| "writer is gone".to_owned())
    }

    fn row(&self, table: TableId, seq: i64, now: f64, values: Vec<Value>) -> Row {
        Row {
            table,
            sender: self.sender,
            seq,
            ts_client: now - self.db_start,
            ts_server: now - self.db_start,
            values,
        }
    }

    /// Writes the queued events and one stats row.
    async fn write(&mut self, events: &mut mpsc::Receiver<ClientEvent>, totals: Totals) {
        let now = unix_now().max(self.start);
        let mut rows = Vec::new();
        while let Ok(e) = events.try_recv() {
            rows.push(self.row(self.clients.0, self.clients.1, now, e.values()));
            self.clients.1 += 1;
        }
        rows.push(self.row(self.stats.0, self.stats.1, now, stats_values(totals)));
        self.stats.1 += 1;
        if self.db.send(Command::Rows(rows, None, None)).await.is_err() {
            tracing::warn!(domain = self.db.domain(), "self-report writer is gone");
        }
    }
}

async fn register(db: &DbClient, schema: &str) -> Result<TableId, String> {
    let schema = Schema::parse(schema).map_err(|e| e.to_string())?;
    let (reply, answer) = oneshot::channel();
    db.send(Command::Register { schema, reply })
        .await
        .map_err(|()| "writer is gone")?;
    answer.await.map_err(|_| "writer is gone")?
}

/// Writes the server's state into `domain` every [`PERIOD`] until shutdown,
/// then once more, and leaves the database (so it is committed and closed
/// with the others).
pub async fn run(
    registry: Arc<Registry>,
    domain: String,
    metrics: Arc<Metrics>,
    mut events: mpsc::Receiver<ClientEvent>,
    mut shutdown: Shutdown,
) {
    let mut session = match Session::open(&registry, &domain).await {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(domain, error = %e, "self-reporting disabled");
            return;
        }
    };
    tracing::info!(domain, "self-reporting");
    let mut tick = tokio::time::interval(PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = shutdown.requested() => break,
        }
        session
            .write(&mut events, metrics.totals(Some(&domain)))
            .await;
    }
    // Connections drain for a moment after shutdown; give them time to end
    // so their Disconnect events make it into the last write.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while metrics.open() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    session
        .write(&mut events, metrics.totals(Some(&domain)))
        .await;
}
