//! The connection lost around COMMIT, made deterministic by a
//! relay between the store and PostgreSQL that cuts the connection once,
//! right before or right after forwarding the transaction's `COMMIT`.
//! Before: the transaction never committed, the store sends it again.
//! After: PostgreSQL committed but the answer was lost; the store asks
//! `txid_status` and must not send the rows a second time.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use omsp::{Schema, Value};
use pgtemp::{shared, unique_domain};
use store::{PgOptions, PgStore, Row, Sink};

/// The simple-query message `COMMIT` (type, length 4 + 7, text, NUL).
const COMMIT: &[u8] = b"Q\0\0\0\x0bCOMMIT\0";

const PASS: u8 = 0;
const CUT_BEFORE: u8 = 1;
const CUT_AFTER: u8 = 2;

/// A TCP relay to the test cluster; [`Relay::arm`] makes it cut the next
/// connection that sends `COMMIT`.
struct Relay {
    port: u16,
    mode: Arc<AtomicU8>,
}

impl Relay {
    fn start(upstream: u16) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mode = Arc::new(AtomicU8::new(PASS));
        let m = Arc::clone(&mode);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let server = TcpStream::connect(("127.0.0.1", upstream)).unwrap();
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let mute = Arc::new(AtomicBool::new(false));
                let muted = Arc::clone(&mute);
                std::thread::spawn(move || back(s2, c2, &muted));
                let m = Arc::clone(&m);
                std::thread::spawn(move || forward(client, server, &m, &mute));
            }
        });
        Relay { port, mode }
    }

    fn arm(&self, mode: u8) {
        self.mode.store(mode, Ordering::SeqCst);
    }

    fn armed(&self) -> bool {
        self.mode.load(Ordering::SeqCst) != PASS
    }
}

/// Server to client, until `mute`: from then on answers are dropped.
fn back(mut server: TcpStream, mut client: TcpStream, mute: &AtomicBool) {
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = server.read(&mut buf) {
        if n == 0 || mute.load(Ordering::SeqCst) || client.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = client.shutdown(Shutdown::Both);
    let _ = server.shutdown(Shutdown::Both);
}

/// Client to server, watching for `COMMIT` while armed.
fn forward(mut client: TcpStream, mut server: TcpStream, mode: &AtomicU8, mute: &AtomicBool) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match client.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        let hit = chunk.windows(COMMIT.len()).any(|w| w == COMMIT);
        let m = if hit {
            mode.swap(PASS, Ordering::SeqCst)
        } else {
            PASS
        };
        if m == CUT_BEFORE {
            break;
        }
        if m == CUT_AFTER {
            // PostgreSQL gets the COMMIT; its answer never comes back.
            mute.store(true, Ordering::SeqCst);
        }
        if server.write_all(chunk).is_err() {
            break;
        }
        if m == CUT_AFTER {
            // Let PostgreSQL commit, then cut.
            std::thread::sleep(Duration::from_millis(300));
            break;
        }
    }
    let _ = client.shutdown(Shutdown::Both);
    let _ = server.shutdown(Shutdown::Both);
}

fn rows(db: &mut PgStore, t: store::TableId, seqs: std::ops::Range<i64>) {
    for seq in seqs {
        db.insert(&Row {
            table: t,
            sender: 1,
            seq,
            ts_client: 1.0,
            ts_server: 2.0,
            values: vec![Value::Int32(seq as i32)],
        })
        .unwrap();
    }
}

fn seqs(domain: &str) -> Vec<i64> {
    let mut c = shared().client(domain);
    c.query("SELECT oml_seq FROM app_c ORDER BY oml_tuple_id", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[test]
fn commit_cut_before_or_after_stores_every_row_once() {
    let relay = Relay::start(shared().port);
    let opts = PgOptions {
        host: "127.0.0.1".into(),
        port: relay.port,
        user: "oml".into(),
        ..PgOptions::default()
    };
    let domain = unique_domain("cutcommit");
    let mut db = PgStore::open(&opts, &domain).unwrap();
    let t = db
        .register_schema(&Schema::parse("1 app_c x:int32").unwrap())
        .unwrap();

    rows(&mut db, t, 0..100);
    relay.arm(CUT_AFTER);
    db.commit().unwrap();
    assert!(!relay.armed(), "the relay cut the connection after COMMIT");
    assert_eq!(
        seqs(&domain),
        (0..100).collect::<Vec<_>>(),
        "committed once, not resent"
    );

    rows(&mut db, t, 100..200);
    relay.arm(CUT_BEFORE);
    db.commit().unwrap();
    assert!(!relay.armed(), "the relay cut the connection before COMMIT");
    assert_eq!(
        seqs(&domain),
        (0..200).collect::<Vec<_>>(),
        "resent once after the cut"
    );
    db.close().unwrap();
}
