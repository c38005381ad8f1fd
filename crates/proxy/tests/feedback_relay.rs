//! Feedback through the proxy (spec §3.7): a client that asks for control
//! messages gets the server's, relayed by the proxy on its back-channel,
//! and its answer (ordinary schema-0 data) lands in the server's database.
//! A client that did not ask gets none, and its upstream header does not
//! carry the key.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::*;

const FEEDBACK_KEYS: &str = "x-streamgauge-session: fb-client-1\nx-streamgauge-offset: 0\nx-streamgauge-backchannel: 1\nx-streamgauge-feedback: 1\n";

/// Connects a resumable client that accepts control messages; returns
/// the socket and its back-channel reader, after the resume line.
fn connect(addr: SocketAddr) -> (TcpStream, BufReader<TcpStream>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(header("fb", "a", FEEDBACK_KEYS).as_bytes())
        .unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert_eq!(line, "streamgauge-resume 0\n");
    (s, r)
}

/// The next control line, skipping acks.
fn next_control(r: &mut BufReader<TcpStream>) -> String {
    loop {
        let mut line = String::new();
        assert!(r.read_line(&mut line).unwrap() > 0, "back-channel closed");
        if line.starts_with("streamgauge-control ") {
            return line;
        }
        assert!(line.starts_with("streamgauge-ack "), "{line:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_messages_reach_the_client_through_the_proxy() {
    let dirs = Dirs::new();
    let up = free_addr();
    let server = start_server(up, &dirs.db()).await;
    let (proxy, addr) = start_proxy(proxy_config(&dirs.journal(), up)).await;
    let (mut s, mut r) = tokio::task::spawn_blocking(move || connect(addr))
        .await
        .unwrap();
    let data = tuples(0, 100);
    let s = tokio::task::spawn_blocking(move || {
        s.write_all(&data).unwrap();
        s
    })
    .await
    .unwrap();

    // The proxy's upstream session registers with the server's feedback
    // once its header is read: retry until the sender is known.
    let msg = serde_json::json!({"action": "set-samples", "stream": "t_m", "samples": 5});
    let deadline = Instant::now() + Duration::from_secs(20);
    let id = loop {
        match server.feedback().send("fb", "a", &msg) {
            Ok(ids) if !ids.is_empty() => break ids[0],
            r if Instant::now() > deadline => panic!("sender never registered: {r:?}"),
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };
    let (line, s) = tokio::task::spawn_blocking(move || {
        let line = next_control(&mut r);
        // Answer as a streamgauge client does: a schema-0 tuple.
        let mut s = s;
        s.write_all(format!("0.7\t0\t1\t.\tstreamgauge_control\t{id} ok\n").as_bytes())
            .unwrap();
        (line, s)
    })
    .await
    .unwrap();
    let (got_id, json) = line
        .trim_end()
        .strip_prefix("streamgauge-control ")
        .unwrap()
        .split_once(' ')
        .unwrap();
    assert_eq!(got_id.parse::<u64>().unwrap(), id);
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(v, msg);
    s.shutdown(std::net::Shutdown::Write).unwrap();
    drop(s);
    wait_delivered(&proxy, Duration::from_secs(20)).await;
    let db = dirs.db().join("fb.sq3");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n: i64 = rusqlite::Connection::open(&db)
            .and_then(|c| {
                c.query_row(
                    "SELECT count(*) FROM _experiment_metadata WHERE key = 'streamgauge_control' AND value = ?1",
                    [format!("{id} ok")],
                    |r| r.get(0),
                )
            })
            .unwrap_or(0);
        if n == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the answer never reached the database"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_exactly(seqs(&dirs.db(), "fb", "t_m", "a"), 100, "data");
    proxy.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_without_the_key_get_no_control_messages() {
    let dirs = Dirs::new();
    let up = free_addr();
    let server = start_server(up, &dirs.db()).await;
    let (proxy, addr) = start_proxy(proxy_config(&dirs.journal(), up)).await;
    tokio::task::spawn_blocking(move || stock_send(addr, "fb", "plain", &tuples(0, 50)))
        .await
        .unwrap();
    wait_delivered(&proxy, Duration::from_secs(20)).await;
    let msg = serde_json::json!({"action": "disable", "stream": "t_m"});
    assert!(server.feedback().send("fb", "plain", &msg).is_err());
    proxy.shutdown().await;
    server.shutdown().await;
}
