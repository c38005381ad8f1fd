//! Settings changes as JSON objects (`PATCH`/`PUT /api/v1/settings`):
//! every key goes through [`Settings::set`], the same parser as `--set`,
//! the configuration file and `inline ctl set`. A change is all or
//! nothing: one bad key and nothing applies, and every bad key is named.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::error::SettingsError;
use crate::program::Role;
use crate::settings::Settings;

/// Keys the sink reads (it ignores the five-tuple filter and sampling).
const SINK_KEYS: [&str; 4] = ["mode", "delay_type", "loss_type", "enabled"];

/// Whether `role`'s program reads setting `key`.
pub fn used_by(role: Role, key: &str) -> bool {
    role == Role::Source || SINK_KEYS.contains(&key)
}

/// Field name → what is wrong with it.
pub type Fields = BTreeMap<String, String>;

/// The text form of a JSON value (`10`, `"udp"`, `true`), as `--set` takes it.
fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Applies `changes` to `base`; on any error returns every bad field and
/// leaves nothing applied.
pub fn apply(base: &Settings, changes: &Map<String, Value>) -> Result<Settings, Fields> {
    let mut next = base.clone();
    let mut bad = Fields::new();
    for (key, value) in changes {
        let Some(v) = text(value) else {
            bad.insert(key.clone(), "give a string, number or boolean".into());
            continue;
        };
        if let Err(e) = next.set(key, &v) {
            let field = match &e {
                SettingsError::InvalidValue { key, .. } => (*key).to_owned(),
                _ => key.clone(),
            };
            bad.entry(field).or_insert_with(|| e.to_string());
        }
    }
    if bad.is_empty() {
        Ok(next)
    } else {
        Err(bad)
    }
}

/// The settings as a JSON object of their text forms, in `KEYS` order
/// (valid input to [`apply`]).
pub fn to_json(s: &Settings) -> Map<String, Value> {
    s.to_pairs()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), Value::String(v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn all_or_nothing_and_every_bad_field_named() {
        let base = Settings::default();
        let s = apply(
            &base,
            &obj(json!({"sample": 10, "proto": "udp", "enabled": false})),
        )
        .unwrap();
        assert_eq!((s.sample, s.proto, s.enabled), (10, Some(17), false));
        let bad = apply(
            &base,
            &obj(json!({"sample": 0, "bogus": 1, "mode": ["x"], "proto": "udp"})),
        )
        .unwrap_err();
        assert_eq!(
            bad.keys().collect::<Vec<_>>(),
            ["bogus", "mode", "sample"],
            "{bad:?}"
        );
        assert!(bad["sample"].contains(">= 1"), "{bad:?}");
        let round = apply(&base, &to_json(&s)).unwrap();
        assert_eq!(round, s);
        assert!(used_by(Role::Sink, "mode") && !used_by(Role::Sink, "sample"));
    }
}
