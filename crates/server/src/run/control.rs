//! What `streamgauge control` sends to a running server's HTTP endpoint:
//! the address it is given, and a control message (spec §3.7) built from
//! `KEY=VALUE` words.

use std::net::SocketAddr;

use serde_json::{Map, Value};

/// `--metrics`: ADDR:PORT, or a port on 127.0.0.1.
pub fn endpoint(s: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse().map_err(|e| {
        format!("--metrics {s:?}: want ADDR:PORT (e.g. 127.0.0.1:9100) or a port: {e}")
    })
}

/// Checks a domain or sender name for use in a `/control/{domain}/{sender}`
/// path.
pub fn check_name(what: &str, v: &str) -> Result<(), String> {
    if v.is_empty() || v.contains(['/', ' ', '?', '#']) {
        return Err(format!(
            "{what} {v:?}: want a non-empty name without '/', spaces, '?' or '#'"
        ));
    }
    Ok(())
}

/// The control message `{"action": ACTION, KEY: VALUE, …}`: numbers and
/// `true`/`false` become JSON numbers and booleans, anything else a string.
pub fn message(action: &str, args: &[String]) -> Result<Value, String> {
    let mut m = Map::new();
    m.insert("action".into(), Value::String(action.to_owned()));
    for a in args {
        let Some((k, v)) = a.split_once('=') else {
            return Err(format!(
                "argument {a:?}: want KEY=VALUE, e.g. stream=app_udp or samples=10"
            ));
        };
        if k.is_empty() || k == "action" {
            return Err(format!(
                "argument {a:?}: want KEY=VALUE with a key other than `action`"
            ));
        }
        let value = if let Ok(i) = v.parse::<i64>() {
            Value::from(i)
        } else if let Some(f) = v.parse::<f64>().ok().filter(|f| f.is_finite()) {
            Value::from(f)
        } else if let Ok(b) = v.parse::<bool>() {
            Value::Bool(b)
        } else {
            Value::String(v.to_owned())
        };
        if m.insert(k.to_owned(), value).is_some() {
            return Err(format!("argument {k:?} given twice"));
        }
    }
    Ok(Value::Object(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_become_typed_json() {
        let m = message(
            "set-filter",
            &[
                "stream=a_b".into(),
                "value=0.5".into(),
                "samples=10".into(),
                "on=true".into(),
                "filter=avg".into(),
            ],
        )
        .unwrap();
        assert_eq!(
            m.to_string(),
            r#"{"action":"set-filter","stream":"a_b","value":0.5,"samples":10,"on":true,"filter":"avg"}"#
        );
        assert!(message("pause", &["x".into()]).is_err());
        assert!(message("pause", &["action=x".into()]).is_err());
        assert!(message("pause", &["a=1".into(), "a=2".into()]).is_err());
        assert_eq!(endpoint("9100").unwrap().to_string(), "127.0.0.1:9100");
        assert!(endpoint("nowhere").is_err());
        assert!(check_name("domain", "a/b").is_err());
    }
}
