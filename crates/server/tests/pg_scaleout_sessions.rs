//! A resumable sender (spec §3.6; an edge proxy) moving between two
//! collection servers on one PostgreSQL, as a load balancer may send its
//! reconnections: each server tells it where the database
//! says it stopped — also a server that still has the domain open and saw
//! the session earlier — so every tuple is stored once.

mod common;
#[path = "pg_scaleout/util.rs"]
mod util;

use std::io::Write;

use common::resume::{ack_until, open_for, tuples};
use pgtemp::{shared, unique_domain};
use util::server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_moving_between_servers_resumes_where_the_database_says() {
    let port = shared().port;
    let (a, addr_a, _da) = server(port).await;
    let (b, addr_b, _db) = server(port).await;
    let domain = unique_domain("moving");
    let d = domain.clone();
    let seqs = tokio::task::spawn_blocking(move || {
        // Keeps the domain open on A all along (A's writer remembers the
        // sessions it has served).
        let mut holder = std::net::TcpStream::connect(addr_a).unwrap();
        holder
            .write_all(
                common::text_header(&d, "holder", 1_700_000_000, &["1 other x:int32"]).as_bytes(),
            )
            .unwrap();
        let mut offset = 0u64;
        for (i, addr) in [addr_a, addr_b, addr_a].into_iter().enumerate() {
            let (mut s, mut r, resume) = open_for(addr, &d, "edge-1", offset);
            assert_eq!(resume, offset, "leg {i}: resume where the database says");
            let from = 100 * i as i64;
            let data = tuples(from, from + 100);
            s.write_all(&data).unwrap();
            offset += data.len() as u64;
            assert_eq!(ack_until(&mut r, offset), offset, "leg {i}: acknowledged");
            drop(s);
        }
        drop(holder);
        util::with_db(port, &d, |c| {
            c.query("SELECT oml_seq FROM t_m ORDER BY oml_seq", &[])
                .unwrap()
                .iter()
                .map(|r| r.get::<_, i64>(0))
                .collect::<Vec<_>>()
        })
    })
    .await
    .unwrap();
    a.shutdown().await;
    b.shutdown().await;
    assert_eq!(seqs, (0..300).collect::<Vec<i64>>(), "every tuple once");
}
