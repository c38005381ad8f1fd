//! The HTTP endpoints run on their own threads at a lower priority than
//! collection (`--http-nice`): checked on the threads the kernel reports,
//! and the endpoints still answer from there.

mod common;

use common::{http_thread_fields, http_thread_nices, request, start_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_threads_are_niced_and_collection_is_not() {
    let ts = start_with(|c| {
        c.http_listen = Some("127.0.0.1:0".parse().unwrap());
        c.http_nice = 7;
    })
    .await;
    let http = ts.server.http_addr().unwrap();
    request(http).await;
    let nices = http_thread_nices();
    assert!(!nices.is_empty(), "no sg-http thread found");
    assert!(nices.iter().all(|&n| n == 7), "{nices:?}");
    // Scheduling policy (field 41): SCHED_OTHER (0) below 19.
    assert!(http_thread_fields(41).iter().all(|&p| p == 0));
    // This test's own threads (where connections and writers run) keep 0.
    assert_eq!(server::http_runtime::current_nice(), 0);
    ts.server.shutdown().await;
}
