//! At the default `--http-nice` (19) the HTTP threads also run under
//! SCHED_IDLE (its own process: the threads of another server would mix in).

mod common;

use common::{http_thread_fields, http_thread_nices, request, start_with};

/// At the default, 19, the threads also run under SCHED_IDLE (5), which
/// yields a core at once when collection wakes up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_default_http_threads_have_idle_priority() {
    let ts = start_with(|c| {
        c.http_listen = Some("127.0.0.1:0".parse().unwrap());
    })
    .await;
    request(ts.server.http_addr().unwrap()).await;
    let policies = http_thread_fields(41);
    assert!(!policies.is_empty(), "no sg-http thread found");
    assert!(policies.iter().all(|&p| p == 5), "{policies:?}");
    assert!(http_thread_nices().iter().all(|&n| n == 19));
    ts.server.shutdown().await;
}
