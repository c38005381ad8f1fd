//! Proxy crashes: the proxy's runtime is dropped abruptly (every task
//! stops at its next await, nothing is flushed or closed cleanly: the
//! journal on disk is what the killed process left) and a new proxy
//! starts on the same journal directory. A sender that speaks spec §3.6
//! resumes where the new proxy says; every row is stored exactly once.

mod common;

use std::time::Duration;

use common::*;

/// A proxy on its own runtime, so that it can be killed.
struct Killable {
    rt: tokio::runtime::Runtime,
    proxy: Option<proxy::Proxy>,
}

fn start_killable(config: proxy::ProxyConfig) -> Killable {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let proxy = rt.block_on(proxy::Proxy::start(config)).unwrap();
    Killable {
        rt,
        proxy: Some(proxy),
    }
}

impl Killable {
    fn kill(mut self) {
        let p = self.proxy.take();
        self.rt.shutdown_background();
        drop(p);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_proxy_restarts_from_its_journal_without_loss_or_duplicates() {
    let dirs = Dirs::new();
    let up = free_addr();
    let mut server = Some(start_server(up, &dirs.db()).await);
    let listen = free_addr();
    let config = {
        let mut c = proxy_config(&dirs.journal(), up);
        c.listen = vec![listen];
        c
    };
    const N: i64 = 40_000;
    let c = config.clone();
    let mut p = Some(
        tokio::task::spawn_blocking(move || start_killable(c))
            .await
            .unwrap(),
    );
    // Two resumable senders and one stock sender (sent before the kills).
    let mut senders = Vec::new();
    for c in 0..2 {
        senders.push(std::thread::spawn(move || {
            let mut s = ResumableSender::new(listen, "crash", &format!("r{c}"), N);
            s.run(16_000, Duration::from_millis(10), Duration::from_secs(60));
            s
        }));
    }
    let stock = tuples(0, 10_000);
    tokio::task::spawn_blocking(move || stock_send(listen, "crash", "stock", &stock))
        .await
        .unwrap();
    // Kill the proxy three times mid-stream, once with the upstream down too.
    for round in 0..3 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let dead = p.take().unwrap();
        tokio::task::spawn_blocking(move || dead.kill())
            .await
            .unwrap();
        if round == 1 {
            server.take().unwrap().shutdown().await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let c = config.clone();
        p = Some(
            tokio::task::spawn_blocking(move || start_killable(c))
                .await
                .unwrap(),
        );
        if round == 1 {
            tokio::time::sleep(Duration::from_millis(300)).await;
            server = Some(start_server(up, &dirs.db()).await);
        }
    }
    let mut late = 0;
    for s in senders {
        let s = tokio::task::spawn_blocking(move || s.join().unwrap())
            .await
            .unwrap();
        assert!(s.connections > 1, "the sender should have reconnected");
        late = s.late_tuples(N);
    }
    let p = p.take().unwrap();
    let proxy = p.proxy.as_ref().unwrap();
    wait_delivered(proxy, Duration::from_secs(30)).await;
    let db = dirs.db();
    for c in 0..2 {
        let sender = format!("r{c}");
        let got = wait_rows(
            &db,
            "crash",
            "t_m",
            &sender,
            N as usize,
            Duration::from_secs(10),
        );
        assert_exactly(got, N, &sender);
        let got = wait_rows(
            &db,
            "crash",
            "t_late",
            &sender,
            late as usize,
            Duration::from_secs(10),
        );
        assert_exactly(got, late, &format!("{sender} late stream"));
    }
    let got = wait_rows(
        &db,
        "crash",
        "t_m",
        "stock",
        10_000,
        Duration::from_secs(10),
    );
    assert_exactly(got, 10_000, "stock sender");
    tokio::task::spawn_blocking(move || p.kill()).await.unwrap();
    server.unwrap().shutdown().await;
}
