//! The security extensions: TLS on the collection port and token
//! authentication per domain. Stock (plaintext, token-less) clients keep
//! working wherever the configuration allows them.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::reference::{alltypes_fixes, assert_matches, sqlite_u64};
use server::{AuthSettings, ServerError, TlsSettings};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{self, crypto::ring, RootCertStore};
use tokio_rustls::TlsConnector;

/// A self-signed certificate for `localhost`, written as PEM files.
struct Cert {
    /// The certificate, for the client's trust store.
    der: CertificateDer<'static>,
    /// `cert.pem` and `key.pem`.
    cert: PathBuf,
    key: PathBuf,
    /// Keeps the files.
    _dir: tempfile::TempDir,
}

fn self_signed() -> Cert {
    let rcgen::CertifiedKey { cert, key_pair } =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cert_path, key_path) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_path, cert.pem()).unwrap();
    httpkit::secret::write_private(&key_path, key_pair.serialize_pem()).unwrap();
    Cert {
        der: cert.der().clone(),
        cert: cert_path,
        key: key_path,
        _dir: dir,
    }
}

/// Sends `bytes` over TLS, closes (close_notify, FIN) and waits for the
/// server to close.
async fn send_tls(addr: SocketAddr, trust: &CertificateDer<'static>, bytes: &[u8]) {
    let mut roots = RootCertStore::empty();
    roots.add(trust.clone()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let mut tls = TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap();
    tls.write_all(bytes).await.unwrap();
    tls.shutdown().await.unwrap();
    let mut sink = Vec::new();
    let _ = tls.read_to_end(&mut sink).await;
}

/// Sends plaintext, ignoring a server that closes early (a refusal).
async fn send_plain(addr: SocketAddr, bytes: Vec<u8>) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let _ = s.write_all(&bytes).await;
    let _ = s.shutdown().await;
    let mut sink = Vec::new();
    let _ = s.read_to_end(&mut sink).await;
}

/// The reference binary capture, with `extra` header lines before `content:`.
fn capture_with(extra: &str) -> Vec<u8> {
    let raw = common::vector("0001-ref-alltypes.bin", "ref-alltypes.bin");
    let at = raw
        .windows(9)
        .position(|w| w == b"content: ")
        .expect("capture has a content line");
    [&raw[..at], extra.as_bytes(), &raw[at..]].concat()
}

fn assert_capture_stored(dir: &Path) {
    let expected = common::vector_json("0001-ref-alltypes.rows.json", "ref-alltypes.rows.json");
    let expected = expected["vecdomain"].as_object().unwrap().clone();
    let got = common::dump(&common::open_db(dir, "vecdomain"));
    assert_matches(expected, &got, &alltypes_fixes(sqlite_u64), |_, want| {
        want["column_types"].clone()
    });
}

/// A stock-style text client: `n` rows of `x` = 0..n into `domain`.
fn text_client(domain: &str, extra: &str, n: i32) -> Vec<u8> {
    let mut s = common::text_header(domain, "s", 1000, &["1 app_m x:int32"]);
    s.insert_str(s.find("content:").unwrap(), extra);
    for i in 0..n {
        s.push_str(&format!("0.5\t1\t{i}\t{i}\n"));
    }
    s.into_bytes()
}

fn xs(dir: &Path, domain: &str) -> Vec<i64> {
    common::open_db(dir, domain)
        .prepare("SELECT x FROM app_m ORDER BY oml_seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn write_auth_file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens");
    httpkit::secret::write_private(&path, text).unwrap();
    (dir, path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_and_plaintext_share_the_port() {
    let cert = self_signed();
    let settings = TlsSettings::new(&cert.cert, &cert.key);
    let t = common::start_with(move |c| c.tls = Some(settings)).await;
    let capture = capture_with("");
    let tls = send_tls(t.addr, &cert.der, &capture);
    let plain = send_plain(t.addr, text_client("plain", "", 100));
    tokio::join!(tls, plain);
    t.server.shutdown().await;
    assert_capture_stored(t.dir.path());
    assert_eq!(xs(t.dir.path(), "plain"), (0..100).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_required_refuses_plaintext() {
    let cert = self_signed();
    let mut settings = TlsSettings::new(&cert.cert, &cert.key);
    settings.required = true;
    let t = common::start_with(move |c| c.tls = Some(settings)).await;
    send_plain(t.addr, text_client("plain", "", 100)).await;
    send_tls(t.addr, &cert.der, &capture_with("")).await;
    t.server.shutdown().await;
    assert!(!t.dir.path().join("plain.sq3").exists());
    assert_capture_stored(t.dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_setup_errors_stop_the_start() {
    let cert = self_signed();
    let other = self_signed();
    let cases = [
        (
            TlsSettings::new("/nonexistent/cert.pem", &cert.key),
            "/nonexistent/cert.pem",
        ),
        (TlsSettings::new(&cert.key, &cert.key), "no CERTIFICATE"),
        (TlsSettings::new(&cert.cert, &cert.cert), "no PRIVATE KEY"),
        (TlsSettings::new(&cert.cert, &other.key), "TLS certificate"),
    ];
    for (settings, want) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut config = server::ServerConfig::new(dir.path());
        config.listen = vec!["127.0.0.1:0".parse().unwrap()];
        config.tls = Some(settings);
        let err = server::Server::start(config).await.unwrap_err();
        assert!(matches!(err, ServerError::Tls(_)), "{err:?}");
        assert!(err.to_string().contains(want), "{err} lacks {want:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_guard_listed_domains_only() {
    let (_keep, file) = write_auth_file("# lab tokens\nsecure tok-1\nsecure tok-2\n");
    let settings = AuthSettings {
        file,
        required: false,
    };
    let t = common::start_with(move |c| c.auth = Some(settings)).await;
    let key = |tok: &str| format!("x-streamgauge-auth: {tok}\n");
    send_plain(t.addr, text_client("secure", &key("tok-3"), 10)).await;
    send_plain(t.addr, text_client("secure", "", 10)).await;
    // Nothing of a refused session is stored, not even its database.
    assert!(!t.dir.path().join("secure.sq3").exists());
    send_plain(t.addr, text_client("secure", &key("tok-2"), 10)).await;
    // A stock client (no key) into a domain the file does not list.
    send_plain(t.addr, text_client("open", "", 20)).await;
    t.server.shutdown().await;
    assert_eq!(xs(t.dir.path(), "secure"), (0..10).collect::<Vec<_>>());
    assert_eq!(xs(t.dir.path(), "open"), (0..20).collect::<Vec<_>>());
    let senders: i64 = common::open_db(t.dir.path(), "secure")
        .query_row("SELECT count(*) FROM _senders", [], |r| r.get(0))
        .unwrap();
    assert_eq!(senders, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_required_closes_unlisted_domains_and_tokens_work_over_tls() {
    let (_keep, file) = write_auth_file("vecdomain s3cret\n");
    let auth = AuthSettings {
        file,
        required: true,
    };
    let cert = self_signed();
    let tls = TlsSettings::new(&cert.cert, &cert.key);
    let t = common::start_with(move |c| {
        c.auth = Some(auth);
        c.tls = Some(tls);
    })
    .await;
    send_plain(t.addr, text_client("open", "", 20)).await;
    send_tls(
        t.addr,
        &cert.der,
        &capture_with("x-streamgauge-auth: wrong\n"),
    )
    .await;
    assert!(!t.dir.path().join("vecdomain.sq3").exists());
    send_tls(
        t.addr,
        &cert.der,
        &capture_with("x-streamgauge-auth: s3cret\n"),
    )
    .await;
    t.server.shutdown().await;
    assert!(!t.dir.path().join("open.sq3").exists());
    assert_capture_stored(t.dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_file_is_validated_at_start_and_reloadable() {
    let (_keep, file) = write_auth_file("lab one\nlab\n");
    let settings = AuthSettings {
        file: file.clone(),
        required: false,
    };
    let dir = tempfile::tempdir().unwrap();
    let mut config = server::ServerConfig::new(dir.path());
    config.listen = vec!["127.0.0.1:0".parse().unwrap()];
    config.auth = Some(settings);
    let err = server::Server::start(config.clone()).await.unwrap_err();
    assert!(matches!(err, ServerError::Auth(_)), "{err:?}");
    assert!(err.to_string().contains(":2: "), "{err}");

    std::fs::write(&file, "lab one\n").unwrap();
    let server = server::Server::start(config).await.unwrap();
    let addr = server.local_addrs()[0];
    std::fs::write(&file, "lab two\n").unwrap();
    assert_eq!(server.reload_auth().unwrap(), Some(1));
    let key = |tok: &str| format!("x-streamgauge-auth: {tok}\n");
    send_plain(addr, text_client("lab", &key("one"), 5)).await;
    assert!(!dir.path().join("lab.sq3").exists());
    send_plain(addr, text_client("lab", &key("two"), 5)).await;
    server.shutdown().await;
    assert_eq!(xs(dir.path(), "lab"), (0..5).collect::<Vec<_>>());
}

/// Secret files that others may read are refused with the fix, as ssh
/// does: the token file and the TLS private key.
#[test]
fn secret_files_others_can_read_are_refused() {
    use std::os::unix::fs::PermissionsExt;
    let open_up = |p: &std::path::Path| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644)).unwrap()
    };
    let (_keep, tokens) = write_auth_file("lab one\n");
    open_up(&tokens);
    let err = server::auth::Auth::load(AuthSettings {
        file: tokens.clone(),
        required: false,
    })
    .err()
    .unwrap()
    .to_string();
    assert!(
        err.contains(&format!("chmod 600 {}", tokens.display())),
        "{err}"
    );

    let cert = self_signed();
    open_up(&cert.key);
    let err = server::tls::Tls::load(&TlsSettings::new(&cert.cert, &cert.key))
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains(&format!("chmod 600 {}", cert.key.display())),
        "{err}"
    );
}
