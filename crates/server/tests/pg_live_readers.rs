//! Live readers of a PostgreSQL domain while a client streams into it: the
//! writer publishes each commit's last id, and the live tail, the tiles'
//! catch-up and the `points=` edges stop their scans there instead of
//! walking through the rows of the writer's next transaction (which the
//! pump inserts before they commit). Whatever the timing, the tail gets
//! every row once and in order, and a plot reaches the last row.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::text_header;
use pgtemp::{shared, unique_domain};
use server::{Backend, PgOptions};

/// Rows sent while the readers follow: each carries a 60-byte string, so
/// a commit of a few thousand is streamed by the pump.
const ROWS: i64 = 60_000;

fn row(i: i64) -> String {
    format!("{i}.5\t1\t{i}\t{i}\t{i:0>60}\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_tiles_and_edges_follow_a_streamed_ingest_exactly() {
    let opts = PgOptions {
        host: "127.0.0.1".into(),
        port: shared().port,
        user: "oml".into(),
        ..PgOptions::default()
    };
    let t = common::start_with(move |c| {
        c.backend = Backend::Postgres(opts);
        c.http_listen = Some("127.0.0.1:0".parse().unwrap());
    })
    .await;
    let http = t.server.http_addr().unwrap();
    let addr = t.addr;
    let domain = unique_domain("live");
    tokio::task::spawn_blocking(move || {
        let api = httpkit::client::Client::new(&http.to_string(), "server HTTP", "");
        let stream = format!("/api/v1/domains/{domain}/streams/t_m");
        let mut s = TcpStream::connect(addr).unwrap();
        let mut head = text_header(&domain, "n1", 1_700_000_000, &["1 t_m x:int32 s:string"]);
        head.extend((1..=100).map(row));
        s.write_all(head.as_bytes()).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !api
            .get(&stream)
            .is_ok_and(|i| serde_json::from_str::<serde_json::Value>(&i).unwrap()["rows"] == 100)
        {
            assert!(
                std::time::Instant::now() < deadline,
                "first rows not stored"
            );
            std::thread::sleep(Duration::from_millis(50));
        }

        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(120)))
            .build()
            .into();
        let resp = agent
            .get(format!("http://{http}{stream}/tail?batch=true"))
            .call()
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        let mut events = BufReader::new(resp.into_body().into_reader());

        // A plot reloading all along (tiles caught up per commit, edges read
        // per request).
        let done = Arc::new(AtomicBool::new(false));
        let plot = {
            let (done, stream) = (done.clone(), stream.clone());
            std::thread::spawn(move || {
                let api = httpkit::client::Client::new(&http.to_string(), "server HTTP", "");
                let mut n = 0;
                while !done.load(Ordering::Relaxed) {
                    api.get(&format!("{stream}/rows?points=400&fields=x"))
                        .unwrap();
                    n += 1;
                }
                n
            })
        };
        let sender = std::thread::spawn(move || {
            let mut chunk = String::new();
            for i in 101..=100 + ROWS {
                chunk.push_str(&row(i));
                if i % 2000 == 0 {
                    s.write_all(chunk.as_bytes()).unwrap();
                    chunk.clear();
                }
            }
            s.write_all(chunk.as_bytes()).unwrap();
            s
        });

        // Batched events: `id:` is the batch's last id; each `data:` line a
        // row whose first value is its id.
        let mut ids = Vec::new();
        let mut line = String::new();
        while ids.len() < ROWS as usize {
            line.clear();
            assert!(events.read_line(&mut line).unwrap() > 0, "tail ended early");
            if let Some(data) = line.trim_end().strip_prefix("data:") {
                let v: serde_json::Value = serde_json::from_str(data.trim()).unwrap();
                if let Some(id) = v.get(0).and_then(|x| x.as_i64()) {
                    ids.push(id);
                }
            }
        }
        let want: Vec<i64> = (101..=100 + ROWS).collect();
        assert!(ids == want, "the tail got every row once, in order");
        let _s = sender.join().unwrap();
        done.store(true, Ordering::Relaxed);
        assert!(plot.join().unwrap() > 0);

        // The plot now reaches the last row (M4 keeps each bucket's last).
        let page: serde_json::Value = serde_json::from_str(
            &api.get(&format!("{stream}/rows?points=400&fields=x"))
                .unwrap(),
        )
        .unwrap();
        let last = page["rows"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last[0], 100 + ROWS, "{last}");
    })
    .await
    .unwrap();
    t.server.shutdown().await;
}
