//! The query API served by a running server: token scopes on real
//! requests, rows that clients sent over OMSP read back exactly, and a live
//! tail that sees rows committed after it started.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::{start_with, text_header, wait_count};
use httpkit::client::{Client, ClientError};

const TOKENS: &str = "\
# lab1's collection token; it reads nothing
lab1   collector
lab*   reader      read
other  stranger    read
*      ops         read,control
";

fn client(http: SocketAddr, token: Option<&str>) -> Client {
    Client::new(&http.to_string(), "server HTTP", "").with_token(token.map(str::to_owned))
}

fn status(r: Result<String, ClientError>) -> u16 {
    match r {
        Ok(_) => 200,
        Err(ClientError::Status { status, .. }) => status,
        Err(e) => panic!("{e}"),
    }
}

/// Text-mode rows `from..to` of `t_m` (x:int32, y:uint64 near the top).
fn rows(from: i64, to: i64) -> String {
    (from..to)
        .map(|i| format!("{}.5\t1\t{i}\t{i}\t{}\n", i, u64::MAX - i as u64))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scopes_exact_rows_and_a_live_tail() {
    let tokens = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tokens.path(), TOKENS).unwrap();
    let t = start_with(|c| {
        c.http_listen = Some("127.0.0.1:0".parse().unwrap());
        c.auth = Some(server::AuthSettings {
            file: tokens.path().to_owned(),
            required: false,
        });
    })
    .await;
    let http = t.server.http_addr().unwrap();
    let addr = t.addr;
    let dir = t.dir.path().to_owned();
    tokio::task::spawn_blocking(move || {
        // A client of lab1 (which needs its collection token) sends 100 rows
        // and keeps the connection open for the live part.
        let mut s = TcpStream::connect(addr).unwrap();
        let mut head = text_header("lab1", "n1", 1_700_000_000, &["1 t_m x:int32 y:uint64"]);
        let at = head.find("content:").unwrap();
        head.insert_str(at, "x-streamgauge-auth: collector\n");
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(rows(0, 100).as_bytes()).unwrap();
        wait_count(
            &dir,
            "lab1",
            "SELECT count(*) FROM t_m",
            100,
            Duration::from_secs(10),
        );

        let path = "/api/v1/domains/lab1/streams/t_m/rows?limit=1000";
        assert_eq!(status(client(http, None).get(path)), 401);
        assert_eq!(status(client(http, Some("wrong")).get(path)), 401);
        assert_eq!(
            status(client(http, Some("collector")).get(path)),
            403,
            "collection-only"
        );
        assert_eq!(
            status(client(http, Some("stranger")).get(path)),
            403,
            "another domain's reader"
        );
        let body = client(http, Some("reader")).get(path).unwrap();
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let rows_json = v["rows"].as_array().unwrap();
        assert_eq!(rows_json.len(), 100);
        let fields: Vec<&str> = v["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().or(f.as_str()).unwrap())
            .collect();
        let y = fields.iter().position(|f| *f == "y").unwrap();
        assert_eq!(
            rows_json[7][y].to_string(),
            (u64::MAX - 7).to_string(),
            "uint64 exact"
        );
        let listed = client(http, Some("stranger"))
            .get("/api/v1/domains")
            .unwrap();
        assert!(
            !listed.contains("lab1"),
            "a reader sees only its domains: {listed}"
        );
        assert_eq!(status(client(http, Some("reader")).get("/metrics")), 200);
        let ctl = serde_json::json!({"action": "pause"});
        assert_eq!(
            status(client(http, Some("reader")).post_json("/control/lab1/n1", &ctl)),
            403
        );
        assert_eq!(
            status(client(http, Some("ops")).post_json("/control/lab1/n1", &ctl)),
            404
        );

        // Live tail from the last row: rows sent now arrive as events.
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(20)))
            .build()
            .into();
        let resp = agent
            .get(format!(
                "http://{http}/api/v1/domains/lab1/streams/t_m/tail?after=100"
            ))
            .header("Authorization", "Bearer reader")
            .call()
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        let mut events = BufReader::new(resp.into_body().into_reader());
        let sent = Instant::now();
        s.write_all(rows(100, 110).as_bytes()).unwrap();
        let mut ids = Vec::new();
        let mut line = String::new();
        while ids.len() < 10 {
            line.clear();
            assert!(events.read_line(&mut line).unwrap() > 0, "tail ended early");
            if let Some(id) = line.trim_end().strip_prefix("id:") {
                ids.push(id.trim().parse::<u64>().unwrap());
            }
        }
        assert_eq!(ids, (101..=110).collect::<Vec<u64>>());
        assert!(
            sent.elapsed() < Duration::from_secs(5),
            "{:?}",
            sent.elapsed()
        );
        drop(s);
    })
    .await
    .unwrap();
    t.server.shutdown().await;
}
