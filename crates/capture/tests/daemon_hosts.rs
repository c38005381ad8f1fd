//! The capture daemon's control API (the daemon runs as root) refuses
//! requests that a web page re-binding its name to 127.0.0.1 would send:
//! the issue measured such a page creating, starting, downloading and
//! deleting a capture session on `lo`.

use capture::daemon::{Daemon, DaemonConfig};

#[test]
fn rebinding_pages_cannot_drive_the_daemon() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = DaemonConfig::new(&["lo"], dir.path().join("data"));
    cfg.listen = "127.0.0.1:0".parse().unwrap();
    cfg.allowed_hosts = vec!["capture1.testbed".into()];
    cfg.plain_http = true;
    let token_file = cfg.effective_token_file();
    let daemon = rt.block_on(Daemon::start(cfg)).unwrap();
    let token = httpkit::token_init::own_token(&token_file)
        .unwrap()
        .unwrap();
    let bearer = format!("Bearer {token}");
    let addr = daemon.local_addr();
    let session = r#"{"id":"s1","experiment":"lab","interface":"lo","outputs":[]}"#;
    httpkit::probe::assert_host_checks(
        addr,
        "/api/v1/sessions",
        "/api/v1/sessions",
        session,
        &["capture1.testbed:7300"],
    );
    // Nothing was created by the refused requests.
    let (status, body) = httpkit::probe::raw_request(
        addr,
        "GET",
        "/api/v1/sessions",
        &[("Host", "localhost"), ("Authorization", bearer.as_str())],
        "",
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(
        !body.contains("s1"),
        "a refused request created a session: {body}"
    );
    rt.block_on(daemon.shutdown());
}
