//! Destination defaults and names (the syntaxes and defaults themselves are
//! defined once, in [`crate::config`]).

use std::time::SystemTime;

use crate::config::{default_file_uri, utc_timestamp, value, DEFAULT_BUFSIZE};
use crate::spec::{DestinationSpec, Uri};

/// How a destination is named in logs, errors and [`crate::Stats`]: its
/// canonical URI (`tcp://host:port`, `file:PATH`, `flushfile:PATH`, `file:-`).
pub fn label(uri: &Uri) -> String {
    crate::config::uri::to_string(uri)
}

/// The destination used when a spec lists none, as the reference: a file in
/// the working directory named `<app>[_<id>][_<domain>]_<timestamp>` (UTC),
/// with the file defaults (text, blocking, default budget) and
/// `_client_instrumentation`.
pub fn default_destination(app: &str, id: Option<&str>, domain: Option<&str>) -> DestinationSpec {
    let uri = default_file_uri(app, id, domain, &utc_timestamp(SystemTime::now()));
    DestinationSpec {
        encoding: value::default_encoding(&uri),
        policy: value::default_policy(&uri),
        uri,
        bufsize: DEFAULT_BUFSIZE,
        streams: None,
        instrumentation: true,
        backchannel: Default::default(),
    }
}

/// The sender id used when none is configured: `<hostname>-<pid>`. (The
/// reference writes the literal `(null)`, a defect; a host name and process
/// id keep concurrent instances apart in the `_senders` table.)
pub fn default_sender_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("{host}-{}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_labels() {
        let v6 = Uri::Tcp {
            host: "::1".into(),
            port: 3003,
        };
        assert_eq!(label(&v6), "tcp://[::1]:3003");
        let d = default_destination("app", Some("n1"), None);
        let Uri::File(p) = d.uri else { panic!() };
        assert!(p.to_str().unwrap().starts_with("app_n1_20"));
        assert!(default_sender_id().ends_with(&format!("-{}", std::process::id())));
    }
}
