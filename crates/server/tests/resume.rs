//! Resumable sessions (spec §3.6): resume offsets, acknowledgements, a
//! connection taken over by a reconnecting sender, and no change at all for
//! stock clients.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::resume::{ack_until, header, open, tuples, SCHEMA};

fn seqs(dir: &std::path::Path) -> Vec<i64> {
    let db = common::open_db(dir, "resume");
    let mut stmt = db
        .prepare("SELECT oml_seq FROM t_m ORDER BY oml_tuple_id")
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_cover_the_data_and_a_resumed_session_continues_exactly() {
    let t = common::start().await;
    let addr = t.addr;
    let dir = t.dir.path().to_owned();
    tokio::task::spawn_blocking(move || {
        let first = tuples(0, 500);
        let (mut s, mut r, resume) = open(addr, "sess-1", 0);
        assert_eq!(resume, 0);
        s.write_all(&first).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(ack_until(&mut r, first.len() as u64), first.len() as u64);

        // The sender reconnects: the server says where it is, the sender goes on.
        let second = tuples(500, 800);
        let (mut s, mut r, resume) = open(addr, "sess-1", first.len() as u64);
        assert_eq!(resume, first.len() as u64);
        s.write_all(&second).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let end = (first.len() + second.len()) as u64;
        assert_eq!(ack_until(&mut r, end), end);
        assert_eq!(seqs(&dir), (0..800).collect::<Vec<_>>());
        let db = common::open_db(&dir, "resume");
        let stored: (String, i64, i64) = db
            .query_row(
                "SELECT session, sender_id, data_offset FROM _streamgauge_sessions",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(stored, ("sess-1".to_owned(), 1, end as i64));
    })
    .await
    .unwrap();
    t.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnecting_sender_takes_over_and_resumes_at_the_last_whole_tuple() {
    let t = common::start().await;
    let addr = t.addr;
    let dir = t.dir.path().to_owned();
    tokio::task::spawn_blocking(move || {
        let all = tuples(0, 1000);
        // The first connection dies mid-tuple, without closing (a crashed
        // path): the server still holds it open.
        let cut = all.len() / 2 + 7;
        let (mut old, _old_r, _) = open(addr, "sess-2", 0);
        old.write_all(&all[..cut]).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        // The sender reconnects and is told to resume at a tuple boundary.
        let (mut s, mut r, resume) = open(addr, "sess-2", 0);
        let resume = resume as usize;
        assert!(resume <= cut && resume > 0, "resume {resume}, cut {cut}");
        assert_eq!(all[resume - 1], b'\n');
        s.write_all(&all[resume..]).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(ack_until(&mut r, all.len() as u64), all.len() as u64);
        // The superseded connection was closed by the server.
        let mut rest = Vec::new();
        old.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = old.read_to_end(&mut rest);
        assert_eq!(seqs(&dir), (0..1000).collect::<Vec<_>>());
    })
    .await
    .unwrap();
    t.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resume_point_survives_a_server_restart() {
    let t = common::start().await;
    let dir = t.dir;
    let addr = t.addr;
    let first = tuples(0, 300);
    let sent = first.len() as u64;
    tokio::task::spawn_blocking(move || {
        let (mut s, mut r, _) = open(addr, "sess-3", 0);
        s.write_all(&first).unwrap();
        assert_eq!(ack_until(&mut r, sent), sent);
    })
    .await
    .unwrap();
    t.server.shutdown().await;

    let dir_path = dir.path().to_owned();
    let restarted = common::start_with(|c| c.data_dir = dir_path.clone()).await;
    let addr = restarted.addr;
    let check_dir = dir_path.clone();
    tokio::task::spawn_blocking(move || {
        let (mut s, mut r, resume) = open(addr, "sess-3", 0);
        assert_eq!(resume, sent);
        let more = tuples(300, 400);
        s.write_all(&more).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let end = sent + more.len() as u64;
        assert_eq!(ack_until(&mut r, end), end);
        assert_eq!(seqs(&check_dir), (0..400).collect::<Vec<_>>());
    })
    .await
    .unwrap();
    restarted.server.shutdown().await;
    drop(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stock_clients_get_nothing_back_and_bad_keys_are_refused() {
    let t = common::start().await;
    let addr = t.addr;
    tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        let h = common::text_header("resume", "n2", 1_700_000_000, &[SCHEMA]);
        s.write_all(h.as_bytes()).unwrap();
        s.write_all(&tuples(0, 10)).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut back = Vec::new();
        s.read_to_end(&mut back).unwrap();
        assert!(back.is_empty(), "{:?}", String::from_utf8_lossy(&back));

        let bad = header("sess-4", 0).replace(
            "x-streamgauge-backchannel: 1",
            "x-streamgauge-backchannel: 9",
        );
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(bad.as_bytes()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut back = Vec::new();
        let _ = s.read_to_end(&mut back);
        assert!(back.is_empty(), "no resume line for an unknown version");
    })
    .await
    .unwrap();
    t.server.shutdown().await;
}
