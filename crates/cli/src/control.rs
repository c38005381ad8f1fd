//! `streamgauge control status|send`: steer the senders of a running
//! `streamgauge server` by hand (feedback, spec §3.7), through the server's
//! `--metrics` HTTP endpoint (`GET /feedback`, `POST /control/…`).

use std::net::SocketAddr;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use serde_json::{Map, Value};

pub const LONG_ABOUT: &str = "\
Steer senders by hand. A running `streamgauge server --metrics ADDR` keeps
the senders that accept control messages (clients started with
--oml-backchannel feedback, and proxies relaying for them); `status` lists
them with the feedback rules, `send` sends one control message to one
sender. The sender applies it between two samples and stores its answer
(`<id> ok` or `<id> error <reason>`) as metadata under the key
`streamgauge_control`. Actions (spec §3.7): set-samples stream= samples=,
set-interval stream= interval=, enable stream=, disable stream=,
set-filter stream= filter= property= value=, pause, resume.

Examples:
  streamgauge control status
  streamgauge control send exp1 node1 set-samples stream=app_udp samples=10
  streamgauge control send exp1 node1 pause

Bind --metrics to loopback: whoever reaches it can steer senders.";

/// Arguments of `streamgauge control`.
#[derive(Debug, Args)]
pub struct ControlArgs {
    /// The server's --metrics address, ADDR:PORT or a port on 127.0.0.1.
    #[arg(
        short = 'm',
        long,
        value_name = "ADDR",
        default_value = "127.0.0.1:9100",
        global = true
    )]
    metrics: String,
    /// Bearer token with the control scope (needed when the server has an --auth-file).
    #[arg(
        long,
        value_name = "TOKEN",
        env = "STREAMGAUGE_TOKEN",
        hide_env_values = true,
        global = true
    )]
    token: Option<String>,
    #[command(subcommand)]
    command: ControlCommand,
}

#[derive(Debug, Subcommand)]
enum ControlCommand {
    /// Print the senders that accept control messages and the feedback rules (JSON).
    Status,
    /// Send one control message to one sender; prints the message's id.
    Send {
        /// The sender's domain (experiment id).
        domain: String,
        /// The sender's id (--oml-id).
        sender: String,
        /// set-samples, set-interval, enable, disable, set-filter, pause or resume.
        action: String,
        /// The action's arguments as KEY=VALUE (numbers and true/false are
        /// sent as JSON numbers and booleans), e.g. stream=app_udp samples=10.
        #[arg(value_name = "KEY=VALUE")]
        args: Vec<String>,
    },
}

fn metrics_addr(s: &str) -> Result<SocketAddr> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse()
        .with_context(|| format!("--metrics {s:?}: want ADDR:PORT (e.g. 127.0.0.1:9100) or a port"))
}

/// The control message: `{"action": ACTION, KEY: VALUE, …}`.
fn message(action: &str, args: &[String]) -> Result<Value> {
    let mut m = Map::new();
    m.insert("action".into(), Value::String(action.to_owned()));
    for a in args {
        let Some((k, v)) = a.split_once('=') else {
            bail!("argument {a:?}: want KEY=VALUE, e.g. stream=app_udp or samples=10");
        };
        if k.is_empty() || k == "action" {
            bail!("argument {a:?}: want KEY=VALUE with a key other than `action`");
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
            bail!("argument {k:?} given twice");
        }
    }
    Ok(Value::Object(m))
}

/// Sends the request and prints the answer.
pub fn run(args: &ControlArgs) -> Result<bool> {
    let addr = metrics_addr(&args.metrics)?;
    let hint = format!("is `streamgauge server` running, and with --metrics or --http {addr}?");
    let client = httpkit::client::Client::new(&addr.to_string(), "server HTTP endpoint", &hint)
        .with_token(args.token.clone());
    match &args.command {
        ControlCommand::Status => {
            println!("{}", client.get("/feedback")?.trim_end());
        }
        ControlCommand::Send {
            domain,
            sender,
            action,
            args,
        } => {
            for (name, v) in [("domain", domain), ("sender", sender)] {
                if v.is_empty() || v.contains(['/', ' ', '?', '#']) {
                    bail!("{name} {v:?}: want a non-empty name without '/', spaces, '?' or '#'");
                }
            }
            let msg = message(action, args)?;
            let path = format!("/control/{domain}/{sender}");
            let answer = client.post_json(&path, &msg)?;
            let ids: Value = serde_json::from_str(answer.trim())
                .with_context(|| format!("{addr} answered {answer:?}, not JSON"))?;
            println!("sent {msg} to {domain}/{sender}: ids {}", ids["ids"]);
        }
    }
    Ok(true)
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
        assert_eq!(metrics_addr("9100").unwrap().to_string(), "127.0.0.1:9100");
        assert!(metrics_addr("nowhere").is_err());
    }
}
