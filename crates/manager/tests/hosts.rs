//! The manager answers only to its own names: loopback names, IP literals
//! and the names it is deployed under (`--allow-host`, a name or its
//! public URL). A page that re-binds its name to the manager's address is
//! refused, for the API and for the front end's files alike.

mod common;

use common::{start, ADMIN_PW};
use httpkit::probe::{assert_host_checks, raw_request};

#[test]
fn rebinding_pages_are_refused_and_public_names_served() {
    let t = start(|c| c.allowed_hosts = vec!["https://lab.example/manager".into()]);
    let addr: std::net::SocketAddr = t.base.trim_start_matches("http://").parse().unwrap();
    let login = format!(r#"{{"username":"admin","password":"{ADMIN_PW}"}}"#);
    assert_host_checks(
        addr,
        "/api/v1/me",
        "/api/v1/login",
        &login,
        &["lab.example", "lab.example:443"],
    );
    // The front end's files (served after the API's layers) too.
    let (status, body) = raw_request(addr, "GET", "/", &[("Host", "evil.example")], "").unwrap();
    assert_eq!(status, 421, "{body}");
    let (status, body) = raw_request(addr, "GET", "/", &[("Host", "lab.example")], "").unwrap();
    assert_eq!(status, 200, "{body}");
    // A login from the manager's own public page works.
    let (status, body) = raw_request(
        addr,
        "POST",
        "/api/v1/login",
        &[
            ("Host", "lab.example"),
            ("Origin", "https://lab.example"),
            ("Content-Type", "application/json"),
        ],
        &login,
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
}
