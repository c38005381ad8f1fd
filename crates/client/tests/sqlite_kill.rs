//! An acknowledgement means committed, on SQLite: a real `streamgauge
//! server` process (the binary, SQLite back end) is SIGKILLed twice while
//! resumable senders stream to it, and restarted on the same data
//! directory and port.
//!
//! - A raw resumable sender (spec §3.6) records every `streamgauge-ack`;
//!   while the server is dead, the database must hold every row below the
//!   last acknowledged offset (an ack sent before its COMMIT would show up
//!   as missing rows here).
//! - Our client library with a resumable session (binary, exact doubles)
//!   reconnects and resumes on its own: afterwards every row is stored
//!   exactly once (`oml_seq` 1..=N, no gap, no duplicate, values intact).
//!
//! The binary is found next to the test's own executable (`cargo test
//! --workspace` builds it; alone: `cargo build -p streamgauge` first).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use client::spec::{Backchannel, Encoding, OverloadPolicy};
use client::{Client, Options};
use common::{spec, tcp};
use omsp::{OmlType, ValueRef};

const SAMPLES: i64 = 200_000;

/// `target/<profile>/streamgauge`, built by the workspace.
fn streamgauge_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("streamgauge"))
        .unwrap();
    assert!(
        bin.exists(),
        "{} is missing: build it first (cargo build -p streamgauge)",
        bin.display()
    );
    bin
}

/// A `streamgauge server` child process.
struct ServerProcess {
    child: Child,
}

impl ServerProcess {
    fn start(dir: &Path, port: u16) -> ServerProcess {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("server.log"))
            .unwrap();
        let child = Command::new(streamgauge_bin())
            .args(["server", "--bind", "127.0.0.1", "-l", &port.to_string()])
            .arg("-D")
            .arg(dir)
            .args(["--backend", "sqlite", "-t", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "the server did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        ServerProcess { child }
    }

    /// SIGKILL: no shutdown, no final commit.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A raw resumable sender: one connection, text tuples, every ack recorded.
struct RawSender {
    /// Highest acknowledged data offset.
    acked: Arc<AtomicU64>,
    /// Data offset after each tuple i (tuple i has seq i).
    ends: Vec<u64>,
    writer: std::thread::JoinHandle<()>,
    reader: std::thread::JoinHandle<()>,
}

impl RawSender {
    fn start(addr: SocketAddr) -> RawSender {
        let mut s = TcpStream::connect(addr).unwrap();
        let header = "protocol: 5\ndomain: kill\nstart-time: 1700000000\nsender-id: raw\n\
            app-name: raw\nschema: 1 raw_m i:int32 s:string\n\
            x-streamgauge-session: raw-session-1\nx-streamgauge-offset: 0\n\
            x-streamgauge-backchannel: 1\ncontent: text\n\n";
        s.write_all(header.as_bytes()).unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        assert_eq!(line, "streamgauge-resume 0\n");
        let acked = Arc::new(AtomicU64::new(0));
        let reader = {
            let acked = Arc::clone(&acked);
            std::thread::spawn(move || loop {
                let mut line = String::new();
                match r.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if let Some(n) = line.strip_prefix("streamgauge-ack ") {
                            acked.fetch_max(n.trim().parse().unwrap(), Ordering::SeqCst);
                        }
                    }
                }
            })
        };
        let mut ends = Vec::new();
        let mut data = Vec::new();
        for i in 0..SAMPLES {
            data.extend_from_slice(format!("0.5\t1\t{i}\t{i}\tvalue {i}\n").as_bytes());
            ends.push(data.len() as u64);
        }
        let writer = std::thread::spawn(move || {
            for chunk in data.chunks(4096) {
                if s.write_all(chunk).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_micros(300));
            }
        });
        RawSender {
            acked,
            ends,
            writer,
            reader,
        }
    }
}

/// `oml_seq` of `table` in `kill.sq3`, sorted.
fn seqs(dir: &Path, table: &str) -> Vec<i64> {
    let db = rusqlite::Connection::open(dir.join("kill.sq3")).unwrap();
    let mut st = db
        .prepare(&format!("SELECT oml_seq FROM {table} ORDER BY oml_seq"))
        .unwrap();
    st.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn acks_follow_commits_and_a_resumed_client_stores_every_row_once() {
    let dir = tempfile::tempdir().unwrap();
    let port = testkit::free_port();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let mut server = ServerProcess::start(dir.path(), port);

    let raw = RawSender::start(addr);
    let mut raw_reader = Some(raw.reader);

    let mut d = tcp(
        addr,
        Encoding::Binary,
        OverloadPolicy::Block { stall_limit: None },
        64 << 20,
    );
    d.backchannel = Backchannel::Resume;
    let mut s = spec("app", vec![d]);
    s.domain = Some("kill".into());
    s.instr_interval = None;
    let options = Options {
        close_timeout: Duration::from_secs(60),
        ..Options::default()
    };
    let client = Client::with_options(s, options).unwrap();
    let mp = client
        .add_mp("m", &[("i", OmlType::Int64), ("x", OmlType::Double)])
        .unwrap();
    client.start().unwrap();
    let (progress, injector) = common::steady_injector(SAMPLES, move |i| {
        let x = i as f64 / 7.0;
        mp.inject(&[ValueRef::Int64(i), ValueRef::Double(x)])
            .unwrap();
    });

    for (kill, at) in [(1, SAMPLES / 3), (2, 2 * SAMPLES / 3)] {
        let deadline = Instant::now() + Duration::from_secs(60);
        while progress.load(Ordering::Relaxed) < at {
            assert!(Instant::now() < deadline, "the injector stalled");
            std::thread::sleep(Duration::from_millis(5));
        }
        server.kill();
        if let Some(reader) = raw_reader.take().filter(|_| kill == 1) {
            // The raw sender's connection is dead with the server: every ack
            // it ever read is final. Each must be backed by committed rows.
            reader.join().unwrap();
            let acked = raw.acked.load(Ordering::SeqCst);
            let covered = raw.ends.iter().take_while(|&&e| e <= acked).count() as i64;
            assert!(covered > 0, "no acknowledgement before the kill");
            let got = seqs(dir.path(), "raw_m");
            let below: Vec<i64> = got.iter().copied().filter(|&s| s < covered).collect();
            assert_eq!(
                below,
                (0..covered).collect::<Vec<_>>(),
                "rows acknowledged (offset {acked}, {covered} tuples) but not in the database"
            );
            eprintln!(
                "kill 1: {covered} tuples acknowledged, {} stored",
                got.len()
            );
        }
        // Clients notice, back off and retry meanwhile.
        std::thread::sleep(Duration::from_millis(300));
        server = ServerProcess::start(dir.path(), port);
    }
    let _ = raw.writer.join();

    injector.join().unwrap();
    client.close().unwrap();
    let stats = client.stats();
    assert_eq!(stats.dropped_at_inject, 0, "the client dropped samples");
    assert_eq!(
        stats.destinations[0].dropped, 0,
        "the destination dropped tuples"
    );
    drop(server);

    let got = seqs(dir.path(), "app_m");
    let mut dups = got.clone();
    dups.dedup();
    assert_eq!(
        dups.len(),
        got.len(),
        "{} duplicate rows",
        got.len() - dups.len()
    );
    assert_eq!(got, (1..=SAMPLES).collect::<Vec<_>>(), "rows missing");
    let db = rusqlite::Connection::open(dir.path().join("kill.sq3")).unwrap();
    let bad: i64 = db
        .query_row(
            "SELECT count(*) FROM app_m WHERE i != oml_seq OR x != i / 7.0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(bad, 0, "rows with wrong values");
}
