//! Upstream outages: clients keep sending into the proxy's journal while
//! the collection server is down, and every row is stored exactly once.

mod common;

use std::time::Duration;

use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stock_client_through_the_proxy_gets_nothing_back_and_every_row_is_stored() {
    let dirs = Dirs::new();
    let up = free_addr();
    let server = start_server(up, &dirs.db()).await;
    let (proxy, addr) = start_proxy(proxy_config(&dirs.journal(), up)).await;
    let data = tuples(0, 5000);
    tokio::task::spawn_blocking(move || stock_send(addr, "stock", "n1", &data))
        .await
        .unwrap();
    wait_delivered(&proxy, Duration::from_secs(20)).await;
    let got = wait_rows(
        &dirs.db(),
        "stock",
        "t_m",
        "n1",
        5000,
        Duration::from_secs(10),
    );
    assert_exactly(got, 5000, "stock client");
    proxy.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_down_at_first_then_started_stores_every_row_once() {
    let dirs = Dirs::new();
    let up = free_addr();
    let (proxy, addr) = start_proxy(proxy_config(&dirs.journal(), up)).await;
    // Four stock clients send everything while nothing listens upstream.
    let mut senders = Vec::new();
    for c in 0..4 {
        let data = tuples(0, 20_000);
        senders.push(tokio::task::spawn_blocking(move || {
            stock_send(addr, "outage", &format!("n{c}"), &data)
        }));
    }
    for s in senders {
        s.await.unwrap();
    }
    let status = proxy.status();
    assert_eq!(
        status["sessions"].as_array().unwrap().len(),
        4,
        "{status:#}"
    );
    assert!(status["pending_bytes"].as_u64().unwrap() > 0);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let server = start_server(up, &dirs.db()).await;
    wait_delivered(&proxy, Duration::from_secs(30)).await;
    for c in 0..4 {
        let got = wait_rows(
            &dirs.db(),
            "outage",
            "t_m",
            &format!("n{c}"),
            20_000,
            Duration::from_secs(10),
        );
        assert_exactly(got, 20_000, &format!("client {c}"));
    }
    proxy.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_restarted_mid_stream_loses_and_duplicates_nothing() {
    let dirs = Dirs::new();
    let up = free_addr();
    let server = start_server(up, &dirs.db()).await;
    let (proxy, addr) = start_proxy(proxy_config(&dirs.journal(), up)).await;
    const N: i64 = 60_000;
    // Slow senders, so that the restarts fall in the middle of the streams.
    let mut senders = Vec::new();
    for c in 0..2 {
        senders.push(tokio::task::spawn_blocking(move || {
            let data = tuples(0, N);
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            use std::io::Write;
            s.write_all(header("restart", &format!("n{c}"), "").as_bytes())
                .unwrap();
            for chunk in data.chunks(20_000) {
                s.write_all(chunk).unwrap();
                std::thread::sleep(Duration::from_millis(15));
            }
            s.shutdown(std::net::Shutdown::Write).unwrap();
            let mut rest = Vec::new();
            use std::io::Read;
            let _ = s.read_to_end(&mut rest);
        }));
    }
    let mut server = Some(server);
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        server.take().unwrap().shutdown().await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        server = Some(start_server(up, &dirs.db()).await);
    }
    for s in senders {
        s.await.unwrap();
    }
    wait_delivered(&proxy, Duration::from_secs(30)).await;
    for c in 0..2 {
        let got = wait_rows(
            &dirs.db(),
            "restart",
            "t_m",
            &format!("n{c}"),
            N as usize,
            Duration::from_secs(10),
        );
        assert_exactly(got, N, &format!("client {c}"));
    }
    proxy.shutdown().await;
    server.unwrap().shutdown().await;
}
