//! The server's configuration file (`streamgauge server --config`):
//! `key = value` lines.
//!
//! Keys are the long option names (`listen`, `bind`, `data-dir`, `backend`,
//! `event-hook`, `timeout`, `logfile`, `debug-level`, `pg-host`, `pg-port`,
//! `pg-user`, `pg-pass`, `pg-connect`, `pg-uint64`, `pg-partition`,
//! `pg-retention`, `auth-file`, `auth-required`,
//! `tls-cert`, `tls-key`, `tls-required`, `user`, `group`, `feedback-rules`,
//! `max-connections`, `max-connections-per-source`, `max-domains`,
//! `max-header-bytes`, `max-domain-queue-bytes`; `auth-required` and `tls-required`
//! take `true` or `false`). `bind` may be given several times.
//! `#` starts a comment line; blank lines are ignored; unknown keys are
//! errors. Precedence: command line > environment > file > default.

use std::collections::BTreeMap;

use super::RunError;

/// Keys a file may set.
pub const KEYS: [&str; 41] = [
    "listen",
    "bind",
    "data-dir",
    "backend",
    "event-hook",
    "metrics",
    "self-domain",
    "auth-file",
    "auth-required",
    "tls-cert",
    "tls-key",
    "tls-required",
    "timeout",
    "logfile",
    "debug-level",
    "pg-host",
    "pg-port",
    "pg-user",
    "pg-pass",
    "pg-connect",
    "pg-uint64",
    "pg-partition",
    "pg-retention",
    "user",
    "group",
    "feedback-rules",
    "http",
    "http-public",
    "http-cors-origin",
    "allow-host",
    "http-header-timeout",
    "http-max-connections",
    "query-budget",
    "query-max-tails",
    "http-nice",
    "header-nice",
    "max-connections",
    "max-connections-per-source",
    "max-domains",
    "max-header-bytes",
    "max-domain-queue-bytes",
];

/// Parsed file: key → values in file order.
#[derive(Debug, Default)]
pub struct FileConfig {
    /// Values per key.
    values: BTreeMap<String, Vec<String>>,
}

impl FileConfig {
    /// Parses the file's text (no I/O); `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<FileConfig, RunError> {
        let mut cfg = FileConfig::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                bail!("{origin}:{}: expected 'key = value', got {line:?}", n + 1);
            };
            let key = key.trim();
            if !KEYS.contains(&key) {
                bail!(
                    "{origin}:{}: unknown key {key:?} (known: {})",
                    n + 1,
                    KEYS.join(", ")
                );
            }
            let value = value.trim().trim_matches('"').to_owned();
            let slot = cfg.values.entry(key.to_owned()).or_default();
            if key != "bind" && !slot.is_empty() {
                bail!("{origin}:{}: {key} is set twice", n + 1);
            }
            slot.push(value);
        }
        Ok(cfg)
    }

    /// The value of a single-valued key.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values
            .get(key)
            .and_then(|v| v.first())
            .map(String::as_str)
    }

    /// Every value of a key.
    pub fn all(&self, key: &str) -> &[String] {
        self.values.get(key).map(Vec::as_slice).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let c = FileConfig::parse(
            "# comment\nlisten = 4000\nbind = 127.0.0.1\nbind = ::1\ndata-dir = \"/tmp/x\"\n",
            "f",
        )
        .unwrap();
        assert_eq!(c.get("listen"), Some("4000"));
        assert_eq!(c.all("bind"), ["127.0.0.1", "::1"]);
        assert_eq!(c.get("data-dir"), Some("/tmp/x"));
        assert!(FileConfig::parse("colour = blue\n", "f").is_err());
        assert!(FileConfig::parse("listen 4000\n", "f").is_err());
        assert!(FileConfig::parse("listen = 1\nlisten = 2\n", "f").is_err());
    }
}
