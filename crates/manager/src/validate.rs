//! Validation of a configuration before it is saved: for a capture
//! daemon, the session is parsed and checked by the capture crate's own
//! `SessionConfig` validator (the daemon runs the same code), then against
//! the chosen device's capabilities and policy as it last answered them;
//! for an in-line agent, its settings are checked against its
//! capabilities ([`inline`]). Every problem is reported by the dotted path
//! of its field.

mod inline;

use std::collections::BTreeMap;

use capture::config::{ConfigError, SessionConfig};
use capture::policy::{NodePolicy, PolicyRefusal};
use serde_json::Value;

use crate::db::configs::ConfigInput;
use crate::db::devices::{Device, Kind};

/// Field path → message.
pub type Fields = BTreeMap<String, String>;

/// The session JSON the manager sends for `session` under `name`.
pub fn named_session(session: &Value, name: &str) -> Value {
    let mut s = session.clone();
    if let Some(o) = s.as_object_mut() {
        o.insert("name".into(), Value::String(name.into()));
    }
    s
}

/// Checks a configuration for `device` (`None`: no such device).
pub fn config(input: &ConfigInput, device: Option<&Device>) -> Fields {
    let mut bad = Fields::new();
    if let Err(e) = crate::names::name(&input.name) {
        bad.insert("name".into(), e.to_string());
    }
    match device {
        None => {
            bad.insert("device".into(), format!("no device {}", input.device));
        }
        Some(d) if d.kind == Kind::Inline => {
            if !input.metadata.is_null() && !input.metadata.is_object() {
                bad.insert("metadata".into(), "must be a JSON object".into());
            }
            inline::settings(input, &d.capabilities, &mut bad);
            return bad;
        }
        Some(d) if d.kind != Kind::Capture => {
            bad.insert(
                "device".into(),
                format!(
                    "device {} is a {} device, not a capture daemon or an in-line agent",
                    d.name,
                    d.kind.as_str()
                ),
            );
        }
        _ => {}
    }
    match input.storage.kind.as_str() {
        "local" => {}
        "sftp" | "s3" => {
            if input.storage.target.as_deref().is_none_or(str::is_empty) {
                bad.insert(
                    "storage.target".into(),
                    "name the device's archive target (its [archive.targets] entry)".into(),
                );
            }
        }
        other => {
            bad.insert(
                "storage.type".into(),
                format!("{other:?} is not one of local, sftp, s3"),
            );
        }
    }
    if !input.metadata.is_null() && !input.metadata.is_object() {
        bad.insert("metadata".into(), "must be a JSON object".into());
    }
    let Some(obj) = input.session.as_object() else {
        bad.insert("session".into(), "must be a JSON object".into());
        return bad;
    };
    if obj.contains_key("name") {
        bad.insert(
            "session.name".into(),
            "leave it out: the manager names sessions after the experiment, configuration and run"
                .into(),
        );
        return bad;
    }
    let parsed = match SessionConfig::from_json(&named_session(&input.session, "check").to_string())
    {
        Ok(s) => s,
        Err(e) => {
            let (field, msg) = session_error(&e);
            bad.insert(field, msg);
            return bad;
        }
    };
    if let Some(d) = device {
        against_capabilities(&parsed, &d.capabilities, &mut bad);
    }
    bad
}

/// The field and message of a session configuration error.
fn session_error(e: &ConfigError) -> (String, String) {
    match e {
        ConfigError::Invalid { field, reason } => (format!("session.{field}"), reason.clone()),
        ConfigError::Filter(f) => ("session.filter".into(), f.to_string()),
        ConfigError::Parse(msg) => {
            // serde names the offending key as `name` in backquotes.
            let key = msg.split('`').nth(1).filter(|k| {
                !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            });
            let field = match key {
                Some(k) if msg.starts_with("unknown field") => format!("session.{k}"),
                Some(k) if msg.starts_with("missing field") => format!("session.{k}"),
                _ => "session".into(),
            };
            (field, msg.clone())
        }
    }
}

/// Interface tapped, key known, node policy.
fn against_capabilities(s: &SessionConfig, caps: &Value, bad: &mut Fields) {
    if caps.is_null() {
        return; // never polled: the daemon checks again at start
    }
    let interfaces: Vec<&str> = caps["interfaces"]
        .as_array()
        .map(|a| a.iter().filter_map(|i| i["name"].as_str()).collect())
        .unwrap_or_default();
    let mut s = s.clone();
    if s.interface.is_none() && interfaces.len() == 1 {
        s.interface = Some(interfaces[0].to_owned());
    }
    match &s.interface {
        Some(i) if !interfaces.contains(&i.as_str()) => {
            bad.insert(
                "session.interface".into(),
                format!("{i:?} is not tapped by this device (it taps {interfaces:?})"),
            );
        }
        None if interfaces.len() > 1 => {
            bad.insert(
                "session.interface".into(),
                format!("choose one of {interfaces:?}"),
            );
        }
        _ => {}
    }
    if let Some(a) = &s.anonymization {
        let keys: Vec<&str> = caps["keys"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !keys.contains(&a.key.as_str()) {
            bad.insert(
                "session.anonymization.key".into(),
                format!("the device knows no key {:?} (it has {keys:?})", a.key),
            );
        }
    }
    let Ok(policy) = serde_json::from_value::<NodePolicy>(caps["policy"].clone()) else {
        return;
    };
    if let Err(refusal) = policy.check(&s) {
        let field = match &refusal {
            PolicyRefusal::HeaderOnlyRequired { .. } => "session.header_only",
            PolicyRefusal::AnonymizationRequired { .. } => "session.anonymization",
            PolicyRefusal::SnaplenTooLarge { .. } => "session.snaplen",
            PolicyRefusal::InterfaceNotAllowed { .. } => "session.interface",
        };
        // The check ran under a placeholder session name; say only what is wrong.
        let msg = refusal.to_string();
        let msg = msg
            .strip_prefix("session check: ")
            .unwrap_or(&msg)
            .to_owned();
        bad.entry(field.into()).or_insert(msg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::configs::Storage;

    fn device(caps: Value) -> Device {
        Device {
            id: 1,
            name: "tap".into(),
            kind: Kind::Capture,
            site: None,
            hostname: "127.0.0.1".into(),
            port: 1,
            description: String::new(),
            credential_ref: None,
            tls_fingerprint: None,
            ca_file: None,
            insecure: false,
            capabilities: caps,
            status: "up".into(),
            last_seen_unix_s: None,
            version: 1,
        }
    }

    /// A configuration for device 1 with `session` (also used by [`super::inline`]'s tests).
    pub(super) fn input(session: Value) -> ConfigInput {
        ConfigInput {
            name: "c".into(),
            device: 1,
            storage: Storage::default(),
            session,
            metadata: Value::Null,
            version: None,
            experiment: None,
            id: None,
        }
    }

    #[test]
    fn fields_are_named() {
        let caps = serde_json::json!({
            "interfaces": [{"name": "eth1"}], "keys": ["k1"],
            "policy": {"max_snaplen": 128, "header_only_forced": false,
                       "anonymization_mandatory": false, "allowed_interfaces": ["eth1"]}});
        let d = device(caps);
        assert!(config(&input(serde_json::json!({"snaplen": 96})), Some(&d)).is_empty());
        let f = config(&input(serde_json::json!({"snaplen": 1500})), Some(&d));
        assert!(f["session.snaplen"].contains("128"), "{f:?}");
        assert!(f["session.snaplen"].starts_with("snaplen"), "{f:?}");
        let f = config(&input(serde_json::json!({"snaplen": 5})), Some(&d));
        assert!(f.contains_key("session.snaplen"), "{f:?}");
        let f = config(&input(serde_json::json!({"bogus": 1})), Some(&d));
        assert!(f.contains_key("session.bogus"), "{f:?}");
        let f = config(
            &input(serde_json::json!({"filter": "tcp portx 80"})),
            Some(&d),
        );
        assert!(f.contains_key("session.filter"), "{f:?}");
        let f = config(
            &input(serde_json::json!({"interface": "eth9", "anonymization": {"key": "nope"}})),
            Some(&d),
        );
        assert!(
            f.contains_key("session.interface") && f.contains_key("session.anonymization.key"),
            "{f:?}"
        );
        let f = config(&input(serde_json::json!({})), None);
        assert!(f.contains_key("device"), "{f:?}");
    }
}
