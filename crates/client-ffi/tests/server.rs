//! Test 2: the C generator streams to streamgauge's collection server over
//! TCP (binary and text); every value lands in SQLite exactly, including
//! uint64 above 2^63, strings, blobs, vectors, bools and GUIDs.

mod common;

use common::db::check_database;
use common::*;
use server::{Server, ServerConfig};

/// Runs the generator against a fresh server and returns the data dir.
async fn run_against_server(encoding: &str) -> tempfile::TempDir {
    let data = tempfile::tempdir().unwrap();
    let mut config = ServerConfig::new(data.path());
    config.listen = vec!["127.0.0.1:0".parse().unwrap()];
    let server = Server::start(config).await.unwrap();
    let addr = server.local_addrs()[0];
    let enc = encoding.to_owned();
    tokio::task::spawn_blocking(move || {
        let work = tempfile::tempdir().unwrap();
        let exe = compile("generator.c", work.path(), "generator", Link::Shared);
        let uri = format!("tcp://127.0.0.1:{}", addr.port());
        let out = run(
            &exe,
            &[
                "--oml-collect",
                &uri,
                &enc,
                "--oml-id",
                "s1",
                "--oml-domain",
                "d1",
            ],
            work.path(),
        );
        check_ok(&out);
    })
    .await
    .unwrap();
    server.shutdown().await;
    data
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generator_to_server_binary() {
    let dir = run_against_server("--oml-binary").await;
    check_database(dir.path(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generator_to_server_text() {
    let dir = run_against_server("--oml-text").await;
    check_database(dir.path(), 1);
}
