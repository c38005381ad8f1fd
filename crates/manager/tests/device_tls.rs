//! The manager talks to capture daemons over TLS: real daemons (the
//! certificate each makes on its first start, or one issued by a CA the
//! test creates), a real manager on both database backends.
//!
//! - first contact: `POST /api/v1/devices/certificate` reports the
//!   fingerprint the daemon printed; pinned, the device answers;
//! - another certificate at the pinned device's address is refused with
//!   both fingerprints named, and nothing is sent;
//! - a CA file verifies a daemon's CA-issued certificate and refuses one
//!   from another issuer;
//! - plain HTTP beyond loopback is refused unless the device is flagged
//!   `insecure`. The "beyond loopback" address is `0.0.0.0`: not a
//!   loopback address by the manager's rule, yet Linux delivers a
//!   connection to it on this host, so no packet leaves the machine.

mod common;

use std::path::Path;

use capture::daemon::{Daemon, DaemonConfig};
use common::{code, start_on, Api, Backend, ADMIN_PW};
use serde_json::json;

crate::on_both_backends!(devices_over_tls);

/// A daemon on loopback (never asked to capture: no privileges needed),
/// its token file shared by the test.
fn daemon(
    rt: &tokio::runtime::Runtime,
    data: &Path,
    tokens: &Path,
    tune: impl FnOnce(&mut DaemonConfig),
) -> Daemon {
    let mut c = DaemonConfig::new(&["lo"], data);
    c.listen = "127.0.0.1:0".parse().unwrap();
    c.token_file = Some(tokens.to_owned());
    tune(&mut c);
    rt.block_on(Daemon::start(c)).unwrap()
}

/// A CA certificate (PEM) and a certificate it issued for 127.0.0.1
/// with its key, written to `dir` as `ca.pem`, `cert.pem`, `key.pem`.
fn ca_issued(
    dir: &Path,
    name: &str,
) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    let (ca_pem, cert, key_pem) = (
        dir.join(format!("{name}-ca.pem")),
        dir.join(format!("{name}-cert.pem")),
        dir.join(format!("{name}-key.pem")),
    );
    std::fs::write(&ca_pem, ca.pem()).unwrap();
    std::fs::write(&cert, leaf.pem()).unwrap();
    httpkit::secret::write_private(&key_pem, key.serialize_pem()).unwrap();
    (ca_pem, cert, key_pem)
}

fn devices_over_tls(b: Backend) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("daemon.tokens");
    httpkit::secret::write_private(&tokens, "* daemon-op read,control\n").unwrap();
    let creds = dir.path().join("credentials");
    httpkit::secret::write_private(&creds, "op daemon-op\n").unwrap();

    // Two daemons with their own self-signed certificates.
    let a = daemon(&rt, &dir.path().join("a"), &tokens, |_| {});
    let other = daemon(&rt, &dir.path().join("b"), &tokens, |_| {});
    let (pin_a, pin_other) = (a.fingerprint().unwrap(), other.fingerprint().unwrap());
    assert_ne!(pin_a, pin_other);
    assert!(
        std::fs::read_to_string(dir.path().join("a/.control/tls/cert.pem"))
            .unwrap()
            .contains("BEGIN CERTIFICATE"),
        "the certificate is kept in the data directory"
    );

    let t = start_on(b, |c| c.credentials = Some(creds.clone()));
    let admin = Api::login(&t.base, "admin", ADMIN_PW);
    let add = |body: serde_json::Value| admin.post("/api/v1/devices", body);

    // First contact: the manager reports what the daemon presents.
    let seen = admin.ok(
        "/api/v1/devices/certificate",
        json!({"hostname": "127.0.0.1", "port": a.local_addr().port()}),
    );
    assert_eq!(seen["tls_fingerprint"], pin_a.to_string(), "{seen}");
    assert_eq!(seen["pinned_by"], json!([]), "{seen}");
    // The admin confirms it (any usual spelling; stored as AB:CD:…).
    let typed = pin_a.to_string().replace(':', "").to_lowercase();
    let (s, v) = add(
        json!({"name": "tap-a", "kind": "capture", "hostname": "127.0.0.1",
        "port": a.local_addr().port(), "credential_ref": "op", "tls_fingerprint": typed}),
    );
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["tls_fingerprint"], pin_a.to_string());
    assert_eq!(v["insecure"], false);
    let id_a = v["id"].as_i64().unwrap();
    let d = admin.ok(&format!("/api/v1/devices/{id_a}/refresh"), json!({}));
    assert_eq!(d["status"], "up", "{d}");
    assert_eq!(d["capabilities"]["interfaces"][0]["name"], "lo", "{d}");
    let seen = admin.ok(
        "/api/v1/devices/certificate",
        json!({"hostname": "127.0.0.1", "port": a.local_addr().port()}),
    );
    assert_eq!(seen["pinned_by"], json!(["tap-a"]), "{seen}");

    // Another certificate where a pinned one is expected: refused, and
    // the message names both fingerprints and what to do.
    let (s, v) = add(
        json!({"name": "tap-swapped", "kind": "capture", "hostname": "127.0.0.1",
        "port": other.local_addr().port(), "credential_ref": "op",
        "tls_fingerprint": pin_a.to_string()}),
    );
    assert_eq!(s, 201, "{v}");
    let (s, v) = admin.post(&format!("/api/v1/devices/{}/refresh", v["id"]), json!({}));
    assert_eq!((s, code(&v)), (502, "device_certificate"), "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains(&pin_other.to_string())
            && msg.contains(&pin_a.to_string())
            && msg.contains("pinned"),
        "{msg}"
    );
    let (s, v) = add(
        json!({"name": "bad-pin", "kind": "capture", "hostname": "127.0.0.1",
        "port": 1, "tls_fingerprint": "12:34"}),
    );
    assert_eq!((s, code(&v)), (400, "invalid_request"), "{v}");

    // Streamed answers (file downloads, the live-data relay) are verified
    // the same way, by the same client.
    let record = |fp: String| manager::db::devices::Device {
        id: 0,
        name: "direct".into(),
        kind: manager::db::devices::Kind::Capture,
        site: None,
        hostname: "127.0.0.1".into(),
        port: a.local_addr().port(),
        description: String::new(),
        credential_ref: None,
        tls_fingerprint: Some(fp),
        ca_file: None,
        insecure: false,
        capabilities: json!(null),
        status: "unknown".into(),
        last_seen_unix_s: None,
        version: 1,
    };
    let fetch = |d: manager::db::devices::Device| {
        let tls = manager::devices::transport::client_tls(&d).unwrap();
        let client = httpkit::client::Client::new(&d.base_url(), "direct", "")
            .with_tls(tls)
            .with_token(Some("daemon-op".into()));
        rt.block_on(manager::devices::streamed::get(
            client,
            "/api/v1/capabilities".into(),
            Vec::new(),
        ))
    };
    assert_eq!(fetch(record(pin_a.to_string())).unwrap().status(), 200);
    let e = fetch(record(pin_other.to_string())).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e, manager::devices::DeviceError::Certificate(_))
            && msg.contains(&pin_a.to_string())
            && msg.contains(&pin_other.to_string()),
        "the refusal names both certificates: {msg}"
    );

    // CA-file mode: a daemon with a CA-issued certificate.
    let (ca, cert, key) = ca_issued(dir.path(), "lab");
    let (foreign_ca, _, _) = ca_issued(dir.path(), "foreign");
    let c = daemon(&rt, &dir.path().join("c"), &tokens, |c| {
        c.tls_cert = Some(cert.clone());
        c.tls_key = Some(key.clone());
    });
    let (s, v) = add(
        json!({"name": "tap-ca", "kind": "capture", "hostname": "127.0.0.1",
        "port": c.local_addr().port(), "credential_ref": "op",
        "ca_file": ca.display().to_string()}),
    );
    assert_eq!(s, 201, "{v}");
    let d = admin.ok(&format!("/api/v1/devices/{}/refresh", v["id"]), json!({}));
    assert_eq!(d["status"], "up", "{d}");
    let (s, v) = add(
        json!({"name": "tap-foreign-ca", "kind": "capture", "hostname": "127.0.0.1",
        "port": c.local_addr().port(), "credential_ref": "op",
        "ca_file": foreign_ca.display().to_string()}),
    );
    assert_eq!(s, 201, "{v}");
    let (s, v) = admin.post(&format!("/api/v1/devices/{}/refresh", v["id"]), json!({}));
    assert_eq!((s, code(&v)), (502, "device_certificate"), "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("certificate"),
        "{v}"
    );
    let (s, v) = add(
        json!({"name": "two-ways", "kind": "capture", "hostname": "127.0.0.1",
        "port": 1, "ca_file": ca.display().to_string(), "tls_fingerprint": pin_a.to_string()}),
    );
    assert_eq!((s, code(&v)), (400, "invalid_request"), "{v}");

    // Plain HTTP: fine on loopback, refused beyond it unless flagged.
    let plain = daemon(&rt, &dir.path().join("p"), &tokens, |c| c.plain_http = true);
    assert_eq!(plain.fingerprint(), None);
    let port = plain.local_addr().port();
    let (s, v) = add(
        json!({"name": "tap-local", "kind": "capture", "hostname": "127.0.0.1",
        "port": port, "credential_ref": "op"}),
    );
    assert_eq!(s, 201, "{v}");
    let d = admin.ok(&format!("/api/v1/devices/{}/refresh", v["id"]), json!({}));
    assert_eq!(d["status"], "up", "{d}");
    let far = json!({"name": "tap-far", "kind": "capture", "hostname": "0.0.0.0",
        "port": port, "credential_ref": "op"});
    let (s, v) = add(far.clone());
    assert_eq!((s, code(&v)), (400, "insecure_transport"), "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("insecure=true"),
        "the message says what to do: {v}"
    );
    let mut flagged = far.clone();
    flagged["insecure"] = json!(true);
    let (s, v) = add(flagged.clone());
    assert_eq!((s, v["insecure"].as_bool()), (201, Some(true)), "{v}");
    let id_far = v["id"].as_i64().unwrap();
    let d = admin.ok(&format!("/api/v1/devices/{id_far}/refresh"), json!({}));
    assert_eq!(d["status"], "up", "{d}");
    flagged["insecure"] = json!(false);
    flagged["version"] = json!(1);
    let (s, v) = admin.put(&format!("/api/v1/devices/{id_far}"), flagged);
    assert_eq!((s, code(&v)), (400, "insecure_transport"), "{v}");

    // The audit log says how each device is reached.
    let (_, audit) = admin.get("/api/v1/audit");
    let text = audit.to_string();
    assert!(
        text.contains("https pinned") && text.contains("plain http, insecure"),
        "{text}"
    );

    drop(t);
    for d in [a, other, c, plain] {
        rt.block_on(d.shutdown());
    }
}
