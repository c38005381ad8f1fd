//! Feedback rules (`--feedback-rules FILE`, TOML): conditions over incoming
//! streams or the server's own state, and the control message (spec §3.7)
//! sent to a sender when a condition starts or stops holding.
//!
//! ```toml
//! [[rule]]
//! name = "slow-down"          # for logs and GET /feedback
//! when = "sender-rate"        # sender-rate | backlog | field
//! above = 50000               # starts holding above this …
//! below = 10000               # … and stops below this (default: above)
//! for = 1.0                   # seconds it must hold first (default 0)
//! domain = "exp1"             # optional: only senders of this domain
//! sender = "node1"            # optional: only this sender
//! action = { action = "set-samples", stream = "app_mp", samples = 10 }
//! restore = { action = "set-samples", stream = "app_mp", samples = 1 }
//! ```
//!
//! `sender-rate` is the rows/s a sender's connection delivers; `backlog` the
//! writer queue of the sender's domain, in batches; `field` the last value
//! of `field` in stream `stream` (a table name) from that sender.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value as Json;

/// Actions of back-channel version 1 (spec §3.7).
pub const ACTIONS: [&str; 7] = [
    "set-samples",
    "set-interval",
    "enable",
    "disable",
    "set-filter",
    "pause",
    "resume",
];

/// What a rule watches.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// Rows per second delivered by the sender's connection.
    SenderRate,
    /// Batches waiting in the writer queue of the sender's domain.
    Backlog,
    /// The last value of a numeric field.
    Field {
        /// Stream (table) name.
        stream: String,
        /// Field name.
        field: String,
    },
}

/// One validated rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// Name, for logs and status.
    pub name: String,
    /// What is watched.
    pub when: Condition,
    /// Starts holding above this.
    pub above: f64,
    /// Stops holding below this (hysteresis).
    pub below: f64,
    /// Seconds the condition must hold before the action is sent.
    pub hold: f64,
    /// Only senders of this domain.
    pub domain: Option<String>,
    /// Only this sender.
    pub sender: Option<String>,
    /// Control message sent when the condition starts holding.
    pub action: Json,
    /// Control message sent when it stops holding.
    pub restore: Option<Json>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    rule: Vec<RawRule>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    name: String,
    when: String,
    above: f64,
    below: Option<f64>,
    #[serde(rename = "for")]
    hold: Option<f64>,
    domain: Option<String>,
    sender: Option<String>,
    stream: Option<String>,
    field: Option<String>,
    action: toml::Value,
    restore: Option<toml::Value>,
}

/// Parses and validates a rules file's text; `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<Vec<Rule>, String> {
    let file: File = toml::from_str(text).map_err(|e| format!("{origin}: {e}"))?;
    file.rule
        .into_iter()
        .map(|r| {
            let name = r.name.clone();
            validate(r).map_err(|e| format!("{origin}: rule {name:?}: {e}"))
        })
        .collect()
}

/// Reads and parses a rules file.
pub fn load(path: &Path) -> Result<Vec<Rule>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("reading feedback rules {}: {e}", path.display()))?;
    parse(&text, &path.display().to_string())
}

fn validate(r: RawRule) -> Result<Rule, String> {
    let when = match r.when.as_str() {
        "sender-rate" => Condition::SenderRate,
        "backlog" => Condition::Backlog,
        "field" => match (r.stream, r.field) {
            (Some(stream), Some(field)) => Condition::Field { stream, field },
            _ => return Err("when = \"field\" needs stream = and field =".into()),
        },
        other => {
            return Err(format!(
                "when = {other:?}: want sender-rate, backlog or field"
            ))
        }
    };
    let below = r.below.unwrap_or(r.above);
    if !r.above.is_finite() || !below.is_finite() || below > r.above {
        return Err(format!(
            "thresholds: want finite numbers with below ({below}) <= above ({})",
            r.above
        ));
    }
    let hold = r.hold.unwrap_or(0.0);
    if !(0.0..=86_400.0).contains(&hold) {
        return Err(format!("for = {hold}: want 0 to 86400 seconds"));
    }
    Ok(Rule {
        name: r.name,
        when,
        above: r.above,
        below,
        hold,
        domain: r.domain,
        sender: r.sender,
        action: message(r.action)?,
        restore: r.restore.map(message).transpose()?,
    })
}

/// Checks a control message (a table with a known `action`) and turns it
/// into the JSON sent on the wire.
pub fn message(v: toml::Value) -> Result<Json, String> {
    let json = serde_json::to_value(&v).map_err(|e| e.to_string())?;
    check_message(&json)?;
    Ok(json)
}

/// A control message must be an object whose `action` is known.
pub fn check_message(json: &Json) -> Result<(), String> {
    let action = json
        .get("action")
        .and_then(Json::as_str)
        .ok_or("a control message needs action = \"…\"")?;
    if !ACTIONS.contains(&action) {
        return Err(format!(
            "action {action:?}: want one of {}",
            ACTIONS.join(", ")
        ));
    }
    let needs_stream = !matches!(action, "pause" | "resume");
    if needs_stream && json.get("stream").and_then(Json::as_str).is_none() {
        return Err(format!("action {action:?} needs stream = \"<table name>\""));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_rule_parses() {
        let rules = parse(
            r#"
            [[rule]]
            name = "slow"
            when = "sender-rate"
            above = 100
            below = 10
            for = 0.5
            domain = "d"
            action = { action = "set-samples", stream = "a_m", samples = 10 }
            restore = { action = "set-samples", stream = "a_m", samples = 1 }

            [[rule]]
            name = "hot"
            when = "field"
            stream = "a_t"
            field = "celsius"
            above = 80
            action = { action = "pause" }
            "#,
            "t.toml",
        )
        .unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].action["samples"], 10);
        assert_eq!(rules[1].below, 80.0);
        assert_eq!(
            rules[1].when,
            Condition::Field {
                stream: "a_t".into(),
                field: "celsius".into()
            }
        );
    }

    #[test]
    fn mistakes_are_named() {
        let bad = [
            ("when = \"weather\"", "want sender-rate"),
            ("when = \"field\"", "needs stream"),
            ("when = \"backlog\"\nbelow = 500", "below (500) <= above"),
            ("when = \"backlog\"\ncolour = 1", "unknown field"),
        ];
        for (extra, want) in bad {
            let text = format!(
                "[[rule]]\nname = \"r\"\nabove = 100\n{extra}\naction = {{ action = \"pause\" }}\n"
            );
            let err = parse(&text, "t.toml").unwrap_err();
            assert!(err.contains(want), "{extra}: {err}");
        }
        let err = parse(
            "[[rule]]\nname = \"r\"\nwhen = \"backlog\"\nabove = 1\naction = { action = \"explode\" }\n",
            "t.toml",
        )
        .unwrap_err();
        assert!(err.contains("want one of"), "{err}");
    }
}
