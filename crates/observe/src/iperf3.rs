//! The iperf3 flavours: iperf3 as the tool under test, over UDP from the
//! sender's namespace to the receiver's, plain or with its client under
//! `streamgauge wrap iperf3` reporting to the plan's collection server.
//! The runner's own counters are the two interfaces' (the sending veth's
//! tx_packets, the receiving one's rx_packets); iperf3's own figures come
//! from the client's JSON (the wrapper copies it through unchanged).

use std::io::Read;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::interrupt;
use crate::liboml2;
use crate::plan::Settings;
use crate::udp::{self, Counters, Env, Outcome};
use crate::veth::{self, Pair};

/// iperf3's port in the receiver's namespace (which has nothing else).
const PORT: u16 = 5201;

/// What iperf3 itself measured.
#[derive(Debug, Clone, Copy)]
pub struct Figures {
    /// Bits/s at the receiver (`end.sum_received.bits_per_second`).
    pub bps: f64,
    /// Lost fraction by iperf3's count (`end.sum.lost_percent` / 100).
    pub loss: f64,
}

/// How long iperf3 may take beyond its `-t` to connect, exchange results and exit.
const GRACE: Duration = Duration::from_secs(10);

/// One run: an iperf3 server for one test (`-s -1`) in the receiver's
/// namespace, the client in the sender's for `seconds` (whole seconds:
/// the plan checked), both interfaces sampled every `interval`.
pub fn run(
    s: &Settings,
    seconds: f64,
    interval: f64,
    env: &Env,
    net: &Pair,
    wrapped: bool,
) -> Result<Outcome> {
    let server_addr = veth::rx_socket(PORT);
    let mut server = Guard(
        net.rx
            .spawn(
                Command::new("iperf3")
                    .args(["-s", "-1", "-J", "-B"])
                    .arg(server_addr.ip().to_string())
                    .arg("-p")
                    .arg(PORT.to_string())
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null()),
            )
            .context("starting iperf3 -s (apt install iperf3)")?,
    );
    liboml2::wait_listening(&mut server.0, PORT, Duration::from_secs(10)).context("iperf3 -s")?;
    let tx_table = net.tx.dev_table()?;
    let tx0 = veth::tx_packets(&tx_table, veth::TX_IF)?;
    let rx_ns = net.rx.try_clone()?;
    let if_rx0 = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                rx_ns.enter()?;
                veth::rx_packets(veth::RX_IF)
            })
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })?;
    let mut client = Guard(
        net.tx
            .spawn(&mut client_command(s, seconds, server_addr, env, wrapped)?)
            .context("starting the iperf3 client")?,
    );
    let t0 = Instant::now();
    // The client's JSON is read while it runs (a full pipe would stall it).
    let mut stdout = client.0.stdout.take().context("iperf3's stdout")?;
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).map(|_| text)
    });
    let halt = AtomicBool::new(false);
    let sent = || {
        veth::tx_packets(&tx_table, veth::TX_IF)
            .map(|n| n - tx0)
            .unwrap_or(0)
    };
    let samples = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                rx_ns.enter()?;
                let counters = Counters {
                    received: &|| 0,
                    sent: &sent,
                    if_rx: &|| Ok(veth::rx_packets(veth::RX_IF)? - if_rx0),
                };
                udp::sample(t0, seconds, interval, &counters, &halt)
            })
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })?;
    let status = wait(&mut client.0, t0 + Duration::from_secs_f64(seconds) + GRACE)?;
    let json = reader
        .join()
        .map_err(|_| anyhow::anyhow!("the reader of iperf3's output panicked"))?
        .context("reading iperf3's output")?;
    if interrupt::interrupted() {
        bail!("interrupted");
    }
    let figures = figures(&json).with_context(|| {
        format!(
            "iperf3 client (exit {status}): {}",
            error_of(&json).unwrap_or_else(|| "no result in its JSON output".into())
        )
    })?;
    if !status.success() {
        bail!("the iperf3 client exited with {status}");
    }
    let _ = wait(&mut server.0, Instant::now() + GRACE);
    let last = samples.last().map_or(0, |x| x.sent);
    Ok(Outcome {
        sent: sent().max(last),
        received: 0,
        samples,
        reported: None,
        iperf3: Some(figures),
    })
}

/// The client's command line: UDP, `size`-byte datagrams at the set rate
/// (`-b` is per stream: an even share per `-P` stream), JSON output.
fn client_command(
    s: &Settings,
    seconds: f64,
    to: SocketAddr,
    env: &Env,
    wrapped: bool,
) -> Result<Command> {
    let per_stream_bps = s
        .rate
        .map_or(0, |r| r * s.size as u64 * 8 / s.threads as u64);
    let mut args: Vec<String> = vec![
        "-c".into(),
        to.ip().to_string(),
        "-p".into(),
        PORT.to_string(),
        "-u".into(),
        "-b".into(),
        per_stream_bps.to_string(),
        "-l".into(),
        s.size.to_string(),
        "-t".into(),
        (seconds as u64).to_string(),
        "-P".into(),
        s.threads.to_string(),
        "-J".into(),
    ];
    let mut cmd = if wrapped {
        let mut c = Command::new(env.streamgauge);
        c.args(["wrap", "iperf3"]);
        args.extend(
            [
                "--oml-collect",
                env.collector()?,
                "--oml-domain",
                &env.domain,
                "--oml-id",
                "client",
            ]
            .map(String::from),
        );
        c
    } else {
        Command::new("iperf3")
    };
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("OML_")) {
        cmd.env_remove(k);
    }
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    Ok(cmd)
}

/// Waits for `child` until `deadline`, then kills it.
fn wait(child: &mut Child, deadline: Instant) -> Result<std::process::ExitStatus> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if Instant::now() >= deadline || interrupt::interrupted() {
            let _ = child.kill();
            return Ok(child.wait()?);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// iperf3's figures from the client's JSON output.
fn figures(json: &str) -> Option<Figures> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let end = v.get("end")?;
    Some(Figures {
        bps: end.get("sum_received")?.get("bits_per_second")?.as_f64()?,
        loss: end.get("sum")?.get("lost_percent")?.as_f64()? / 100.0,
    })
}

fn error_of(json: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    Some(v.get("error")?.as_str()?.to_owned())
}

/// Kills the child on drop unless it has exited.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_come_from_the_end_section() {
        let json = r#"{"start":{},"intervals":[],"end":{
            "sum":{"bits_per_second":1000.0,"lost_percent":2.5,"sender":true},
            "sum_sent":{"bits_per_second":1000.0},
            "sum_received":{"bits_per_second":975.0}}}"#;
        let f = figures(json).unwrap();
        assert_eq!(f.bps, 975.0);
        assert_eq!(f.loss, 0.025);
        assert!(figures(r#"{"error":"unable to connect"}"#).is_none());
        assert_eq!(
            error_of(r#"{"error":"unable to connect"}"#).as_deref(),
            Some("unable to connect")
        );
    }
}
