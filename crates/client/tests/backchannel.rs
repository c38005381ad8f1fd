//! The client's side of the back-channel (spec/omsp.md §3.6–3.7) against
//! the real collection server: resumable sessions lose and duplicate
//! nothing across a server restart, a receiver that never answers still
//! gets the data, and control messages — from a feedback rule or sent by
//! hand — change what a live client reports, with its answers stored.

mod common;

use std::io::Read;
use std::net::TcpListener;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use client::spec::{Backchannel, DestinationSpec, Encoding, OverloadPolicy};
use client::{Client, Mp, Options};
use common::{decode, query_i64, spec, tcp, TestServer};
use omsp::{OmlType, ValueRef};

fn dest(addr: std::net::SocketAddr, enc: Encoding, mode: Backchannel) -> DestinationSpec {
    let mut d = tcp(
        addr,
        enc,
        OverloadPolicy::Block {
            stall_limit: Some(Duration::from_secs(1)),
        },
        64 << 20,
    );
    d.backchannel = mode;
    d
}

fn client(d: DestinationSpec) -> (Client, Mp) {
    let c = Client::new(spec("app", vec![d])).unwrap();
    let mp = c.add_mp("m", &[("i", OmlType::Int64)]).unwrap();
    c.start().unwrap();
    (c, mp)
}

fn inject(mp: &Mp, i: i64) {
    mp.inject(&[ValueRef::Int64(i)]).unwrap();
}

#[test]
fn resumable_session_survives_a_server_restart_exactly() {
    for enc in [Encoding::Binary, Encoding::Text] {
        const N: i64 = 200_000;
        let mut srv = TestServer::start();
        let (c, mp) = client(dest(srv.addr, enc, Backchannel::Resume));
        let late = c.add_mp("late", &[("x", OmlType::Int32)]).unwrap();
        let progress = Arc::new(AtomicI64::new(0));
        let injector = {
            let progress = Arc::clone(&progress);
            std::thread::spawn(move || {
                for i in 1..=N {
                    inject(&mp, i);
                    if i % 1000 == 0 {
                        late.inject(&[ValueRef::Int32((i / 1000) as i32)]).unwrap();
                        progress.store(i, Ordering::Relaxed);
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
            })
        };
        while progress.load(Ordering::Relaxed) < N / 3 {
            std::thread::sleep(Duration::from_millis(5));
        }
        srv.stop();
        std::thread::sleep(Duration::from_millis(300));
        srv.restart();
        injector.join().unwrap();
        c.close().unwrap();
        let st = c.stats();
        assert_eq!(st.destinations[0].dropped, 0, "{:?}", st.destinations[0]);
        let got = srv.wait_count(
            "dom",
            "SELECT count(*) FROM app_m",
            N,
            Duration::from_secs(60),
        );
        assert_eq!(got, N, "{enc:?}: every sample stored once");
        let db = srv.db("dom");
        assert_eq!(query_i64(&db, "SELECT count(DISTINCT i) FROM app_m"), N);
        assert_eq!(
            query_i64(&db, "SELECT count(DISTINCT oml_seq) FROM app_m"),
            N
        );
        assert_eq!(query_i64(&db, "SELECT count(*) FROM app_late"), N / 1000);
        assert!(
            st.destinations[0].connections >= 2,
            "{:?}",
            st.destinations[0]
        );
    }
}

#[test]
fn a_receiver_that_never_answers_still_gets_everything() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let reader = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut all = Vec::new();
        s.read_to_end(&mut all).unwrap();
        all
    });
    let options = Options {
        backchannel_timeout: Duration::from_millis(300),
        ..Options::default()
    };
    let c = Client::with_options(
        spec(
            "app",
            vec![dest(addr, Encoding::Text, Backchannel::Feedback)],
        ),
        options,
    )
    .unwrap();
    let mp = c.add_mp("m", &[("i", OmlType::Int64)]).unwrap();
    c.start().unwrap();
    for i in 0..1000 {
        inject(&mp, i);
    }
    c.close().unwrap();
    let bytes = reader.join().unwrap();
    let d = decode(&bytes);
    assert!(d.errors.is_empty(), "{:?}", d.errors);
    let h = d.header.as_ref().unwrap();
    let keys: Vec<&str> = h.extra.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "x-streamgauge-session",
            "x-streamgauge-offset",
            "x-streamgauge-backchannel",
            "x-streamgauge-feedback"
        ]
    );
    assert!(h.extra[0].1.starts_with("app-sender1-"), "{:?}", h.extra[0]);
    assert_eq!(d.stream(2).len(), 1000);
}

#[test]
fn the_base_protocol_sends_no_extension_keys() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let reader = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut all = Vec::new();
        s.read_to_end(&mut all).unwrap();
        all
    });
    let (c, mp) = client(dest(addr, Encoding::Text, Backchannel::Off));
    inject(&mp, 1);
    c.close().unwrap();
    let d = decode(&reader.join().unwrap());
    assert!(d.header.unwrap().extra.is_empty());
}

/// Waits until `_experiment_metadata` holds the client's answer `want`.
fn wait_answer(srv: &TestServer, want: &str, within: Duration) {
    let sql = format!(
        "SELECT count(*) FROM _experiment_metadata WHERE key = 'streamgauge_control' AND value = '{want}'"
    );
    let got = srv.wait_count("dom", &sql, 1, within);
    assert_eq!(got, 1, "answer {want:?} not stored");
}

#[test]
fn control_messages_sent_by_hand_change_a_live_client() {
    let srv = TestServer::start();
    let (c, mp) = client(dest(srv.addr, Encoding::Binary, Backchannel::Feedback));
    let send = |msg: serde_json::Value| {
        // The sender registers once its header is read: retry until then.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let feedback = srv.server.as_ref().unwrap().feedback();
            match feedback.send("dom", "sender1", &msg) {
                Ok(ids) if !ids.is_empty() => return ids[0],
                _ if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
                r => panic!("cannot send {msg}: {r:?}"),
            }
        }
    };
    for i in 0..100 {
        inject(&mp, i);
    }
    let id = send(serde_json::json!({"action": "disable", "stream": "app_m"}));
    wait_answer(&srv, &format!("{id} ok"), Duration::from_secs(10));
    for i in 100..200 {
        inject(&mp, i);
    }
    let id = send(serde_json::json!({"action": "enable", "stream": "app_m"}));
    wait_answer(&srv, &format!("{id} ok"), Duration::from_secs(10));
    let id = send(serde_json::json!({"action": "set-samples", "stream": "app_m", "samples": 10}));
    wait_answer(&srv, &format!("{id} ok"), Duration::from_secs(10));
    for i in 200..300 {
        inject(&mp, i);
    }
    let id = send(serde_json::json!({"action": "set-samples", "stream": "app_m", "samples": 1}));
    wait_answer(&srv, &format!("{id} ok"), Duration::from_secs(10));
    for i in 300..400 {
        inject(&mp, i);
    }
    // The server checks actions and arguments; the client refuses what it
    // cannot do to that stream.
    let id = send(
        serde_json::json!({"action": "set-filter", "stream": "app_m",
        "field": "i", "property": "bins", "value": "4"}),
    );
    wait_answer(
        &srv,
        &format!("{id} error the stream has no filters (one row per sample)"),
        Duration::from_secs(10),
    );
    let id = send(serde_json::json!({"action": "disable", "stream": "nope"}));
    wait_answer(
        &srv,
        &format!("{id} error unknown stream nope"),
        Duration::from_secs(10),
    );
    c.close().unwrap();

    let want = 100 + 10 + 100;
    let got = srv.wait_count(
        "dom",
        "SELECT count(*) FROM app_m",
        want,
        Duration::from_secs(10),
    );
    assert_eq!(got, want);
    let db = srv.db("dom");
    let count = |sql: &str| query_i64(&db, sql);
    assert_eq!(
        count("SELECT count(*) FROM app_m WHERE i BETWEEN 100 AND 199"),
        0
    );
    // One in ten, the first of each ten.
    assert_eq!(
        count("SELECT count(*) FROM app_m WHERE i BETWEEN 200 AND 299"),
        10
    );
    assert_eq!(
        count("SELECT count(*) FROM app_m WHERE i BETWEEN 200 AND 299 AND i % 10 = 0"),
        10
    );
    assert_eq!(
        count("SELECT count(*) FROM app_m WHERE i BETWEEN 300 AND 399"),
        100
    );
}

/// The issue's demonstration: a server rule lowers a fast client's
/// sampling while it floods the server, and restores it once the client
/// slows down; the stored rows show both phases.
#[test]
fn a_feedback_rule_lowers_a_fast_clients_rate_and_restores_it() {
    let srv = TestServer::with_rules(
        r#"
        [[rule]]
        name = "too-fast"
        when = "sender-rate"
        above = 5000
        below = 500
        action = { action = "set-samples", stream = "app_m", samples = 20 }
        restore = { action = "set-samples", stream = "app_m", samples = 1 }
        "#,
    );
    let (c, mp) = client(dest(srv.addr, Encoding::Binary, Backchannel::Feedback));
    // Fast: about 50 000 samples/s for 3 s.
    let t0 = Instant::now();
    let mut i = 0;
    while t0.elapsed() < Duration::from_secs(3) {
        for _ in 0..500 {
            inject(&mp, i);
            i += 1;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let fast_end = i;
    wait_answer(&srv, "1 ok", Duration::from_secs(10));
    // Slow: 100 samples/s until the rule restores per-sample reporting,
    // then 2 s more.
    let mut restored_at = None;
    let t1 = Instant::now();
    while restored_at.is_none_or(|r: i64| i < r + 200) {
        inject(&mp, i);
        i += 1;
        std::thread::sleep(Duration::from_millis(10));
        if restored_at.is_none() {
            let db = srv.db("dom");
            let n = query_i64(
                &db,
                "SELECT count(*) FROM _experiment_metadata WHERE key = 'streamgauge_control' AND value = '2 ok'",
            );
            if n == 1 {
                restored_at = Some(i);
            }
        }
        assert!(
            t1.elapsed() < Duration::from_secs(30),
            "no restore within 30 s"
        );
    }
    let restored_at = restored_at.unwrap();
    c.close().unwrap();
    let total = i;
    let db = srv.db("dom");
    srv.wait_count(
        "dom",
        "SELECT count(*) FROM app_m WHERE i = (SELECT max(i) FROM app_m)",
        1,
        Duration::from_secs(10),
    );
    let stored = |lo: i64, hi: i64| {
        query_i64(
            &db,
            &format!("SELECT count(*) FROM app_m WHERE i >= {lo} AND i < {hi}"),
        )
    };
    let fast_stored = stored(0, fast_end);
    eprintln!(
        "fast phase: {fast_end} injected, {fast_stored} stored; slow phase after restore: {} injected, {} stored",
        total - restored_at,
        stored(restored_at, total)
    );
    assert!(
        (fast_stored as f64) < 0.6 * fast_end as f64,
        "the rule thinned the fast phase: {fast_stored} of {fast_end}"
    );
    assert_eq!(
        stored(restored_at, total),
        total - restored_at,
        "every sample after the restore"
    );
    let answers = query_i64(
        &db,
        "SELECT count(*) FROM _experiment_metadata WHERE key = 'streamgauge_control'",
    );
    assert!(answers >= 2);
}
