//! `streamgauge control status|send`: steer the senders of a running
//! `streamgauge server` by hand (feedback, spec §3.7), through the server's
//! `--metrics` HTTP endpoint (`GET /feedback`, `POST /control/…`).

use ::server::run::control;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};

pub const LONG_ABOUT: &str = include_str!("../help/control.txt");

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

/// Sends the request and prints the answer.
pub fn run(args: &ControlArgs) -> Result<bool> {
    let addr = control::endpoint(&args.metrics).map_err(anyhow::Error::msg)?;
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
            control::check_name("domain", domain).map_err(anyhow::Error::msg)?;
            control::check_name("sender", sender).map_err(anyhow::Error::msg)?;
            let msg = control::message(action, args).map_err(anyhow::Error::msg)?;
            let answer = client.post_json(&format!("/control/{domain}/{sender}"), &msg)?;
            let ids: serde_json::Value = serde_json::from_str(answer.trim())
                .with_context(|| format!("{addr} answered {answer:?}, not JSON"))?;
            println!("sent {msg} to {domain}/{sender}: ids {}", ids["ids"]);
        }
    }
    Ok(true)
}
