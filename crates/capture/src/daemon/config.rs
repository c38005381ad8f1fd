//! The daemon's configuration file (TOML), parsed and validated before
//! anything starts: unknown keys are errors, and every check that needs no
//! I/O runs in [`DaemonConfig::validate`].
//!
//! ```toml
//! interfaces = ["eth1"]                 # the only interfaces sessions may use ("any": all)
//! data_dir = "/var/lib/streamgauge/capture"
//! listen = "127.0.0.1:7300"             # control API (HTTPS)
//! token_file = "/etc/streamgauge/capture.tokens" # default: data_dir/.control/tokens, created on first start
//! tls_cert = "/etc/streamgauge/capture.crt"  # default: a self-signed one in data_dir/.control/tls/
//! tls_key = "/etc/streamgauge/capture.key"
//! # plain_http = true                  # loopback `listen` only: no TLS
//! collect = "collector.example.org:3003" # counters as measurement streams
//! # netns = "tap"                       # open packet sockets in this network namespace
//!
//! [keys]                                # anonymisation keys by name
//! site-2026 = "/etc/streamgauge/site-2026.key"
//!
//! [policy]
//! header_only_forced = true
//! max_snaplen = 256
//! ```

use crate::policy::NodePolicy;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 7300))
}

fn default_max_sessions() -> usize {
    1024
}

/// Everything the daemon needs, as written in its configuration file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonConfig {
    /// Interfaces sessions may capture on; each gets one packet socket,
    /// opened when its first session starts. `any` is every interface of
    /// the namespace through one socket, in Linux cooked v2 framing.
    pub interfaces: Vec<String>,
    /// Where sessions write their files (`data_dir/<session>/`).
    pub data_dir: PathBuf,
    /// Operator limits every session request is checked against. The
    /// allowed interfaces default to `interfaces`.
    #[serde(default)]
    pub policy: NodePolicy,
    /// Anonymisation keys by name (sessions name a key, never carry one).
    #[serde(default)]
    pub keys: BTreeMap<String, PathBuf>,
    /// Control API address.
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    /// Token file (`<experiment-or-glob> <token> [collect,read,control]`);
    /// without it the daemon uses `data_dir/.control/tokens`, created on
    /// first start with one `control` token: it runs as root and never
    /// serves its control API without tokens.
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// PEM certificate chain of the control API; without it (and without
    /// `plain_http`) a self-signed certificate is made on first start in
    /// `data_dir/.control/tls/` and its fingerprint logged, for pinning.
    #[serde(default)]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of `tls_cert` (owner-only).
    #[serde(default)]
    pub tls_key: Option<PathBuf>,
    /// Serve the control API without TLS; allowed only on a loopback
    /// `listen` address (tokens then cross no network).
    #[serde(default)]
    pub plain_http: bool,
    /// DNS names the control API answers to beyond loopback names and IP
    /// literals: any other `Host` gets 421, so a web page cannot drive the
    /// daemon (which runs as root) through DNS rebinding.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Collection server (`HOST:PORT`) receiving each session's counters as
    /// the stream `capture_counters` in the session's experiment domain.
    #[serde(default)]
    pub collect: Option<String>,
    /// Network namespace (a name under `/var/run/netns`) in which packet
    /// sockets are opened, for nodes whose tap interfaces live there.
    #[serde(default)]
    pub netns: Option<String>,
    /// Most sessions the node keeps at once.
    #[serde(default = "default_max_sessions")]
    pub max_sessions: usize,
    /// Archive uploader (state directory, SFTP/S3 targets; see
    /// docs/archive.md). Sessions created with `?archive=T1,T2` have their
    /// closed files uploaded to those targets.
    #[serde(default)]
    pub archive: Option<archive::ArchiverConfig>,
}

/// Why the configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DaemonConfigError {
    /// Not TOML, or not the expected keys.
    #[error("capture daemon configuration: {0}")]
    Parse(String),
    /// A value is unusable.
    #[error("capture daemon configuration: {key}: {reason}")]
    Invalid {
        /// The key.
        key: &'static str,
        /// What is wrong and what to do.
        reason: String,
    },
}

impl DaemonConfig {
    /// Parses and validates TOML text.
    pub fn from_toml(text: &str) -> Result<DaemonConfig, DaemonConfigError> {
        let c: DaemonConfig =
            toml::from_str(text).map_err(|e| DaemonConfigError::Parse(e.to_string()))?;
        c.validate()?;
        Ok(c)
    }

    /// A minimal configuration (tests, examples).
    pub fn new(interfaces: &[&str], data_dir: impl Into<PathBuf>) -> DaemonConfig {
        DaemonConfig {
            interfaces: interfaces.iter().map(|s| s.to_string()).collect(),
            data_dir: data_dir.into(),
            policy: NodePolicy::default(),
            keys: BTreeMap::new(),
            listen: default_listen(),
            token_file: None,
            tls_cert: None,
            tls_key: None,
            plain_http: false,
            allowed_hosts: Vec::new(),
            collect: None,
            netns: None,
            max_sessions: default_max_sessions(),
            archive: None,
        }
    }

    /// The token file in force: `token_file`, or the one the daemon
    /// creates in its data directory.
    pub fn effective_token_file(&self) -> PathBuf {
        self.token_file
            .clone()
            .unwrap_or_else(|| self.data_dir.join(".control").join("tokens"))
    }

    /// Checks values without I/O.
    pub fn validate(&self) -> Result<(), DaemonConfigError> {
        let bad = |key, reason: String| Err(DaemonConfigError::Invalid { key, reason });
        if self.interfaces.is_empty() {
            return bad("interfaces", "list at least one interface".into());
        }
        for i in &self.interfaces {
            if i.is_empty() || i.len() > 15 || i.contains(['/', ' ', '\0']) {
                return bad("interfaces", format!("{i:?} is not an interface name"));
            }
        }
        if self.data_dir.as_os_str().is_empty() {
            return bad("data_dir", "must not be empty".into());
        }
        if let Some(allowed) = &self.policy.allowed_interfaces {
            if let Some(i) = allowed.iter().find(|i| !self.interfaces.contains(i)) {
                return bad(
                    "policy.allowed_interfaces",
                    format!("{i:?} is not in interfaces"),
                );
            }
        }
        if let Some(c) = &self.collect {
            match c.rsplit_once(':') {
                Some((h, p)) if !h.is_empty() && p.parse::<u16>().is_ok() => {}
                _ => return bad("collect", format!("{c:?} is not HOST:PORT")),
            }
        }
        if let Some(n) = &self.netns {
            if n.is_empty() || n.contains('/') {
                return bad("netns", format!("{n:?} is not a namespace name"));
            }
            if !Path::new("/var/run/netns").join(n).exists() {
                return bad(
                    "netns",
                    format!("no network namespace /var/run/netns/{n} (create it with `ip netns add {n}`)"),
                );
            }
        }
        if let Some(a) = &self.archive {
            a.validate().map_err(|e| DaemonConfigError::Invalid {
                key: "archive",
                reason: e.to_string(),
            })?;
        }
        match (&self.tls_cert, &self.tls_key) {
            (Some(_), None) => return bad("tls_key", "tls_cert needs tls_key".into()),
            (None, Some(_)) => return bad("tls_cert", "tls_key needs tls_cert".into()),
            (Some(_), Some(_)) if self.plain_http => {
                return bad(
                    "plain_http",
                    "remove it to serve with tls_cert, or remove tls_cert and tls_key".into(),
                )
            }
            _ => {}
        }
        if self.plain_http && !self.listen.ip().is_loopback() {
            return bad(
                "plain_http",
                format!(
                    "{} is not a loopback address: tokens would cross the network in clear; \
                     drop plain_http (the daemon then serves HTTPS)",
                    self.listen
                ),
            );
        }
        if self.max_sessions == 0 {
            return bad("max_sessions", "must be >= 1".into());
        }
        Ok(())
    }

    /// The policy in force: the configured one, with the allowed interfaces
    /// defaulting to `interfaces`.
    pub fn effective_policy(&self) -> NodePolicy {
        let mut p = self.policy.clone();
        if p.allowed_interfaces.is_none() {
            p.allowed_interfaces = Some(self.interfaces.clone());
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_and_bad_values_are_refused() {
        let ok = "interfaces = [\"eth1\"]\ndata_dir = \"/tmp/x\"\n[policy]\nmax_snaplen = 128\n";
        let c = DaemonConfig::from_toml(ok).unwrap();
        assert_eq!(
            c.effective_policy().allowed_interfaces,
            Some(vec!["eth1".into()])
        );
        let e = DaemonConfig::from_toml(&format!("{ok}bogus = 1\n")).unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
        let e = DaemonConfig::from_toml("interfaces = []\ndata_dir = \"/x\"\n").unwrap_err();
        assert!(e.to_string().contains("interfaces"), "{e}");
        let e = DaemonConfig::from_toml(
            "interfaces = [\"a\"]\ndata_dir = \"/x\"\ncollect = \"nohost\"\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("HOST:PORT"), "{e}");
        let base = "interfaces = [\"eth1\"]\ndata_dir = \"/tmp/x\"\n";
        let e = DaemonConfig::from_toml(&format!(
            "{base}listen = \"0.0.0.0:7300\"\nplain_http = true\n"
        ))
        .unwrap_err();
        assert!(e.to_string().contains("not a loopback address"), "{e}");
        assert!(DaemonConfig::from_toml(&format!("{base}plain_http = true\n")).is_ok());
        let e = DaemonConfig::from_toml(&format!("{base}tls_cert = \"/c\"\n")).unwrap_err();
        assert!(e.to_string().contains("tls_key"), "{e}");
    }

    #[test]
    fn a_namespace_that_does_not_exist_is_refused() {
        let mut c = DaemonConfig::new(&["eth1"], "/tmp/x");
        c.netns = Some("sg-no-such-namespace".into());
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("ip netns add sg-no-such-namespace"), "{e}");
    }
}
