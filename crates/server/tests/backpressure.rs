//! A stalled database does not make the server buffer without bound: the
//! connection stops reading, TCP pushes back on the client, and once the
//! database is free again every row arrives.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_database_turns_into_tcp_backpressure_without_loss() {
    let t = common::start_with(|c| {
        c.sqlite.busy_timeout = Duration::from_secs(60);
        c.queue_batches = 1;
        c.batch_rows = 64;
    })
    .await;
    // Create the database, then lock it from outside (as a long-running
    // writer in another process would).
    let hello =
        common::text_header("bp", "first", 1, &["1 a_b n:int32 s:string"]) + "0.1\t1\t0\t0\tx\n";
    common::replay_async(t.addr, hello.into_bytes()).await;
    let dir = t.dir.path().to_owned();
    let addr = t.addr;
    let rows = 40_000;
    let payload = "p".repeat(1000);
    let outcome = tokio::task::spawn_blocking(move || {
        let lock = common::open_db(&dir, "bp");
        lock.execute_batch("BEGIN IMMEDIATE").unwrap();

        let mut input =
            common::text_header("bp", "big", 1, &["1 a_b n:int32 s:string"]).into_bytes();
        for i in 1..=rows {
            input.extend_from_slice(format!("0.5\t1\t{i}\t{i}\t{payload}\n").as_bytes());
        }
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_write_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut sent = 0;
        let blocked_at = loop {
            match s.write(&input[sent..]) {
                Ok(n) => sent += n,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    break sent
                }
                Err(e) => panic!("{e}"),
            }
            assert!(
                sent < input.len(),
                "the server read everything while its database was locked"
            );
        };
        lock.execute_batch("COMMIT").unwrap();
        drop(lock);
        s.set_write_timeout(None).unwrap();
        s.write_all(&input[sent..]).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let _ = s.read_to_end(&mut Vec::new());
        (blocked_at, input.len())
    })
    .await
    .unwrap();
    t.server.shutdown().await;
    // What got through is the kernel's socket buffers (about 4 MB on
    // loopback here) plus one read chunk, not the 40 MB the client had.
    let (blocked_at, total) = outcome;
    assert!(
        blocked_at < total / 2,
        "client blocked only after {blocked_at} of {total} bytes"
    );
    let db = common::open_db(t.dir.path(), "bp");
    let (n, distinct): (i64, i64) = db
        .query_row(
            "SELECT count(*), count(DISTINCT oml_seq) FROM a_b WHERE oml_sender_id = 2",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((n, distinct), (rows, rows));
}
