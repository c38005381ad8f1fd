//! Streaming a large table's rows to PostgreSQL while more are encoded.
//!
//! Without it a commit is two stages in turn: the writer thread encodes
//! rows while PostgreSQL waits, then PostgreSQL parses and stores them
//! while the writer waits. With bulk ingestion both take about as long, so
//! each side idles half the time. Once a table holds [`START`] bytes of
//! encoded rows in the open transaction, the store opens the transaction on
//! a second connection and hands it to the pump's thread, which starts the
//! table's COPY and forwards each further [`CHUNK`] as it is encoded:
//! PostgreSQL stores one chunk while the writer encodes the next. At the
//! commit the pump ends the COPY and hands the connection back, and the
//! commit goes on on it as usual (other tables, sessions, clock, COMMIT).
//!
//! The rows stay in the table's buffer until the commit is over, so if the
//! pump fails (PostgreSQL refused a row, the connection was lost) its
//! transaction is abandoned (rolled back, or gone with its connection) and
//! the commit is sent again whole on the store's own connection, exactly as
//! without the pump.

use std::sync::mpsc;
use std::thread::JoinHandle;

use ::postgres::Client;

use super::write::begin;
use crate::error::StoreError;

/// Encoded bytes of one table in the open transaction from which its rows
/// are streamed: below it, the commit sends them at once as before (small
/// commits gain nothing from a second stage).
pub const START: usize = 256 << 10;
/// Bytes forwarded to the pump at a time.
pub const CHUNK: usize = 128 << 10;
/// Chunks queued towards the pump before the writer waits.
const QUEUE: usize = 8;

/// What the pump is told.
enum Msg {
    /// Begin a transaction on this connection (reading the ends of these
    /// tables, see [`begin`]) and start this COPY.
    Start(Box<Client>, String, Vec<String>),
    /// More of the COPY stream.
    Data(Vec<u8>),
    /// End the COPY (its trailer was sent) and hand the connection back.
    Finish,
}

/// What the pump hands back at [`Pump::finish`]: the connection (`None`
/// if it broke), and if the COPY went through, the open transaction's id
/// and the ends [`begin`] read.
pub type Handed = (Option<Client>, Result<(i64, Vec<Option<i64>>), StoreError>);

/// The pump's thread and its channels.
pub struct Pump {
    tx: mpsc::SyncSender<Msg>,
    rx: mpsc::Receiver<Handed>,
    thread: Option<JoinHandle<()>>,
}

impl Pump {
    /// Starts the thread (named after the domain).
    pub fn spawn(domain: &str) -> std::io::Result<Pump> {
        let (tx, inbox) = mpsc::sync_channel(QUEUE);
        let (back, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(format!("pg-copy-{domain}"))
            .spawn(move || run(inbox, back))?;
        Ok(Pump {
            tx,
            rx,
            thread: Some(thread),
        })
    }

    /// Opens a transaction on `client`, reading the ends of the `probe`
    /// tables, and starts `copy_sql` in it.
    pub fn start(&self, client: Client, copy_sql: &str, probe: Vec<String>) {
        let _ = self
            .tx
            .send(Msg::Start(Box::new(client), copy_sql.to_owned(), probe));
    }

    /// Forwards more of the COPY stream.
    pub fn data(&self, bytes: Vec<u8>) {
        let _ = self.tx.send(Msg::Data(bytes));
    }

    /// Ends the COPY; waits for the connection.
    pub fn finish(&self) -> Handed {
        if self.tx.send(Msg::Finish).is_err() {
            return (None, Err(gone()));
        }
        self.rx.recv().unwrap_or_else(|_| (None, Err(gone())))
    }
}

impl Drop for Pump {
    fn drop(&mut self) {
        // Closing the channel ends the thread.
        let (dead, _) = mpsc::sync_channel(1);
        drop(std::mem::replace(&mut self.tx, dead));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn gone() -> StoreError {
    StoreError::Unstorable {
        table: "(transaction)".into(),
        reason: "the COPY thread ended".into(),
    }
}

/// The thread: one transaction per `Start`, until the channel closes.
fn run(inbox: mpsc::Receiver<Msg>, back: mpsc::Sender<Handed>) {
    while let Ok(msg) = inbox.recv() {
        let Msg::Start(client, sql, probe) = msg else {
            continue; // Data or Finish without a Start: nothing is open.
        };
        let mut client = *client;
        let res = stream(&mut client, &sql, &probe, &inbox);
        let lost = res
            .as_ref()
            .err()
            .is_some_and(|e| super::link::is_lost(e, Some(&client)));
        if back.send(((!lost).then_some(client), res)).is_err() {
            return;
        }
    }
}

/// One transaction: BEGIN, the COPY fed from `inbox` until `Finish`.
/// Always reads up to the `Finish`, so the next transaction starts clean.
fn stream(
    client: &mut Client,
    sql: &str,
    probe: &[String],
    inbox: &mpsc::Receiver<Msg>,
) -> Result<(i64, Vec<Option<i64>>), StoreError> {
    let mut failed = None;
    let begun = match begin(client, probe) {
        Ok(x) => x,
        Err(e) => {
            failed = Some(e);
            (0, Vec::new())
        }
    };
    let mut writer = match failed {
        None => match client.copy_in(sql) {
            Ok(w) => Some(w),
            Err(e) => {
                failed = Some(e.into());
                None
            }
        },
        Some(_) => None,
    };
    loop {
        match inbox.recv() {
            Ok(Msg::Data(bytes)) => {
                if let Some(w) = writer.as_mut() {
                    if let Err(e) = std::io::Write::write_all(w, &bytes) {
                        failed = Some(e.into());
                        writer = None; // Dropping it aborts the COPY.
                    }
                }
            }
            Ok(Msg::Finish) => break,
            Ok(Msg::Start(..)) | Err(_) => {
                failed.get_or_insert_with(gone);
                break;
            }
        }
    }
    match (writer, failed) {
        (Some(w), None) => w.finish().map(|_| begun).map_err(StoreError::from),
        (_, Some(e)) => Err(e),
        (None, None) => Err(gone()),
    }
}
