//! The HTTP endpoints run on their own threads at a lower priority than
//! collection (`--http-nice`): checked on the threads the kernel reports,
//! and the endpoints still answer from there.

mod common;

use common::start_with;
use httpkit::client::Client;

/// Nice values of this process's threads named `sg-http` (field 19 of
/// /proc/self/task/<tid>/stat, after the parenthesised name).
fn http_thread_nices() -> Vec<i64> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(comm) = std::fs::read_to_string(task.path().join("comm")) else {
            continue;
        };
        if !comm.starts_with("sg-http") {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap();
        let after_name = &stat[stat.rfind(')').unwrap() + 2..];
        // Fields from 3 (state) on; nice is field 19.
        let nice = after_name.split(' ').nth(19 - 3).unwrap();
        out.push(nice.parse().unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_threads_are_niced_and_collection_is_not() {
    let ts = start_with(|c| {
        c.http_listen = Some("127.0.0.1:0".parse().unwrap());
        c.http_nice = 7;
    })
    .await;
    let http = ts.server.http_addr().unwrap();
    // A request makes the runtime start its workers (and answers).
    let body = tokio::task::spawn_blocking(move || {
        Client::new(&http.to_string(), "server HTTP", "")
            .get("/api/v1/domains")
            .unwrap()
    })
    .await
    .unwrap();
    assert!(body.trim_start().starts_with('['), "{body}");
    let nices = http_thread_nices();
    assert!(!nices.is_empty(), "no sg-http thread found");
    assert!(nices.iter().all(|&n| n == 7), "{nices:?}");
    // This test's own threads (where connections and writers run) keep 0.
    assert_eq!(server::http_runtime::current_nice(), 0);
    ts.server.shutdown().await;
}
