//! `streamgauge proxy ctl pause|resume|status`: talks to a running proxy's
//! HTTP control endpoint.

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};

/// What to ask the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Action {
    /// Stop forwarding (clients are still accepted and journaled).
    Pause,
    /// Forward again.
    Resume,
    /// Print the proxy's state as JSON (sessions, journal bytes, acknowledged offsets, upstream state).
    Status,
}

/// Arguments of `streamgauge proxy ctl`.
#[derive(Debug, Args)]
pub struct CtlArgs {
    /// pause (stop forwarding; clients are still journaled), resume, or
    /// status (JSON: streams, journal bytes, acknowledged offsets, upstream state).
    #[arg(value_name = "ACTION")]
    pub action: Action,
    /// The proxy's control endpoint (its --control), ADDR:PORT or a port on 127.0.0.1.
    #[arg(
        short = 'c',
        long,
        value_name = "ADDR",
        default_value = "127.0.0.1:3004"
    )]
    pub control: String,
    /// Bearer token (read scope for status, control scope for pause/resume) when the proxy has an --auth-file.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "STREAMGAUGE_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
}

/// Sends the request and prints the answer.
pub fn run(args: &CtlArgs) -> Result<bool> {
    let Some(addr) = ::proxy::run::parse_control(&args.control).map_err(anyhow::Error::msg)? else {
        bail!("--control none: give the address the proxy's --control listens on");
    };
    let client = httpkit::client::Client::new(
        &addr.to_string(),
        "proxy control endpoint",
        &format!("is `streamgauge proxy` running, and with --control {addr}?"),
    )
    .with_token(args.token.clone());
    let body = match args.action {
        Action::Pause => client.post_json("/pause", &serde_json::json!({}))?,
        Action::Resume => client.post_json("/resume", &serde_json::json!({}))?,
        Action::Status => client.get("/status")?,
    };
    print!("{body}");
    if !body.ends_with('\n') {
        println!();
    }
    Ok(true)
}
