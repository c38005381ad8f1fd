//! `streamgauge proxy ctl pause|resume|status`: talks to a running proxy's
//! HTTP control endpoint.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{bail, Context, Result};
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
}

/// Sends the request and prints the answer.
pub fn run(args: &CtlArgs) -> Result<bool> {
    let Some(addr) = super::parse_control(&args.control)? else {
        bail!("--control none: give the address the proxy's --control listens on");
    };
    let (method, path) = match args.action {
        Action::Pause => ("POST", "/pause"),
        Action::Resume => ("POST", "/resume"),
        Action::Status => ("GET", "/status"),
    };
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).with_context(|| {
        format!("no proxy control endpoint at {addr}: is `streamgauge proxy` running, and with --control {addr}?")
    })?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut text = String::new();
    s.read_to_string(&mut text)
        .with_context(|| format!("reading the answer of {addr}"))?;
    let (head, body) = text.split_once("\r\n\r\n").with_context(|| {
        format!("{addr} did not answer in HTTP: is it a streamgauge proxy control endpoint?")
    })?;
    let code = head.split(' ').nth(1).unwrap_or("");
    if code != "200" {
        bail!(
            "{addr} answered {}: {}",
            head.lines().next().unwrap_or(""),
            body.trim()
        );
    }
    print!("{body}");
    Ok(true)
}
