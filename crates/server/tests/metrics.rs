//! Self-measurement: the Prometheus endpoint and the self-reporting domain
//! agree with what was actually sent and stored.

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::{open_db, replay_async, start_with, text_header};

const DOMAIN: &str = "metered";
const SELF: &str = "selfmon";
const GOOD: i64 = 300;

/// `GET /metrics` over loopback: the status line and the samples by series.
fn scrape(addr: SocketAddr) -> (String, HashMap<String, f64>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    let samples = body
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_owned(), v.parse().unwrap())
        })
        .collect();
    (head.lines().next().unwrap().to_owned(), samples)
}

fn get(m: &HashMap<String, f64>, key: &str) -> f64 {
    *m.get(key)
        .unwrap_or_else(|| panic!("no series {key} in {m:#?}"))
}

/// One session: `GOOD` valid tuples and one with a bad int32.
fn session(sender: &str) -> Vec<u8> {
    let mut s = text_header(DOMAIN, sender, 1_700_000_000, &["1 t_m x:int32 y:string"]);
    for i in 0..GOOD {
        s.push_str(&format!("0.5\t1\t{i}\t{i}\tv{i}\n"));
    }
    s.push_str("0.5\t1\t999\tnot-a-number\tv\n");
    s.into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_self_domain_match_what_was_stored() {
    let t = start_with(|c| {
        c.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
        c.self_domain = Some(SELF.to_owned());
    })
    .await;
    let maddr = t.server.metrics_addr().expect("metrics address");
    replay_async(t.addr, session("a")).await;
    replay_async(t.addr, session("b")).await;

    // Writers and connection bookkeeping finish just after the clients see EOF.
    let deadline = Instant::now() + Duration::from_secs(10);
    let m = loop {
        let m = tokio::task::spawn_blocking(move || scrape(maddr))
            .await
            .unwrap();
        assert_eq!(m.0, "HTTP/1.1 200 OK");
        let m = m.1;
        let done = m.get(&format!(
            "streamgauge_tuples_stored_total{{domain=\"{DOMAIN}\"}}"
        )) == Some(&(2.0 * GOOD as f64))
            && m.get(&format!(
                "streamgauge_commit_rows_sum{{domain=\"{DOMAIN}\"}}"
            )) == Some(&(2.0 * GOOD as f64))
            && m.get("streamgauge_connections_closed_total{reason=\"closed\"}") == Some(&2.0);
        if done || Instant::now() > deadline {
            break m;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let d = |name: &str| get(&m, &format!("{name}{{domain=\"{DOMAIN}\"}}"));
    assert_eq!(d("streamgauge_tuples_received_total"), 2.0 * GOOD as f64);
    assert_eq!(d("streamgauge_tuples_stored_total"), 2.0 * GOOD as f64);
    assert_eq!(d("streamgauge_writer_backlog_rows"), 0.0);
    assert_eq!(d("streamgauge_writer_queue_depth"), 0.0);
    assert_eq!(
        get(
            &m,
            &format!("streamgauge_tuples_rejected_total{{domain=\"{DOMAIN}\",stage=\"decode\"}}")
        ),
        2.0
    );
    assert_eq!(
        get(&m, "streamgauge_decode_errors_total{code=\"bad_value\"}"),
        2.0
    );
    assert_eq!(get(&m, "streamgauge_connections_accepted_total"), 2.0);
    assert_eq!(get(&m, "streamgauge_connections_open"), 0.0);
    assert_eq!(
        get(&m, "streamgauge_received_bytes_total"),
        2.0 * session("a").len() as f64
    );
    assert!(d("streamgauge_commits_total") >= 1.0);
    assert_eq!(
        get(
            &m,
            &format!("streamgauge_commit_rows_sum{{domain=\"{DOMAIN}\"}}")
        ),
        2.0 * GOOD as f64
    );
    let stored: i64 = open_db(t.dir.path(), DOMAIN)
        .query_row("SELECT count(*) FROM t_m", [], |r| r.get(0))
        .unwrap();
    assert_eq!(stored, 2 * GOOD);

    // Unknown paths are 404, not metrics.
    let nf = tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(maddr).unwrap();
        s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text
    })
    .await
    .unwrap();
    assert!(nf.starts_with("HTTP/1.0 404"), "{nf}");
    assert!(nf.contains("\"code\":\"no_such_endpoint\""), "{nf}");

    // Shutdown writes a last report and commits it.
    let dir = t.dir;
    t.server.shutdown().await;
    let db = open_db(dir.path(), SELF);
    let events: Vec<(String, String, String, String, String)> = db
        .prepare(
            "SELECT address, node_id, domain, event, message FROM server_clients \
             ORDER BY oml_tuple_id",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for sender in ["a", "b"] {
        let mine: Vec<_> = events
            .iter()
            .filter(|e| e.1 == sender || (e.3 == "Connect" && e.0 == "127.0.0.1"))
            .map(|e| e.3.as_str())
            .collect();
        assert!(mine.contains(&"Ready"), "{events:?}");
        assert!(mine.contains(&"Disconnect"), "{events:?}");
        let disc = events
            .iter()
            .find(|e| e.1 == sender && e.3 == "Disconnect")
            .unwrap();
        assert_eq!(
            (disc.2.as_str(), disc.4.as_str()),
            (DOMAIN, "SOCKET_CONN_CLOSED")
        );
    }
    assert_eq!(events.iter().filter(|e| e.3 == "Connect").count(), 2);
    let (n, received, stored, rejected, accepted): (i64, i64, i64, i64, i64) = db
        .query_row(
            "SELECT (SELECT count(*) FROM server_stats), tuples_received, tuples_stored, \
             tuples_rejected, connections_accepted FROM server_stats \
             ORDER BY oml_tuple_id DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .unwrap();
    assert!(n >= 1);
    assert_eq!(
        (received, stored, rejected, accepted),
        (2 * GOOD, 2 * GOOD, 2, 2)
    );
    let seqs: i64 = db
        .query_row(
            "SELECT count(*) FROM server_stats WHERE oml_seq BETWEEN 0 AND ?1",
            [n - 1],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(seqs, n, "server_stats seq runs 0..n");
    // The cumulative columns are declared counters; the gauges are not.
    let counters: Vec<String> = db
        .prepare(
            "SELECT subject FROM _experiment_metadata \
             WHERE key = 'kind' AND value = 'counter' ORDER BY subject",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(counters.len(), 8, "{counters:?}");
    assert!(counters.contains(&".server_stats.tuples_stored".to_owned()));
    assert!(!counters.contains(&".server_stats.connections_open".to_owned()));
}
