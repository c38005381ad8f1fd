//! Validation of a configuration for an in-line agent: `session` holds the
//! agent's settings (`{"sample": 10, "proto": "udp"}`, the keys of
//! `streamgauge inline --set`), checked against what the agent last said
//! it takes (`keys` of its capabilities, with whether its role reads
//! them). The agent parses the values again when a run applies them and
//! refuses bad ones field by field; here the manager catches what it can
//! know without the device: unknown keys, keys the role ignores, value
//! types, `mode` and `sample`.

use serde_json::Value;

use super::Fields;
use crate::db::configs::ConfigInput;

/// Checks `input` (its `session` object) for an agent with capabilities `caps`.
pub fn settings(input: &ConfigInput, caps: &Value, bad: &mut Fields) {
    if input.storage.kind != "local" || input.storage.target.is_some() {
        bad.insert(
            "storage.type".into(),
            "an in-line agent keeps no files: its records go to the experiment's collector; use local"
                .into(),
        );
    }
    let Some(obj) = input.session.as_object() else {
        bad.insert(
            "session".into(),
            "must be a JSON object of the agent's settings, e.g. {\"sample\": 10}".into(),
        );
        return;
    };
    let keys = caps["keys"].as_array();
    let role = caps["roles"][0].as_str().unwrap_or("agent");
    for (key, value) in obj {
        let field = format!("session.{key}");
        if key == "enabled" {
            bad.insert(
                field,
                "leave it out: runs switch instrumentation on (start, resume) and off (pause, stop)"
                    .into(),
            );
            continue;
        }
        if !(value.is_string() || value.is_number() || value.is_boolean()) {
            bad.insert(field, "give a string, number or boolean".into());
            continue;
        }
        if let Some(keys) = keys {
            match keys.iter().find(|k| k["key"] == key.as_str()) {
                None => {
                    let known: Vec<&str> = keys.iter().filter_map(|k| k["key"].as_str()).collect();
                    bad.insert(
                        field,
                        format!("the agent has no setting {key:?} (it has {known:?})"),
                    );
                    continue;
                }
                Some(k) if k["used"] == false => {
                    bad.insert(field, format!("the {role} ignores {key:?}"));
                    continue;
                }
                Some(_) => {}
            }
        }
        let text = match value {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        match key.as_str() {
            "mode" => {
                let modes: Vec<&str> = caps["modes"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_else(|| vec!["delay", "loss", "both", "pdm"]);
                if !modes.contains(&text.as_str()) {
                    bad.insert(field, format!("{text:?} is not one of {modes:?}"));
                }
            }
            "sample" if text.parse::<u32>().map_or(true, |n| n == 0) => {
                bad.insert(
                    field,
                    format!("{text:?}: give an integer >= 1 (one packet in N)"),
                );
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::tests::input;
    use serde_json::json;

    #[test]
    fn keys_roles_and_values() {
        let caps = json!({"roles": ["sink"], "modes": ["delay", "loss", "both", "pdm"],
            "keys": [{"key": "mode", "used": true}, {"key": "sample", "used": false}]});
        let mut bad = Fields::new();
        settings(&input(json!({"mode": "loss"})), &caps, &mut bad);
        assert!(bad.is_empty(), "{bad:?}");
        settings(
            &input(json!({"mode": "x", "sample": 2, "bogus": 1, "enabled": true})),
            &caps,
            &mut bad,
        );
        assert!(bad["session.mode"].contains("not one of"), "{bad:?}");
        assert!(bad["session.sample"].contains("sink ignores"), "{bad:?}");
        assert!(bad["session.bogus"].contains("no setting"), "{bad:?}");
        assert!(bad.contains_key("session.enabled"), "{bad:?}");
        let mut bad = Fields::new();
        let source = json!({"roles": ["source"], "keys": [{"key": "sample", "used": true}]});
        settings(&input(json!({"sample": 0})), &source, &mut bad);
        assert!(bad["session.sample"].contains(">= 1"), "{bad:?}");
    }
}
