//! The manager over TLS: a login through a real TLS client (trusting a
//! self-signed certificate made here) gets a `Secure` session cookie, and
//! a plaintext client gets nothing useful.

mod common;

use std::sync::Arc;

use common::{start, ADMIN_PW};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::{self, crypto::ring, RootCertStore};
use tokio_rustls::TlsConnector;

#[test]
fn login_over_tls_sets_a_secure_cookie() {
    let rcgen::CertifiedKey { cert, key_pair } =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cp, kp) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cp, cert.pem()).unwrap();
    httpkit::secret::write_private(&kp, key_pair.serialize_pem()).unwrap();
    let t = start(|c| c.tls = Some((cp.clone(), kp.clone())));
    let addr = t.base.trim_start_matches("http://").to_owned();

    let body = format!(r#"{{"username":"admin","password":"{ADMIN_PW}"}}"#);
    let request = format!(
        "POST /api/v1/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let answer = t.rt.block_on(async {
        let mut roots = RootCertStore::empty();
        roots.add(cert.der().clone()).unwrap();
        let config =
            rustls::ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth();
        let tcp = TcpStream::connect(&addr).await.unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let mut tls = TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .unwrap();
        tls.write_all(request.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        let _ = tls.read_to_end(&mut out).await;
        String::from_utf8_lossy(&out).into_owned()
    });
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let cookie = answer
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .unwrap_or_else(|| panic!("no cookie in {answer}"));
    assert!(
        cookie.contains("sg_session=") && cookie.contains("; Secure"),
        "{cookie}"
    );
    assert!(answer.contains("csrf_token"), "{answer}");

    // Plaintext HTTP on the TLS port is not answered as HTTP.
    let plain = t.rt.block_on(async {
        let mut s = TcpStream::connect(&addr).await.unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        let _ =
            tokio::time::timeout(std::time::Duration::from_secs(5), s.read_to_end(&mut out)).await;
        out
    });
    assert!(!String::from_utf8_lossy(&plain).contains("csrf_token"));
}
