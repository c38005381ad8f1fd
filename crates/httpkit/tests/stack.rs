//! The shared layers, through a real listener and the real client.

use std::sync::Arc;

use axum::routing::{get, post};
use axum::Json;
use httpkit::client::{Client, ClientError};
use httpkit::{Access, ApiResult, Authenticator, Caller, DomainPattern, Grants, HttpConfig};

struct Tokens;
impl Authenticator for Tokens {
    fn grants(&self, token: &str) -> Option<Grants> {
        match token {
            "admin" => Some(Grants::all()),
            "reader" => Some(Grants {
                read: vec![DomainPattern::new("lab*")],
                control: false,
            }),
            "collector" => Some(Grants::default()),
            _ => None,
        }
    }
}

async fn read(
    caller: Caller,
    axum::extract::Path(d): axum::extract::Path<String>,
) -> ApiResult<String> {
    caller.require_read(&d)?;
    Ok(format!("data of {d}"))
}

async fn control(
    caller: Caller,
    Json(v): Json<serde_json::Value>,
) -> ApiResult<Json<serde_json::Value>> {
    caller.require_control()?;
    Ok(Json(v))
}

/// A state-changing endpoint that never looks at its body (as logout).
async fn ignores_body() -> &'static str {
    "done"
}

async fn start(config: HttpConfig) -> String {
    let app = axum::Router::new()
        .route("/read/{domain}", get(read))
        .route("/control", post(control))
        .route("/ignore", post(ignores_body));
    let app = config.apply(app);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(httpkit::serve(listener, app, std::future::pending()));
    format!("http://{addr}")
}

fn status(r: Result<String, ClientError>) -> (u16, String) {
    match r {
        Ok(_) => (200, String::new()),
        Err(ClientError::Status { status, code, .. }) => (status, code),
        Err(e) => panic!("{e}"),
    }
}

fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(f).join().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_scopes_and_guards() {
    let base = start(HttpConfig {
        access: Access {
            authenticator: Some(Arc::new(Tokens)),
            public: false,
        },
        ..HttpConfig::default()
    })
    .await;
    blocking(move || {
        let c = |t: Option<&str>| Client::new(&base, "test", "").with_token(t.map(str::to_owned));
        assert_eq!(
            status(c(None).get("/read/lab1")),
            (401, "unauthenticated".into())
        );
        assert_eq!(
            status(c(Some("x")).get("/read/lab1")),
            (401, "invalid_token".into())
        );
        assert_eq!(c(Some("reader")).get("/read/lab1").unwrap(), "data of lab1");
        assert_eq!(
            status(c(Some("reader")).get("/read/other")),
            (403, "forbidden".into())
        );
        assert_eq!(
            status(c(Some("collector")).get("/read/lab1")),
            (403, "forbidden".into())
        );
        let body = serde_json::json!({"a": 1});
        assert_eq!(
            status(c(Some("reader")).post_json("/control", &body)),
            (403, "forbidden".into())
        );
        assert_eq!(
            c(Some("admin"))
                .post_json("/control", &body)
                .unwrap()
                .trim(),
            r#"{"a":1}"#
        );
        assert_eq!(
            status(c(Some("admin")).get("/nope")),
            (404, "no_such_endpoint".into())
        );
        assert_eq!(
            status(c(Some("admin")).get("/control")),
            (405, "method_not_allowed".into())
        );
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forms_and_big_bodies_are_refused() {
    let base = start(HttpConfig::default()).await;
    blocking(move || {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let url = format!("{base}/control");
        let r = agent
            .post(&url)
            .content_type("application/x-www-form-urlencoded")
            .send("a=1")
            .unwrap();
        assert_eq!(r.status(), 415);
        let r = agent.post(&url).send("").unwrap();
        assert_eq!(r.status(), 415, "no content type at all is refused too");
        let big = format!("\"{}\"", "x".repeat(100_000));
        let r = agent
            .post(&url)
            .content_type("application/json")
            .send(big.as_str())
            .unwrap();
        assert_eq!(r.status(), 413);
        let ok = Client::new(&base, "test", "").post_json("/control", &serde_json::json!([1]));
        assert_eq!(
            ok.unwrap().trim(),
            "[1]",
            "loopback without a token file may control"
        );
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_the_handler_ignores_does_not_cost_the_connection() {
    use std::io::{Read, Write};
    let base = start(HttpConfig::default()).await;
    blocking(move || {
        let addr = base.trim_start_matches("http://");
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        // The head first, the body a moment later (as a busy client sends
        // them): the answer waits for the body, and the connection stays
        // open for the next request.
        s.write_all(
            b"POST /ignore HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n",
        )
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        s.write_all(b"{}").unwrap();
        s.write_all(b"GET /read/lab1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&got).contains("data of lab1") {
            let n = s.read(&mut buf).unwrap();
            let text = String::from_utf8_lossy(&got).into_owned();
            assert!(
                n > 0,
                "the connection closed after the first answer: {text}"
            );
            got.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        assert!(text.contains("done"), "{text}");
    });
}
