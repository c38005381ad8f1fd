//! In-line measurement agents (`streamgauge inline source|sink --control`,
//! spec/inline-control.md), driven through their control API with the
//! project's blocking client.
//!
//! A run on an agent does not create anything there: `start` applies the
//! configuration's settings and enables instrumentation, `pause`/`resume`
//! switch it off and on, `stop` switches it off. The agent stays attached
//! between runs, as a capture daemon stays up between sessions.

use httpkit::client::Client;
use serde_json::{json, Value};

use super::{json, DeviceError};

/// The run state an agent's answer means: `running` while it instruments,
/// else `paused` (`stopped` for the stop action, which leaves it paused).
fn state_after(answer: &Value, stopping: bool) -> &'static str {
    match (answer["enabled"].as_str(), answer["state"].as_str()) {
        (Some("true"), _) | (_, Some("running")) if !stopping => "running",
        (Some("false"), _) | (_, Some("paused")) => {
            if stopping {
                "stopped"
            } else {
                "paused"
            }
        }
        _ => "failed",
    }
}

/// `PATCH /api/v1/settings` with `settings` and `enabled=true`: the
/// agent instruments with them from its next packet.
pub fn start(client: &Client, settings: &Value) -> Result<Value, DeviceError> {
    let mut body = settings.clone();
    if let Some(o) = body.as_object_mut() {
        o.insert("enabled".into(), Value::Bool(true));
    }
    let answer = json(&client.patch("/api/v1/settings", &body.to_string())?)?;
    Ok(json!({"state": state_after(&answer, false), "reason": null}))
}

/// `POST /api/v1/pause|resume` for the run actions `pause`, `resume`, `stop`.
pub fn action(client: &Client, action: &str) -> Result<Value, DeviceError> {
    let path = if action == "resume" {
        "/api/v1/resume"
    } else {
        "/api/v1/pause"
    };
    let answer = json(&client.post(path, "{}")?)?;
    Ok(json!({"state": state_after(&answer, action == "stop"), "reason": null}))
}

/// `GET /api/v1/status`.
pub fn status(client: &Client) -> Result<Value, DeviceError> {
    json(&client.get("/api/v1/status")?)
}

/// The agent as the one "session" of a monitoring snapshot, so the
/// monitor treats it as it treats capture sessions: its state, its
/// counters, and drops in the names the `dropping` alert reads (records
/// lost in the sink's ring buffer are `dropped_kernel`, rows the client
/// library refused are `dropped_by_us`).
pub fn as_session(status: &Value) -> Value {
    let mut counters = status["counters"].clone();
    if let Some(c) = counters.as_object_mut() {
        c.insert(
            "dropped_kernel".into(),
            json!(status["counters"]["ring_drops"].as_u64().unwrap_or(0)),
        );
        c.insert(
            "dropped_by_us".into(),
            json!(status["agent"]["inject_errors"].as_u64().unwrap_or(0)),
        );
        c.insert(
            "records_read".into(),
            json!(status["agent"]["records_read"].as_u64().unwrap_or(0)),
        );
    }
    json!([{
        "id": format!("{}-{}", status["role"].as_str().unwrap_or("agent"),
                      status["interface"].as_str().unwrap_or("")),
        "experiment": null,
        "state": status["state"],
        "counters": counters,
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_and_sessions() {
        assert_eq!(state_after(&json!({"enabled": "true"}), false), "running");
        assert_eq!(state_after(&json!({"state": "paused"}), false), "paused");
        assert_eq!(state_after(&json!({"state": "paused"}), true), "stopped");
        assert_eq!(state_after(&json!({}), false), "failed");
        let s = as_session(
            &json!({"role": "sink", "interface": "eth0", "state": "running",
            "counters": {"records": 5, "ring_drops": 2}, "agent": {"inject_errors": 1, "records_read": 5}}),
        );
        assert_eq!(s[0]["id"], "sink-eth0");
        assert_eq!(s[0]["counters"]["dropped_kernel"], 2);
        assert_eq!(s[0]["counters"]["dropped_by_us"], 1);
        assert_eq!(s[0]["counters"]["records"], 5);
    }
}
