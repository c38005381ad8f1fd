//! Hostile and broken input: one client's errors never cost another client
//! its data, and names never escape the data directory.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_traversal_domain_is_rejected_and_creates_nothing() {
    let outer = tempfile::tempdir().unwrap();
    let data = outer.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let data2 = data.clone();
    let t = common::start_with(move |c| c.data_dir = data2).await;
    for domain in ["../x", "/tmp/abs", "a/b", ".hidden", "x'y"] {
        let input = common::text_header(domain, "s", 1000, &["1 a_b x:int32"]) + "0.1\t1\t1\t5\n";
        common::replay_async(t.addr, input.into_bytes()).await;
    }
    t.server.shutdown().await;
    let listing = |p: &std::path::Path| -> Vec<String> {
        std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    assert_eq!(listing(outer.path()), ["data"]);
    assert!(listing(&data).is_empty(), "{:?}", listing(&data));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_lines_are_skipped_and_other_clients_keep_their_data() {
    let t = common::start().await;
    let good = {
        let mut s = common::text_header("shared", "good", 1000, &["1 app_m x:int32 s:string"]);
        for i in 0..500 {
            s.push_str(&format!("{}.5\t1\t{i}\t{i}\tv{i}\n", i / 100));
        }
        s
    };
    // Short lines, bad values, undeclared streams, garbage bytes, a header
    // key only valid in the header: each line is rejected alone.
    let mut noisy = common::text_header("shared", "noisy", 1000, &["1 app_m x:int32 s:string"]);
    noisy.push_str("0.1\t1\t1\t7\tok\n");
    noisy.push_str("short\n\n0.1\n");
    noisy.push_str("0.2\t1\t2\tnot-a-number\tx\n");
    noisy.push_str("0.3\t9\t3\t1\n");
    noisy.push_str("\u{1}\u{2}garbage\tgarbage\tgarbage\n");
    noisy.push_str("0.4\t0\t1\t.\tdomain\tevil\n");
    noisy.push_str("0.5\t1\t4\t8\tstill here\n");
    // A binary client whose stream is cut inside a packet (fatal for it only).
    let mut raw = common::vector("0001-ref-alltypes.bin", "ref-alltypes.bin");
    raw.truncate(raw.len() - 3);

    let a = tokio::spawn(common::replay_async(t.addr, good.into_bytes()));
    let b = tokio::spawn(common::replay_async(t.addr, noisy.into_bytes()));
    let c = tokio::spawn(common::replay_async(t.addr, raw));
    let d = tokio::spawn(common::replay_async(t.addr, vec![0xAA; 10_000]));
    for h in [a, b, c, d] {
        h.await.unwrap();
    }
    t.server.shutdown().await;
    let db = common::open_db(t.dir.path(), "shared");
    let count = |sql: &str| db.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
    assert_eq!(
        count("SELECT count(*) FROM app_m WHERE oml_sender_id = 1 OR oml_sender_id = 2"),
        502
    );
    let noisy_id = count("SELECT id FROM _senders WHERE name = 'noisy'");
    let xs: Vec<i64> = db
        .prepare("SELECT x FROM app_m WHERE oml_sender_id = ?1 ORDER BY oml_seq")
        .unwrap()
        .query_map([noisy_id], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(xs, [7, 8]);
    assert_eq!(
        count("SELECT count(*) FROM _experiment_metadata WHERE key = 'domain'"),
        0
    );
    // The truncated binary capture still delivered every complete packet.
    let vdb = common::open_db(t.dir.path(), "vecdomain");
    let n: i64 = vdb
        .query_row("SELECT count(*) FROM vec_scalars", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_clients_into_one_domain() {
    let t = common::start_with(|c| c.queue_batches = 2).await;
    let clients = 8;
    let per_client = 5_000;
    let mut tasks = Vec::new();
    for c in 0..clients {
        let mut s = common::text_header(
            "many",
            &format!("node{c}"),
            1000 + c,
            &["2 app_load n:uint32 who:string"],
        );
        for i in 0..per_client {
            s.push_str(&format!("{}.25\t2\t{i}\t{i}\tnode{c}\n", i / 1000));
        }
        tasks.push(tokio::spawn(common::replay_async(t.addr, s.into_bytes())));
    }
    for h in tasks {
        h.await.unwrap();
    }
    t.server.shutdown().await;
    let db = common::open_db(t.dir.path(), "many");
    let count = |sql: &str| db.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
    assert_eq!(count("SELECT count(*) FROM app_load"), clients * per_client);
    assert_eq!(
        count("SELECT count(DISTINCT oml_sender_id) FROM app_load"),
        clients
    );
    assert_eq!(count("SELECT count(*) FROM _senders"), clients);
    // No sample twice, none missing: every (sender, seq) exactly once.
    assert_eq!(
        count("SELECT count(*) FROM (SELECT DISTINCT oml_sender_id, oml_seq FROM app_load)"),
        clients * per_client
    );
    // ts_client is rebased: client start-time - database start-time.
    let start: i64 =
        count("SELECT CAST(value AS INTEGER) FROM _experiment_metadata WHERE key = 'start_time'");
    let min_ts = db
        .query_row(
            "SELECT min(oml_ts_client) FROM app_load a JOIN _senders s ON s.id = a.oml_sender_id WHERE s.name = 'node7'",
            [],
            |r| r.get::<_, f64>(0),
        )
        .unwrap();
    assert!(
        (min_ts - (0.25 + (1007 - start) as f64)).abs() < 1e-9,
        "{min_ts} {start}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_clients_are_dropped_even_when_nothing_else_happens() {
    let t = common::start_with(|c| c.idle_timeout = Some(Duration::from_millis(300))).await;
    let addr = t.addr;
    let closed = tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(common::text_header("idle", "s", 1, &["1 a_b x:int32"]).as_bytes())
            .unwrap();
        s.write_all(b"0.1\t1\t1\t42\n0.2\t1\t2\t43").unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let start = std::time::Instant::now();
        let mut buf = [0u8; 16];
        let n = s.read(&mut buf);
        (n.ok(), start.elapsed())
    })
    .await
    .unwrap();
    assert_eq!(closed.0, Some(0), "server closed the socket");
    assert!(closed.1 < Duration::from_secs(3), "{:?}", closed.1);
    t.server.shutdown().await;
    let db = common::open_db(t.dir.path(), "idle");
    let n: i64 = db
        .query_row("SELECT count(*) FROM a_b", [], |r| r.get(0))
        .unwrap();
    // The complete line is stored; the unterminated one is reported as
    // truncated input by the decoder.
    assert_eq!(n, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extreme_start_times_do_not_kill_the_connection() {
    let t = common::start().await;
    // The first client sets the database's start time; the second one's is
    // as far from it as an i64 goes (its offset used to overflow).
    for (sender, start) in [("early", i64::MAX), ("late", i64::MIN)] {
        let input =
            common::text_header("far", sender, start, &["1 app_m x:int32"]) + "0.5\t1\t1\t7\n";
        common::replay_async(t.addr, input.into_bytes()).await;
    }
    t.server.shutdown().await;
    let db = common::open_db(t.dir.path(), "far");
    let n: i64 = db
        .query_row("SELECT count(*) FROM app_m", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 2);
}
