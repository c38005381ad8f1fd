//! Monitoring snapshots as the measurement stream `manager_monitor`
//! (application `manager`, measurement point `monitor`), sent through the
//! project's client library to `--monitor-collect HOST:PORT` in the domain
//! `--monitor-domain`. The client lives in its own thread; a slow or
//! absent server loses the oldest rows, never stalls the monitor.

use std::sync::mpsc::{self, Sender};
use std::sync::Mutex;
use std::thread::JoinHandle;

use client::spec::{Backchannel, ClientSpec, DestinationSpec, Encoding, OverloadPolicy, Uri};
use client::{Client, Mp};
use omsp::{OmlType, ValueRef};

/// One row of `manager_monitor`.
#[derive(Debug, Clone)]
pub struct Row {
    /// Device name.
    pub device: String,
    /// Device kind.
    pub kind: String,
    /// `up` or `down`.
    pub status: String,
    /// Round trip of the poll (NaN when down).
    pub latency_ms: f64,
    /// Sessions on the device.
    pub sessions: u64,
    /// Sum of the sessions' kernel drops.
    pub dropped_kernel: u64,
    /// Sum of the sessions' output drops.
    pub dropped_by_us: u64,
}

/// The sending side.
pub struct MonitorStream {
    /// Rows to the client thread (`None`: close).
    tx: Mutex<Sender<Option<Row>>>,
    /// The client thread.
    thread: Mutex<Option<JoinHandle<()>>>,
}

fn open(host: &str, port: u16, domain: &str) -> Result<(Client, Mp), client::ClientError> {
    let spec = ClientSpec {
        app: "manager".into(),
        id: Some("manager".into()),
        domain: Some(domain.into()),
        destinations: vec![DestinationSpec {
            uri: Uri::Tcp {
                host: host.into(),
                port,
            },
            encoding: Encoding::Binary,
            policy: OverloadPolicy::DropOldest,
            bufsize: 1 << 20,
            streams: None,
            instrumentation: false,
            backchannel: Backchannel::default(),
        }],
        ..ClientSpec::default()
    };
    let c = Client::new(spec)?;
    let mp = c.add_mp(
        "monitor",
        &[
            ("device", OmlType::String),
            ("kind", OmlType::String),
            ("status", OmlType::String),
            ("latency_ms", OmlType::Double),
            ("sessions", OmlType::UInt64),
            ("dropped_kernel", OmlType::UInt64),
            ("dropped_by_us", OmlType::UInt64),
        ],
    )?;
    c.start()?;
    Ok((c, mp))
}

impl MonitorStream {
    /// Starts the client thread for `HOST:PORT` (validated by the config).
    pub fn new(collect: &str, domain: &str) -> Option<MonitorStream> {
        let (h, p) = collect.rsplit_once(':')?;
        let host = h.trim_start_matches('[').trim_end_matches(']').to_owned();
        let port: u16 = p.parse().ok()?;
        let domain = domain.to_owned();
        let (tx, rx) = mpsc::channel::<Option<Row>>();
        let thread = std::thread::Builder::new()
            .name("manager-monitor-stream".into())
            .spawn(move || {
                let (client, mp) = match open(&host, port, &domain) {
                    Ok(x) => x,
                    Err(e) => {
                        tracing::warn!(error = %e, "manager_monitor stream not opened");
                        return;
                    }
                };
                while let Ok(Some(r)) = rx.recv() {
                    let row = [
                        ValueRef::String(&r.device),
                        ValueRef::String(&r.kind),
                        ValueRef::String(&r.status),
                        ValueRef::Double(r.latency_ms),
                        ValueRef::UInt64(r.sessions),
                        ValueRef::UInt64(r.dropped_kernel),
                        ValueRef::UInt64(r.dropped_by_us),
                    ];
                    if let Err(e) = mp.inject(&row) {
                        tracing::warn!(error = %e, "monitor row not injected");
                    }
                }
                if let Err(e) = client.close() {
                    tracing::warn!(error = %e, "manager_monitor stream close failed");
                }
            })
            .ok()?;
        Some(MonitorStream {
            tx: Mutex::new(tx),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Queues a row.
    pub fn send(&self, row: Row) {
        let _ = self
            .tx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(Some(row));
    }

    /// Flushes and closes (blocks until the server took the rows).
    pub fn close(self) {
        let _ = self.tx.lock().unwrap_or_else(|e| e.into_inner()).send(None);
        if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
    }
}
