//! A flood of connections from one address: the proxy serves at most
//! `max_connections_per_source` of them, closes the rest unread and counts
//! them in its status document, while a client on another address has
//! every row journaled and delivered upstream. A flood client that leaves
//! frees its place.

mod common;

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// Connects from `source` (any 127.0.0.0/8 address is loopback).
async fn connect_from(source: IpAddr, to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(source, 0)).unwrap();
    socket.connect(to).await.unwrap()
}

/// True once the proxy has closed `s` (end of file or reset) within `within`.
async fn closed_by_proxy(s: &mut TcpStream, within: Duration) -> bool {
    let mut b = [0u8; 64];
    loop {
        match tokio::time::timeout(within, s.read(&mut b)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
        }
    }
}

fn refused(p: &proxy::Proxy, reason: &str) -> u64 {
    p.status()["connections"]["refused"][reason]
        .as_u64()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_flood_from_one_address_does_not_starve_another() {
    // Within the default limit of 1024 descriptors (client and proxy sides
    // share this process).
    const FLOOD: usize = 600;
    const PER_SOURCE: usize = 50;
    let dirs = Dirs::new();
    let up = free_addr();
    let mut config = proxy_config(&dirs.journal(), up);
    config.max_connections_per_source = PER_SOURCE;
    let (proxy, addr) = start_proxy(config).await;
    let server = start_server(up, &dirs.db()).await;

    let hostile: IpAddr = "127.0.0.1".parse().unwrap();
    let mut held = Vec::with_capacity(FLOOD);
    for _ in 0..FLOOD {
        let mut s = connect_from(hostile, addr).await;
        // Each stops inside its header, as a slow hostile client would.
        let _ = s.write_all(b"protocol: 5\ndomain: flood\nx-").await;
        held.push(s);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while refused(&proxy, "per_source") < (FLOOD - PER_SOURCE) as u64 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(refused(&proxy, "per_source"), (FLOOD - PER_SOURCE) as u64);
    assert_eq!(refused(&proxy, "total"), 0);
    assert_eq!(
        proxy.status()["connections"]["open"].as_u64(),
        Some(PER_SOURCE as u64)
    );
    // The refused ones were closed without being served; the admitted ones
    // are still open, waiting for the rest of their header.
    let closed = {
        let mut n = 0;
        for s in held.iter_mut().rev().take(50) {
            if closed_by_proxy(s, Duration::from_millis(100)).await {
                n += 1;
            }
        }
        n
    };
    assert_eq!(closed, 50, "the last 50 flood connections were refused");
    assert!(!closed_by_proxy(&mut held[0], Duration::from_millis(100)).await);

    // Another address: every row arrives upstream while the flood holds on.
    let n = 20_000;
    let mut good = connect_from("127.0.0.2".parse().unwrap(), addr).await;
    good.write_all(header("good", "a", "").as_bytes())
        .await
        .unwrap();
    good.write_all(&tuples(0, n)).await.unwrap();
    good.shutdown().await.unwrap();
    assert!(closed_by_proxy(&mut good, Duration::from_secs(30)).await);
    wait_delivered(&proxy, Duration::from_secs(30)).await;
    assert_stored(
        &dirs.db(),
        "good",
        "a",
        n,
        "client on another address during a flood",
    );

    // Leaving frees the places: the flood's address is served again.
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(10);
    while proxy.status()["connections"]["open"].as_u64() != Some(0) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(proxy.status()["connections"]["open"].as_u64(), Some(0));
    let before = refused(&proxy, "per_source");
    tokio::task::spawn_blocking(move || stock_send(addr, "again", "b", &tuples(0, 10)))
        .await
        .unwrap();
    assert_eq!(refused(&proxy, "per_source"), before);
    wait_delivered(&proxy, Duration::from_secs(30)).await;
    assert_stored(
        &dirs.db(),
        "again",
        "b",
        10,
        "the flood's address after the flood left",
    );
    proxy.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_total_limit_refuses_every_address() {
    let dirs = Dirs::new();
    let up = free_addr();
    let mut config = proxy_config(&dirs.journal(), up);
    config.max_connections = 3;
    let (proxy, addr) = start_proxy(config).await;
    let mut held = Vec::new();
    for i in 0..3 {
        let mut s = connect_from(format!("127.0.0.{}", i + 1).parse().unwrap(), addr).await;
        s.write_all(b"protocol: 5\n").await.unwrap();
        held.push(s);
    }
    let mut extra = connect_from("127.0.0.9".parse().unwrap(), addr).await;
    assert!(closed_by_proxy(&mut extra, Duration::from_secs(5)).await);
    assert_eq!(refused(&proxy, "total"), 1);
    assert_eq!(refused(&proxy, "per_source"), 0);
    drop(held);
    proxy.shutdown().await;
}

/// A shutdown journals what connected stock clients had already sent (the
/// connection drains until its client pauses) and what a client that
/// connected just before it left in the listen backlog: after a restart,
/// every row reaches the upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_drains_connected_and_queued_clients() {
    let dirs = Dirs::new();
    let up = free_addr();
    let config = proxy_config(&dirs.journal(), up);
    let (proxy, addr) = start_proxy(config.clone()).await;
    let n = 50_000;
    // Connected and streaming when the shutdown starts.
    let mut busy = TcpStream::connect(addr).await.unwrap();
    busy.write_all(header("drain", "busy", "").as_bytes())
        .await
        .unwrap();
    let data = tuples(0, n);
    let (first, rest) = data.split_at(data.len() / 2);
    busy.write_all(first).await.unwrap();
    // Queued: connected, rows sent and closed, perhaps not yet accepted.
    let mut queued = TcpStream::connect(addr).await.unwrap();
    queued
        .write_all(header("drain", "queued", "").as_bytes())
        .await
        .unwrap();
    queued.write_all(&tuples(0, 100)).await.unwrap();
    queued.shutdown().await.unwrap();
    let stop = tokio::spawn(proxy.shutdown());
    busy.write_all(rest).await.unwrap();
    busy.shutdown().await.unwrap();
    stop.await.unwrap();
    let mut config = config;
    config.listen = vec![addr];
    let (proxy, _) = start_proxy(config).await;
    let server = start_server(up, &dirs.db()).await;
    wait_delivered(&proxy, Duration::from_secs(30)).await;
    assert_stored(
        &dirs.db(),
        "drain",
        "busy",
        n,
        "client streaming across the shutdown",
    );
    assert_stored(
        &dirs.db(),
        "drain",
        "queued",
        100,
        "client queued at shutdown",
    );
    proxy.shutdown().await;
    server.shutdown().await;
}
