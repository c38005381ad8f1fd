//! The disk quota: `refuse` holds clients back (TCP backpressure) and
//! loses nothing; `drop-oldest` keeps clients flowing, drops the oldest
//! unacknowledged data, counts it, and never duplicates.

mod common;

use std::time::Duration;

use common::*;

fn small_quota(c: &mut proxy::ProxyConfig, policy: proxy::QuotaPolicy) {
    c.segment_size = 4096;
    c.quota = 32 << 10;
    c.quota_policy = policy;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuse_holds_the_client_back_until_forwarding_frees_space() {
    let dirs = Dirs::new();
    let up = free_addr();
    let mut config = proxy_config(&dirs.journal(), up);
    small_quota(&mut config, proxy::QuotaPolicy::Refuse);
    let (proxy, addr) = start_proxy(config).await;
    let n = 40_000; // about 1 MB: far over the quota
    let sender = tokio::task::spawn_blocking(move || stock_send(addr, "quota", "a", &tuples(0, n)));
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(
        !sender.is_finished(),
        "the proxy must stop reading at the quota"
    );
    let status = proxy.status();
    let used = status["quota"]["used"].as_u64().unwrap();
    assert!(used <= (32 << 10) + (256 << 10), "{status:#}");
    assert_eq!(status["lost_bytes"], 0);
    let server = start_server(up, &dirs.db()).await;
    sender.await.unwrap();
    wait_delivered(&proxy, Duration::from_secs(30)).await;
    let got = wait_rows(
        &dirs.db(),
        "quota",
        "t_m",
        "a",
        n as usize,
        Duration::from_secs(10),
    );
    assert_exactly(got, n, "refuse");
    proxy.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_oldest_counts_what_it_drops_and_duplicates_nothing() {
    let dirs = Dirs::new();
    let up = free_addr();
    let mut config = proxy_config(&dirs.journal(), up);
    small_quota(&mut config, proxy::QuotaPolicy::DropOldest);
    let (proxy, addr) = start_proxy(config).await;
    let n = 40_000i64;
    tokio::task::spawn_blocking(move || stock_send(addr, "drop", "a", &tuples(0, n)))
        .await
        .unwrap();
    let status = proxy.status();
    let lost = status["lost_bytes"].as_u64().unwrap();
    assert!(lost > 0, "{status:#}");
    assert_eq!(status["quota"]["dropped_bytes"].as_u64().unwrap(), lost);
    let server = start_server(up, &dirs.db()).await;
    wait_delivered(&proxy, Duration::from_secs(30)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut got = seqs(&dirs.db(), "drop", "t_m", "a");
    let rows = got.len();
    got.sort_unstable();
    got.dedup();
    assert_eq!(got.len(), rows, "no duplicates");
    assert!(rows > 0 && rows < n as usize, "{rows} rows");
    // The newest data survives; what is missing is a prefix (oldest first)
    // plus at most a tuple cut at a segment edge.
    assert_eq!(got.last(), Some(&(n - 1)));
    let kept_from = n as usize - rows;
    assert!(
        got[0] as usize >= kept_from.saturating_sub(2),
        "first kept {} of {rows}",
        got[0]
    );
    proxy.shutdown().await;
    server.shutdown().await;
}
