//! How the manager reaches a device's API: HTTPS verified against the
//! device's pinned certificate fingerprint or its CA file, or plain HTTP,
//! which is accepted only on loopback or for a device flagged `insecure`
//! (docs/manager.md, *Device transport*).

use httpkit::tls::{ClientTls, Fingerprint};

use super::DeviceError;
use crate::db::devices::Device;

/// Whether `host` names this machine without DNS: `localhost`,
/// `*.localhost` (RFC 6761) or a loopback address.
pub fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    let lower = h.to_ascii_lowercase();
    if lower == "localhost" || lower.ends_with(".localhost") {
        return true;
    }
    h.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback() || is_mapped_loopback(ip))
}

fn is_mapped_loopback(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
        std::net::IpAddr::V4(_) => false,
    }
}

/// Why plain HTTP to `hostname` is refused, or `None` when it is allowed
/// (loopback, or the admin flagged the device `insecure`).
pub fn plain_refusal(hostname: &str, insecure: bool) -> Option<String> {
    if insecure || is_loopback_host(hostname) {
        return None;
    }
    Some(format!(
        "plain HTTP to {hostname} would send the device's token and data in clear: pin its \
         certificate (tls_fingerprint, shown by POST /api/v1/devices/certificate), give a \
         ca_file, or set insecure=true to accept that"
    ))
}

/// The TLS verification for `d`, `None` for plain HTTP (when allowed).
pub fn client_tls(d: &Device) -> Result<Option<ClientTls>, DeviceError> {
    if let Some(fp) = &d.tls_fingerprint {
        let pin = Fingerprint::parse(fp).ok_or_else(|| {
            DeviceError::Transport(format!(
                "device {}: tls_fingerprint {fp:?} is not a SHA-256 fingerprint",
                d.name
            ))
        })?;
        return Ok(Some(ClientTls::pinned(pin)));
    }
    if let Some(ca) = &d.ca_file {
        return ClientTls::ca_file(std::path::Path::new(ca))
            .map(Some)
            .map_err(|e| DeviceError::Transport(format!("device {}: ca_file: {e}", d.name)));
    }
    match plain_refusal(&d.hostname, d.insecure) {
        None => Ok(None),
        Some(why) => Err(DeviceError::Transport(format!("device {}: {why}", d.name))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_only_on_loopback_or_when_flagged() {
        for h in [
            "127.0.0.1",
            "127.9.9.9",
            "::1",
            "[::1]",
            "localhost",
            "a.localhost",
            "::ffff:127.0.0.1",
        ] {
            assert!(plain_refusal(h, false).is_none(), "{h}");
        }
        for h in [
            "10.0.0.5",
            "192.0.2.1",
            "fd00::1",
            "tap1.example.org",
            "localhost.example",
            "0.0.0.0",
        ] {
            let why = plain_refusal(h, false).unwrap_or_else(|| panic!("{h} allowed"));
            assert!(why.contains("insecure=true") && why.contains(h), "{why}");
            assert!(plain_refusal(h, true).is_none(), "{h} flagged insecure");
        }
    }
}
